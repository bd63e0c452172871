//! Third-party authoring (issue 8): the example modules build outside the workspace against
//! `allocator-api` by path, load with `--modules`, and pass their scenarios.

use std::path::{Path, PathBuf};
use std::process::Command;

use workspace_tests::{run_master, target_dir, workspace_root};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// Copies `examples/<folder>` out of the workspace, points its `allocator-api` dependency at
/// this checkout, builds it on its own and returns the built library.
fn build_out_of_tree(folder: &str, lib: &str) -> PathBuf {
    let root = workspace_root();
    // Outside the workspace's folder, as a third party's checkout would be.
    let dir = std::env::temp_dir()
        .join(format!("allocator-authoring-{}", std::process::id()))
        .join(folder);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&root.join("examples").join(folder), &dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(
        text.contains(r#"path = "../../allocator-api""#),
        "the example depends on allocator-api by path"
    );
    // Every path dependency (allocator-api; for tests, allocator-host and the conformance
    // suite) points at this checkout.
    let patched = text.replace("../../", &format!("{}/", root.display()));
    std::fs::write(&manifest, patched).unwrap();
    // Same dependency versions as the workspace, so the build needs no network.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let status = Command::new(env!("CARGO"))
        .args(["build", "--offline", "--quiet", "--lib"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target_dir().join("out-of-tree-target"))
        .status()
        .unwrap();
    assert!(status.success(), "building {folder} outside the workspace failed");
    let file = format!("{}{lib}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    target_dir().join("out-of-tree-target/debug").join(file)
}

/// The example's own `modules.json` entry for `module` (with its parameters), pointed at the
/// out-of-tree build.
fn manifest(library: &Path, folder: &str, module: &str) -> String {
    let text = std::fs::read_to_string(
        workspace_root().join("examples").join(folder).join("modules.json"),
    )
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entry = doc["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["modules"].as_array().unwrap().iter())
        .find(|m| m["name"] == module)
        .unwrap()
        .clone();
    serde_json::json!({"libraries": [{"file": library.display().to_string(), "modules": [entry]}]})
        .to_string()
}

/// Every scenario in `folder` passes with manifest `m`.
fn assert_example_scenarios_pass(folder: &str, m: &str) {
    for path in workspace_tests::json_files(folder) {
        let out = run_master(&[
            "--modules",
            m,
            "--scenario",
            path.to_str().unwrap(),
            "--output",
            "/dev/null",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_example_allocator_builds_out_of_tree_loads_and_passes_its_scenarios() {
    let lib = build_out_of_tree("custom-allocator", "binpack_allocator");
    assert!(lib.exists(), "{}", lib.display());
    let m = manifest(&lib, "custom-allocator", "binpack");
    let out = run_master(&["--modules", &m, "--list-modules"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("binpack "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_example_scenarios_pass("examples/custom-allocator/scenarios", &m);
}

#[test]
fn the_example_sorter_builds_out_of_tree_loads_and_passes_its_scenarios() {
    let lib = build_out_of_tree("custom-sorter", "lro_sorter");
    let m = manifest(&lib, "custom-sorter", "least_recently_offered");
    assert_example_scenarios_pass("examples/custom-sorter/scenarios", &m);
    // And it drives the built-in allocator as its role and framework sorter.
    let out = run_master(&[
        "--modules",
        &m,
        "--role_sorter",
        "least_recently_offered",
        "--framework_sorter",
        "least_recently_offered",
        "--scenario",
        "examples/scenarios/drf_paper.json",
        "--output",
        "/dev/null",
    ]);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The copy step of `examples/module-template/README.md`, done as an author would: copy the
/// folder out of the checkout, rename the package, point both paths at the checkout.
#[test]
fn the_module_template_copied_out_of_tree_runs_conformance_in_its_cargo_test() {
    let root = workspace_root();
    let dir = std::env::temp_dir()
        .join(format!("allocator-template-{}", std::process::id()))
        .join("my_module");
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&root.join("examples/module-template"), &dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let patched = text
        .replace(r#"name = "module-template""#, r#"name = "my_module""#)
        .replace("../../", &format!("{}/", root.display()));
    assert_eq!(patched.matches(&root.display().to_string()).count(), 3, "{patched}");
    std::fs::write(&manifest, patched).unwrap();
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let out = Command::new(env!("CARGO"))
        .args(["test", "--offline", "--quiet", "--", "--nocapture"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target_dir().join("out-of-tree-target"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo test of the copied template failed:\n{text}");
    for subject in ["allocator 'template_first_fit'", "sorter 'template_fifo'"] {
        assert!(text.contains(&format!("conformance of {subject}:")), "{text}");
    }
    assert!(!text.contains("FAIL"), "{text}");
    // The template takes on no optional feature but operations: it refuses quotas (the trait's
    // default), sends no inverse offers and ignores requests; every other check applies.
    let skipped: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("SKIP  "))
        .map(|l| l.split(':').next().unwrap_or(l))
        .collect();
    assert_eq!(
        skipped,
        [
            "inverse offers respect their filters",
            "respects the quota limits it accepts",
            "holds back the quota guarantees it accepts",
            "places no more tasks than a request asks, each as asked",
            "places no more on an agent than it has",
            "offers a gang whole in one run or not at all",
            "never places a withdrawn request",
            "keeps requests across deactivate and reactivate",
            "keeps requests across suppress and revive",
            "places a request under its role",
            "honours request constraints"
        ],
        "{text}"
    );
}

fn conformance(args: &[&str]) -> (i32, String) {
    let mut all = vec!["conformance"];
    all.extend_from_slice(args);
    let out = run_master(&all);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_builtin_allocator_passes_conformance() {
    let (code, text) = conformance(&["--allocator", "hierarchical"]);
    assert_eq!(code, 0, "{text}");
    // It ignores requests, as Mesos's does: the eight request checks are skipped.
    assert!(text.contains("23 passed, 0 failed, 8 skipped"), "{text}");
    assert!(
        text.contains("SKIP  offers a gang whole in one run or not at all: it ignores requests, as the built-in does"),
        "{text}"
    );
}

/// A module that offers a framework at most one agent per allocation run (a valid policy:
/// `tests/fixtures/capping_module`) passes every check that applies to it. The checks judge
/// what it offered, not what an allocator offering every free agent would have (issue 45); it
/// skips what the template skips, and the request checks, as it ignores requests.
#[test]
fn a_module_capping_offers_per_framework_per_run_passes_conformance() {
    use allocator_api::{
        AgentCapabilities, AgentId, AgentInfo, AllocatorOptions, FrameworkCapabilities,
        FrameworkId, FrameworkInfo, FrameworkOptions, OfferBatch,
    };
    let manifest = workspace_tests::manifest_for("capping_module", &["capping_first_fit"]);
    // It does cap: one framework, two free agents, one offer per run.
    let mut registry = allocator_host::ModuleRegistry::new();
    registry.load_flags(Some(&manifest), None).unwrap();
    let mut allocator = registry
        .create_allocator_module("capping_first_fit", &AllocatorOptions::default())
        .unwrap();
    let info = FrameworkInfo {
        id: FrameworkId(1),
        name: "f1".into(),
        roles: vec!["r1".into()].into(),
        capabilities: FrameworkCapabilities::MULTI_ROLE,
    };
    allocator.add_framework(&info, &[], true, &FrameworkOptions::default()).unwrap();
    for id in [0, 1] {
        let agent = AgentInfo {
            id: AgentId(id),
            name: format!("a{id}").into(),
            hostname: format!("a{id}").into(),
            attributes: Default::default(),
            capabilities: AgentCapabilities::all(),
        };
        let total = "cpus:2;mem:1024".parse().unwrap();
        allocator.add_agent(&agent, None, &total, &[]).unwrap();
    }
    for expected in [AgentId(0), AgentId(1)] {
        let mut batch = OfferBatch::default();
        allocator.allocate(&[AgentId(0), AgentId(1)], false, &mut batch).unwrap();
        let agents: Vec<AgentId> = batch.offers.iter().map(|o| o.agent).collect();
        assert_eq!(agents, [expected], "one agent per framework per run");
    }
    let (code, text) = conformance(&["--modules", &manifest, "--allocator", "capping_first_fit"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("\n20 passed, 0 failed, 11 skipped\n"), "{text}");
}

#[test]
fn the_example_allocator_passes_conformance() {
    let (code, text) = conformance(&[
        "--modules",
        "examples/custom-allocator/modules.json",
        "--allocator",
        "binpack",
    ]);
    assert_eq!(code, 0, "{text}");
    for check in [
        "never offers more than an agent has",
        "respects refuse filters",
        "stays deterministic under a seed",
    ] {
        assert!(text.contains(&format!("PASS  {check}")), "{text}");
    }
}

/// The authoring guide calls its 28-line module a sketch and lists the checks its allocator
/// fails: the list is exactly what conformance reports.
#[test]
fn the_guide_sketch_fails_exactly_the_conformance_checks_the_guide_lists() {
    let m = workspace_tests::manifest_for("minimal_module", &["first_fit"]);
    let (code, text) = conformance(&["--modules", &m, "--allocator", "first_fit"]);
    assert_eq!(code, 1, "{text}");
    let failed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("FAIL  "))
        .map(|l| l.split(':').next().unwrap_or(l))
        .collect();
    let readme = std::fs::read_to_string(workspace_root().join("docs/authoring.md")).unwrap();
    let section = &readme[readme.find("**The shape of a module").expect("the sketch section")..];
    let section = &section[..section.find("```rust").expect("the sketch's code")];
    let listed: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("* *"))
        .map(|l| l.split("* — ").next().unwrap_or(l))
        .collect();
    assert_eq!(failed, listed, "conformance output:\n{text}");
    let checks = text
        .lines()
        .filter(|l| l.trim_start().starts_with("PASS") || l.trim_start().starts_with("FAIL"))
        .count();
    assert!(
        section.contains(&format!(
            "passes {} of the {checks} allocator checks and fails these {}",
            checks - failed.len(),
            failed.len()
        )),
        "{section}"
    );
    let skipped = text.lines().filter(|l| l.trim_start().starts_with("SKIP")).count();
    let prose = section.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        prose.contains(&format!("({skipped} more of the {} are skipped", checks + skipped)),
        "{section}"
    );
}

#[test]
fn a_broken_allocator_fails_conformance_with_reasons() {
    let m = serde_json::json!({"libraries": [{"file": workspace_tests::library("faulty_modules").display().to_string(),
        "modules": [{"name": "faulty_allocator", "parameters": [{"key": "overallocate", "value": "true"}]}]}]})
    .to_string();
    let (code, text) = conformance(&["--modules", &m, "--allocator", "faulty_allocator"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("FAIL  never offers more than an agent has: the offer guard had to drop"),
        "{text}"
    );
    assert!(text.contains("FAIL  respects refuse filters"), "{text}");
}

#[test]
fn every_shipped_sorter_and_the_example_sorter_pass_conformance() {
    for sorter in ["drf", "weighted_priority", "random", "drf_decay"] {
        let (code, text) = conformance(&["--modules", "examples/modules.json", "--sorter", sorter]);
        assert_eq!(code, 0, "{sorter}: {text}");
    }
    let (code, text) = conformance(&[
        "--modules",
        "examples/custom-sorter/modules.json",
        "--sorter",
        "least_recently_offered",
    ]);
    assert_eq!(code, 0, "{text}");
}

/// The fenced code blocks of `text`, in order, as (info string, body).
fn code_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((info.to_owned(), body.join("\n") + "\n"));
        }
    }
    blocks
}

/// Step 5 of `docs/authoring.md` shows the files of `examples/placement-policy`, which the
/// workspace builds and tests (its `cargo test` runs conformance): the guide's copies are the
/// crate's files, with the checkout's path as a placeholder.
#[test]
fn the_worked_example_in_the_guide_is_the_crate_the_workspace_tests() {
    let root = workspace_root();
    let guide = std::fs::read_to_string(root.join("docs/authoring.md")).unwrap();
    let start = guide.find("## 5. A worked example").expect("step 5");
    let section = &guide[start..start + guide[start..].find("## 6. A worked example").unwrap()];
    let blocks = code_blocks(section);
    let of = |lang: &str| -> Vec<&String> {
        blocks.iter().filter(|(info, _)| info == lang).map(|(_, body)| body).collect()
    };
    let file = |path: &str| {
        std::fs::read_to_string(root.join("examples/placement-policy").join(path)).unwrap()
    };
    let cargo = file("Cargo.toml").replace("../../", "/path/to/allocator/");
    assert_eq!(of("toml"), [&cargo], "Cargo.toml");
    assert_eq!(of("rust"), [&file("src/lib.rs"), &file("tests/conformance.rs")]);
}

/// Step 6 of `docs/authoring.md` shows the files of `examples/gang-policy`, which the
/// workspace builds and tests: the guide's copies are the crate's files.
#[test]
fn the_worked_gang_example_in_the_guide_is_the_crate_the_workspace_tests() {
    let root = workspace_root();
    let guide = std::fs::read_to_string(root.join("docs/authoring.md")).unwrap();
    let start = guide.find("## 6. A worked example").expect("step 6");
    let section = &guide[start..start + guide[start..].find("## The contract").unwrap()];
    let blocks = code_blocks(section);
    let of = |lang: &str| -> Vec<&String> {
        blocks.iter().filter(|(info, _)| info == lang).map(|(_, body)| body).collect()
    };
    let file =
        |path: &str| std::fs::read_to_string(root.join("examples/gang-policy").join(path)).unwrap();
    let cargo = file("Cargo.toml").replace("../../", "/path/to/allocator/");
    assert_eq!(of("toml"), [&cargo], "Cargo.toml");
    assert_eq!(of("rust"), [&file("src/lib.rs"), &file("tests/conformance.rs")]);
}

/// `allocator-api` and the conformance suite are published-ready: `cargo package` makes their
/// crates (with the two the suite depends on through `allocator-host`). Offline and without the
/// verifying build, which `cargo package` without `--no-verify` adds (about 45 s).
#[test]
fn allocator_api_and_the_conformance_suite_package() {
    let target = target_dir().join("package-check");
    let packages =
        ["allocator-api", "sorter-core", "drf_sorter", "allocator-host", "allocator-conformance"];
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["package", "--offline", "--no-verify", "--allow-dirty", "--quiet"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    let out = cmd.current_dir(workspace_root()).env("CARGO_TARGET_DIR", &target).output().unwrap();
    assert!(
        out.status.success(),
        "cargo package failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in packages {
        let krate = target.join("package").join(format!("{p}-0.1.0.crate"));
        assert!(krate.exists(), "{} was not written", krate.display());
    }
}

/// The repository is self-contained: `docs/spec.md` is the product contract, and where the
/// shared copy it came from is beside the checkout, they are the same text.
#[test]
fn the_spec_in_the_repository_is_the_shared_one() {
    let root = workspace_root();
    let ours = std::fs::read_to_string(root.join("docs/spec.md")).unwrap();
    assert!(ours.starts_with("# Product contract"), "docs/spec.md is the contract");
    if let Ok(shared) = std::fs::read_to_string(root.join("../shared/SPEC.md")) {
        assert_eq!(ours, shared, "docs/spec.md differs from ../shared/SPEC.md: copy it again");
    }
}

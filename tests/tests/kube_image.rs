//! `deploy/Containerfile` and `deploy/kubernetes/` agree: the images the Deployment runs are
//! the Containerfile's targets, tagged with the workspace's version; the Containerfile copies
//! only paths that exist and every workspace member cargo needs; the modules the ConfigMap's
//! manifest names are among those the image builds. (Building the image needs a container
//! engine, which the test machine may lack; these checks need none.)

use serde_json::Value;
use workspace_tests::workspace_root;

fn read(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn containerfile() -> String {
    read("deploy/Containerfile")
}

fn deployment() -> Value {
    serde_json::from_str(&read("deploy/kubernetes/06-deployment.json")).expect("JSON")
}

/// The image each target is built as, from the build commands the Containerfile states
/// (`docker build -f deploy/Containerfile --target T -t IMAGE .`).
fn built_images() -> Vec<(String, String)> {
    containerfile()
        .lines()
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix("docker build "))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let after = |flag: &str| {
                words.iter().position(|w| *w == flag).and_then(|i| words.get(i + 1)).copied()
            };
            Some((after("--target")?.to_owned(), after("-t")?.to_owned()))
        })
        .collect()
}

fn image_of_target(target: &str) -> String {
    let images = built_images();
    let found = images.iter().find(|(t, _)| t == target);
    found.unwrap_or_else(|| panic!("no build command for target {target}: {images:?}")).1.clone()
}

fn workspace_version() -> String {
    let cargo = read("Cargo.toml");
    let line = cargo.lines().find(|l| l.starts_with("version = ")).expect("a workspace version");
    line.trim_start_matches("version = ").trim_matches('"').to_owned()
}

/// The workspace's members, from the root Cargo.toml's `members = [...]`.
fn members() -> Vec<String> {
    let cargo = read("Cargo.toml");
    let start = cargo.find("members = [").expect("members");
    let list = &cargo[start..cargo[start..].find(']').map(|e| start + e).expect("the list's end")];
    list.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn the_deployments_scheduler_image_is_the_containerfiles_scheduler_target() {
    let d = deployment();
    let image = d["spec"]["template"]["spec"]["containers"][0]["image"].as_str().expect("image");
    assert_eq!(image, image_of_target("scheduler"));
}

#[test]
fn the_deployments_modules_image_is_the_containerfiles_modules_target() {
    let d = deployment();
    let init = &d["spec"]["template"]["spec"]["initContainers"][0];
    assert_eq!(init["image"].as_str().expect("image"), image_of_target("modules"));
}

#[test]
fn every_target_built_is_a_stage_of_the_containerfile() {
    let text = containerfile();
    for (target, _) in built_images() {
        let stage = format!(" AS {target}");
        assert!(
            text.lines().any(|l| l.starts_with("FROM ") && l.ends_with(&stage)),
            "no stage {target}"
        );
    }
}

#[test]
fn the_images_are_tagged_with_the_workspace_version() {
    let version = workspace_version();
    for (target, image) in built_images() {
        assert!(image.ends_with(&format!(":{version}")), "{target}: {image} is not {version}");
    }
    let label = format!("org.opencontainers.image.version=\"{version}\"");
    assert!(containerfile().contains(&label), "the label says {version}");
}

#[test]
fn the_containerfile_copies_only_paths_that_exist() {
    for line in containerfile().lines().filter(|l| l.starts_with("COPY ")) {
        if line.contains("--from=") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().skip(1).collect();
        for source in &words[..words.len() - 1] {
            assert!(workspace_root().join(source).exists(), "{line}: no {source}");
        }
    }
}

#[test]
fn the_containerfile_copies_every_workspace_member() {
    let copied: Vec<String> = containerfile()
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from="))
        .flat_map(|l| {
            let words: Vec<String> = l.split_whitespace().skip(1).map(str::to_owned).collect();
            words[..words.len() - 1].to_vec()
        })
        .collect();
    for member in members() {
        assert!(
            copied.iter().any(|c| member == *c || member.starts_with(&format!("{c}/"))),
            "cargo needs {member} in the build, the Containerfile does not copy it"
        );
    }
}

#[test]
fn the_modules_the_configmap_names_are_shipped_modules_in_the_image() {
    let cm: Value =
        serde_json::from_str(&read("deploy/kubernetes/05-configmap.json")).expect("JSON");
    let manifest: Value =
        serde_json::from_str(cm["data"]["modules.json"].as_str().expect("modules.json"))
            .expect("a JSON manifest");
    let cargo = read("Cargo.toml");
    let defaults = &cargo[cargo.find("default-members").expect("default members")..];
    for library in manifest["libraries"].as_array().expect("libraries") {
        let file = library["file"].as_str().expect("a file");
        let name = file
            .strip_prefix("/opt/allocator/modules/lib")
            .and_then(|f| f.strip_suffix(".so"))
            .unwrap_or_else(|| panic!("{file} is not a module the image holds"));
        let crate_dir = format!("plugins/{name}");
        assert!(defaults.contains(&format!("\"{crate_dir}\"")), "{name} is not built by default");
        assert!(read(&format!("{crate_dir}/Cargo.toml")).contains("cdylib"), "{name}: no cdylib");
    }
}

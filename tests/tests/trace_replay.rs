//! Replaying the real Alibaba GPU trace (issue 11): import a slice, run it with each sorter
//! loaded from its `.so`, and check conservation and plausible outcomes.

use allocator_api::AllocatorOptions;
use allocator_host::ModuleRegistry;
use allocator_host::manifest;
use allocator_host::master::Setup;
use allocator_lab::import::{ImportOptions, alibaba_gpu_v2023};
use allocator_sim::allocator_scenario::AllocatorScenario;
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;
use workspace_tests::workspace_root;

fn trace_dir() -> std::path::PathBuf {
    workspace_root().join("data/alibaba-gpu-v2023")
}

fn imported_slice() -> AllocatorScenario {
    let dir = trace_dir();
    let imported = alibaba_gpu_v2023(
        &dir.join("openb_node_list_all_node.csv"),
        &dir.join("openb_pod_list_default.csv"),
        &ImportOptions { time_scale: 20_000.0, limit: Some(300), ..Default::default() },
    )
    .unwrap();
    assert_eq!(imported.nodes, 1523);
    assert_eq!(imported.pods, 300);
    assert!(imported.bad_rows.is_empty(), "{:?}", imported.bad_rows);
    let serde_json::Value::Object(root) = imported.scenario else { panic!("object") };
    AllocatorScenario::parse(&Document { file: "trace".into(), root }).unwrap()
}

fn registry() -> ModuleRegistry {
    let mut r = ModuleRegistry::new();
    let (m, source) = manifest::from_file(&workspace_root().join("examples/modules.json")).unwrap();
    workspace_tests::ensure_built();
    r.load_manifest(&m, &source).unwrap();
    r
}

#[test]
fn the_trace_replays_with_every_sorter_without_over_committing_an_agent() {
    let scenario = imported_slice();
    let registry = registry();
    for sorter in ["drf", "weighted_priority", "random", "drf_decay"] {
        let setup = Setup {
            allocator: "hierarchical".into(),
            role_sorter: sorter.into(),
            framework_sorter: sorter.into(),
            options: AllocatorOptions::default(),
            on_module_failure: Default::default(),
            call_budget_ms: None,
            call_timeout_ms: None,
            allocator_parameters: Vec::new(),
        };
        let mut driver = Driver::new(&registry, setup, "trace").unwrap();
        let mut out = EventStream::sink();
        for (i, (location, op)) in scenario.events.iter().enumerate() {
            driver.apply(i, op, &mut out).unwrap_or_else(|e| panic!("{sorter}: {location}: {e}"));
            if i % 25 == 0 {
                driver
                    .master()
                    .check_conservation()
                    .unwrap_or_else(|e| panic!("{sorter}: {location}: {e}"));
            }
        }
        driver.master().check_conservation().unwrap();
        // Every task that started has finished by the end (the importer advances past the last
        // deletion), and every pod was submitted.
        for fw in ["ls-pods", "be-pods"] {
            assert_eq!(
                driver.master().running_tasks(fw),
                Some(0),
                "{sorter}: {fw} still runs tasks"
            );
        }
        let summary = driver
            .run(&AllocatorScenario { events: vec![], ..scenario.clone() }, &mut out)
            .unwrap()
            .summary_json;
        let roles = summary["roles"].as_object().unwrap();
        let submitted: u64 =
            roles.values().map(|r| r["tasks_submitted"].as_u64().unwrap_or(0)).sum();
        let started: u64 = roles.values().map(|r| r["tasks_started"].as_u64().unwrap_or(0)).sum();
        let pending: u64 = roles.values().map(|r| r["tasks_pending"].as_u64().unwrap_or(0)).sum();
        assert_eq!(submitted, 300, "{sorter}");
        assert_eq!(started + pending, submitted, "{sorter}");
        assert!(
            started >= 290,
            "{sorter}: a mostly idle 1,523-node cluster starts nearly every pod, started {started}"
        );
    }
}

#[test]
fn the_import_command_writes_a_scenario_and_reports_skipped_rows() {
    let dir = workspace_tests::target_dir().join("trace-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let pods = dir.join("pods.csv");
    let header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";
    std::fs::write(
        &pods,
        format!(
            "{header}\np0,1000,1024,0,0,,LS,Running,0,10,0\np1,oops,1,0,0,,BE,Running,0,10,0\n"
        ),
    )
    .unwrap();
    let nodes = trace_dir().join("openb_node_list_all_node.csv");
    let out = workspace_tests::run_master(&[
        "import",
        "alibaba-gpu-v2023",
        "--nodes",
        nodes.to_str().unwrap(),
        "--pods",
        pods.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pods.csv:3: skipped: cpu_milli 'oops' is not a number"), "{err}");
    let scenario: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = scenario["events"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["op"] == "add_agent").count(), 1523);
    assert_eq!(events.iter().filter(|e| e["op"] == "submit_task").count(), 1);
}

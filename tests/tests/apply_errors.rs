//! `Master::apply` tells a client why a command was not applied: the command's own fault
//! (`Invalid`), the allocator's refusal (`Refused`), or a master stopped by a module fault
//! (`Stopped`), each with a one-line message; nothing changes in any case.

use allocator_api::{Quantities, Quota};
use allocator_host::ModuleRegistry;
use allocator_host::manifest;
use allocator_host::master::{ApplyError, Command, FailurePolicy, Master, Setup};
use workspace_tests::library;

/// The faulty allocator fixture, with `parameters` (`fail_on_allocate`, …).
fn faulty(parameters: &[(&str, &str)]) -> ModuleRegistry {
    let params: Vec<String> =
        parameters.iter().map(|(k, v)| format!(r#"{{"key": "{k}", "value": "{v}"}}"#)).collect();
    let text = format!(
        r#"{{"libraries": [{{"file": {}, "modules": [{{"name": "faulty_allocator", "parameters": [{}]}}]}}]}}"#,
        serde_json::to_string(&library("faulty_modules").display().to_string()).unwrap(),
        params.join(", ")
    );
    let mut registry = ModuleRegistry::new();
    let (m, source) = manifest::from_flag(&text).unwrap();
    registry.load_manifest(&m, &source).unwrap_or_else(|e| panic!("{e}"));
    registry
}

fn setup(policy: FailurePolicy) -> Setup {
    Setup { allocator: "faulty_allocator".into(), on_module_failure: policy, ..Setup::default() }
}

#[test]
fn a_command_naming_what_the_master_does_not_know_is_invalid() {
    let registry = faulty(&[]);
    let mut m = Master::new(&registry, setup(FailurePolicy::Stop)).unwrap();
    let err = m.apply(&Command::RemoveAgent("ghost".into())).unwrap_err();
    assert!(matches!(&err, ApplyError::Invalid(msg) if msg.contains("ghost")), "{err:?}");
}

#[test]
fn a_call_the_module_does_not_implement_is_unsupported() {
    // The fixture keeps the trait's default, which refuses a non-empty quota as unsupported.
    let registry = faulty(&[]);
    let mut m = Master::new(&registry, setup(FailurePolicy::Stop)).unwrap();
    let quota = Quota { guarantees: Quantities::parse("cpus:1").unwrap(), ..Quota::default() };
    let err = m.apply(&Command::UpdateQuota("r".into(), quota)).unwrap_err();
    assert!(
        matches!(&err, ApplyError::Unsupported(msg) if msg.contains("refused update_quota")),
        "{err:?}"
    );
    assert!(m.stopped().is_none());
    assert!(m.quotas().is_empty());
}

#[test]
fn a_module_fault_under_the_stop_policy_stops_the_master_for_every_later_command() {
    // Adding the framework is the first allocation run, adding the agent the second.
    let registry = faulty(&[("fail_on_allocate", "2")]);
    let mut m = Master::new(&registry, setup(FailurePolicy::Stop)).unwrap();
    m.apply(&Command::add_framework("f", &["r"])).unwrap();
    let err = m.apply(&Command::add_agent("a1", "cpus:4;mem:1024".parse().unwrap())).unwrap_err();
    assert!(
        matches!(&err, ApplyError::Stopped(msg) if msg.contains("faulty_allocator")),
        "{err:?}"
    );
    let later = m.apply(&Command::add_framework("g", &["r"])).unwrap_err();
    assert!(matches!(later, ApplyError::Stopped(_)), "{later:?}");
    assert!(m.framework_id("g").is_err(), "nothing is applied after a stop");
}

//! A live master's time series is bounded: with `limit_history`, only the last samples stay,
//! however long it runs.

use allocator_host::master::Command;
use allocator_host::master::Setup;
use allocator_host::registry::ModuleRegistry;
use allocator_sim::allocator_scenario::Op;
use allocator_sim::driver::Driver;
use allocator_sim::output::EventStream;

#[test]
fn a_limited_history_keeps_only_the_last_samples() {
    let registry = ModuleRegistry::new();
    let mut driver = Driver::new(&registry, Setup::default(), "<test>").unwrap();
    driver.limit_history(8);
    let mut out = EventStream::sink();
    let add = Op::Command(Command::add_agent("a1", "cpus:4;mem:1024".parse().unwrap()));
    driver.apply(0, &add, &mut out).unwrap();
    driver.apply(1, &Op::Command(Command::add_framework("f1", &["r1"])), &mut out).unwrap();
    for i in 0..200 {
        driver.apply(2 + i, &Op::Tick, &mut out).unwrap();
    }
    let history = driver.share_history(1_000);
    let times = history["times"].as_array().unwrap();
    assert!((8..=10).contains(&times.len()), "{} samples kept", times.len());
    assert_eq!(times.last().unwrap().as_f64(), Some(200.0), "the last ones: {history}");
}

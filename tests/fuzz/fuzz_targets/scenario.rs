//! The scenario parsers never panic, and accepted allocator scenarios run (bounded) without
//! panicking against the built-in allocator.
#![no_main]

use allocator_host::ModuleRegistry;
use allocator_sim::allocator_scenario::AllocatorScenario;
use allocator_sim::output::EventStream;
use allocator_sim::scenario::Document;
use allocator_host::master::Setup;
use allocator_sim::driver::Driver;
use allocator_sim::sorter_scenario::SorterScenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(doc) = Document::parse(text, "fuzz") else { return };
    if doc.is_sorter_scenario() {
        let _ = SorterScenario::parse(&doc, &Default::default());
        return;
    }
    let Ok(scenario) = AllocatorScenario::parse(&doc) else { return };
    // Keep runs short: skip scenarios that advance the clock far.
    let far = scenario.events.iter().any(
        |(_, op)| matches!(op, allocator_sim::allocator_scenario::Op::Advance(s) if *s > 100.0),
    );
    if far || scenario.events.len() > 200 {
        return;
    }
    let registry = ModuleRegistry::new();
    let setup = Setup {
        allocator: "hierarchical".into(),
        role_sorter: "drf".into(),
        framework_sorter: "drf".into(),
        options: Default::default(),
        on_module_failure: Default::default(),
        call_budget_ms: None,
        call_timeout_ms: None,
        allocator_parameters: Vec::new(),
    };
    let Ok(mut sim) = Driver::new(&registry, setup, "fuzz") else { return };
    let _ = sim.run(&scenario, &mut EventStream::sink());
});

//! Mesos's `DeclineOffers` for the built-in allocator with the built-in DRF sorters and with the
//! DRF module loaded from its `.so`, side by side. `cargo bench -p workspace-tests --bench allocator`.

use std::time::Duration;

use allocator_host::ModuleRegistry;
use allocator_host::bench::{builtin_allocator, decline_offers};
use allocator_host::manifest;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn decline(c: &mut Criterion) {
    let builtin = ModuleRegistry::new();
    let mut with_module = ModuleRegistry::new();
    let (m, source) =
        manifest::from_flag(&workspace_tests::manifest_for("drf_sorter", &["drf"])).unwrap();
    with_module.load_manifest(&m, &source).unwrap();
    let mut group = c.benchmark_group("DeclineOffers/allocation run");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(5));
    for (agents, frameworks) in [(1_000u32, 100u32), (10_000, 1_000)] {
        for (label, registry) in [("drf-builtin", &builtin), ("drf-module", &with_module)] {
            group.bench_with_input(
                BenchmarkId::new(label, format!("{agents}x{frameworks}")),
                &(agents, frameworks),
                |b, &(a, f)| {
                    b.iter_custom(|iters| {
                        let role = registry.sorter_factory("drf", "bench").unwrap();
                        let fw = registry.sorter_factory("drf", "bench").unwrap();
                        let mut allocator = builtin_allocator(role, fw).unwrap();
                        let times =
                            decline_offers(&mut allocator, a, f, iters as u32, 1.0).unwrap();
                        times.iter().sum()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, decline);
criterion_main!(benches);

//! Mesos's allocator benchmarks (`DeclineOffers`, `SuppressOffers`, `LargeAndSmallQuota`,
//! `AddAndUpdateSlave`) for the built-in allocator with the built-in DRF sorters and with the DRF
//! module loaded from its `.so`, side by side. `cargo bench -p workspace-tests --bench allocator`;
//! `allocator-master bench all` runs the full-size matrix.

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

/// The built-in DRF and the DRF module, each as a fresh built-in allocator over its sorters.
fn registries() -> [(&'static str, ModuleRegistry); 2] {
    let mut with_module = ModuleRegistry::new();
    let (m, source) =
        manifest::from_flag(&workspace_tests::manifest_for("drf_sorter", &["drf"])).unwrap();
    with_module.load_manifest(&m, &source).unwrap();
    [("drf-builtin", ModuleRegistry::new()), ("drf-module", with_module)]
}

fn allocator_over(
    registry: &ModuleRegistry,
) -> allocator_host::hierarchical::HierarchicalAllocator {
    let role = registry.sorter_factory("drf", "bench").unwrap();
    let fw = registry.sorter_factory("drf", "bench").unwrap();
    builtin_allocator(role, fw).unwrap()
}

fn suppress(c: &mut Criterion) {
    let mut group = c.benchmark_group("SuppressOffers/allocation run");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (label, registry) in &registries() {
        group.bench_function(BenchmarkId::new(*label, "1000x100"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut a = allocator_over(registry);
                    let times = allocator_host::bench::suppress_offers(&mut a, 1000, 100).unwrap();
                    total += allocator_host::bench::median(&times);
                }
                total
            })
        });
    }
    group.finish();
}

fn quota(c: &mut Criterion) {
    let mut group = c.benchmark_group("LargeAndSmallQuota");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (label, registry) in &registries() {
        for (phase, full) in [("full run", true), ("empty run", false)] {
            group.bench_function(BenchmarkId::new(*label, format!("300 roles, {phase}")), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut a = allocator_over(registry);
                        let r = allocator_host::bench::large_and_small_quota(&mut a, 250, 50, 3)
                            .unwrap();
                        total += if full { r.full } else { r.empty };
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

fn add_and_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("AddAndUpdateSlave");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (label, registry) in &registries() {
        for (phase, add) in [("add", true), ("update", false)] {
            group.bench_function(BenchmarkId::new(*label, format!("1000x100 {phase}")), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut a = allocator_over(registry);
                        let (x, y) =
                            allocator_host::bench::add_and_update_agents(&mut a, 1000, 100)
                                .unwrap();
                        total += if add { x } else { y };
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, decline, suppress, quota, add_and_update);
criterion_main!(benches);

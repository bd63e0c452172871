//! Mesos's allocator benchmarks (`DeclineOffers`, `SuppressOffers`, `LargeAndSmallQuota`,
//! `AddAndUpdateSlave`) for the built-in allocator with the built-in DRF sorters and with the DRF
//! module loaded from its `.so`, side by side. `cargo bench -p workspace-tests --bench allocator`;
//! `allocator-master bench all` runs the full-size matrix.

use std::time::Duration;

use allocator_host::hierarchical::HierarchicalAllocator;
use allocator_host::{ModuleRegistry, manifest};
use allocator_master::bench::{self, builtin_allocator, decline_offers};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};

fn decline(c: &mut Criterion) {
    let registries = registries();
    let mut group = c.benchmark_group("DeclineOffers/allocation run");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(5));
    for (agents, frameworks) in [(1_000u32, 100u32), (10_000, 1_000)] {
        for (label, registry) in &registries {
            group.bench_function(BenchmarkId::new(*label, format!("{agents}x{frameworks}")), |b| {
                // One cluster, `iters` allocation runs (filters pile up as in Mesos's version).
                b.iter_custom(|iters| {
                    let mut allocator = allocator_over(registry);
                    let measured = decline_offers(
                        &mut allocator,
                        agents,
                        frameworks,
                        iters as u32,
                        1.0,
                        |_| None,
                    )
                    .unwrap();
                    measured.runs.iter().sum()
                })
            });
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

fn allocator_over(registry: &ModuleRegistry) -> HierarchicalAllocator {
    let role = registry.sorter_factory("drf", "bench").unwrap();
    let fw = registry.sorter_factory("drf", "bench").unwrap();
    builtin_allocator(role, fw).unwrap()
}

/// Benchmarks `measure`, which builds its cluster on a fresh allocator and returns the time of
/// the part being measured; each iteration starts from scratch.
fn bench_fresh(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    registry: &ModuleRegistry,
    measure: impl Fn(&mut HierarchicalAllocator) -> Duration,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| (0..iters).map(|_| measure(&mut allocator_over(registry))).sum())
    });
}

fn suppress(c: &mut Criterion) {
    let mut group = c.benchmark_group("SuppressOffers/allocation run");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (label, registry) in &registries() {
        bench_fresh(&mut group, BenchmarkId::new(*label, "1000x100"), registry, |a| {
            bench::median(&bench::suppress_offers(a, 1000, 100).unwrap())
        });
    }
    group.finish();
}

fn quota(c: &mut Criterion) {
    let mut group = c.benchmark_group("LargeAndSmallQuota");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (label, registry) in &registries() {
        for (phase, full) in [("full run", true), ("empty run", false)] {
            let id = BenchmarkId::new(*label, format!("300 roles, {phase}"));
            bench_fresh(&mut group, id, registry, |a| {
                let r = bench::large_and_small_quota(a, 250, 50, 3).unwrap();
                if full { r.full } else { r.empty }
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
            let id = BenchmarkId::new(*label, format!("1000x100 {phase}"));
            bench_fresh(&mut group, id, registry, |a| {
                let (x, y) = bench::add_and_update_agents(a, 1000, 100).unwrap();
                if add { x } else { y }
            });
        }
    }
    group.finish();
}

criterion_group!(benches, decline, suppress, quota, add_and_update);
criterion_main!(benches);

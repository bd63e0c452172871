//! Mesos's `BENCHMARK_FullSort` for each sorter, the built-in DRF and the modules loaded from
//! their `.so` files side by side. `cargo bench -p workspace-tests --bench sorters`.

use std::time::Duration;

use allocator_host::ModuleRegistry;
use allocator_host::manifest;
use allocator_master::bench::{sorter_config, sorter_full_sort};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn registry() -> ModuleRegistry {
    let mut registry = ModuleRegistry::new();
    for (lib, module) in [
        ("drf_sorter", "drf_module"),
        ("weighted_priority_sorter", "weighted_priority"),
        ("random_sorter", "random"),
        ("drf_decay_sorter", "drf_decay"),
    ] {
        let real = if module == "drf_module" { "drf" } else { module };
        let text = workspace_tests::manifest_for(lib, &[real]);
        let (m, source) = manifest::from_flag(&text).unwrap();
        registry.load_manifest(&m, &source).unwrap();
    }
    registry
}

/// Makes a fresh sorter for one benchmark iteration.
type MakeSorter = Box<dyn Fn() -> Box<dyn allocator_api::Sorter>>;

fn full_sort(c: &mut Criterion) {
    let registry = registry();
    // (label, how to make the sorter)
    let sorters: Vec<(&str, MakeSorter)> = vec![
        (
            "drf-builtin",
            Box::new(|| {
                Box::new(drf_sorter::create(&sorter_config())) as Box<dyn allocator_api::Sorter>
            }),
        ),
        ("drf-module", {
            let f = registry.sorter_factory("drf", "bench").unwrap();
            Box::new(move || f(&sorter_config()).unwrap())
        }),
        ("weighted_priority-module", {
            let f = registry.sorter_factory("weighted_priority", "bench").unwrap();
            Box::new(move || f(&sorter_config()).unwrap())
        }),
        ("random-module", {
            let f = registry.sorter_factory("random", "bench").unwrap();
            Box::new(move || f(&sorter_config()).unwrap())
        }),
        ("drf_decay-module", {
            let f = registry.sorter_factory("drf_decay", "bench").unwrap();
            Box::new(move || f(&sorter_config()).unwrap())
        }),
    ];
    for phase in ["add allocations", "full sort", "remove allocations"] {
        let mut group = c.benchmark_group(format!("FullSort/{phase}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        for (agents, clients) in [(10_000u32, 1_000u32), (50_000, 1_000)] {
            for (label, make) in &sorters {
                group.bench_with_input(
                    BenchmarkId::new(*label, format!("{agents}x{clients}")),
                    &(agents, clients),
                    |b, &(a, n)| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let mut sorter = make();
                                let phases = sorter_full_sort(sorter.as_mut(), a, n).unwrap();
                                total += phases.iter().find(|p| p.name == phase).unwrap().elapsed;
                            }
                            total
                        })
                    },
                );
            }
        }
        group.finish();
    }
}

criterion_group!(benches, full_sort);
criterion_main!(benches);

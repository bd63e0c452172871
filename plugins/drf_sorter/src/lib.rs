//! The DRF sorter: Mesos's `DRFSorter`, shipped as the module `drf` (library `drf_sorter`) and
//! linked statically into the host as its built-in fallback. One source ([`sorter_core::drf`]),
//! two forms.
#![deny(missing_docs)]

pub use sorter_core::drf::{DrfOrder, DrfSorter, create};

allocator_api::export_modules! {
    sorter {
        name: "drf",
        author: "allocator project",
        description: "Dominant Resource Fairness, as Mesos's DRFSorter",
        create: |config, _params| Ok::<_, String>(create(config)),
    },
}

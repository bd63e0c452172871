//! `allocator-master`: see `allocator_master::cli`.

/// mimalloc instead of the platform's malloc: the Kubernetes mode decodes every watched pod into
/// many small allocations, and glibc's malloc was a quarter of its CPU (BENCHMARKS.md). Modules
/// keep their own allocator: only abi_stable types cross the boundary, each freed by its maker.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // A module worker (`--module_isolation process`) is this binary started by the master.
    if allocator_host::is_worker_invocation() {
        allocator_host::worker_main();
    }
    allocator_master::cli::main()
}

//! `allocator-master`: see `allocator_master::cli`.

fn main() -> std::process::ExitCode {
    // A module worker (`--module_isolation process`) is this binary started by the master.
    if allocator_host::is_worker_invocation() {
        allocator_host::worker_main();
    }
    allocator_master::cli::main()
}

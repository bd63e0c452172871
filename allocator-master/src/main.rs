//! `allocator-master`: see `allocator_master::cli`.

fn main() -> std::process::ExitCode {
    allocator_master::cli::main()
}

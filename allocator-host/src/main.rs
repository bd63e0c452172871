//! `allocator-master`: see `allocator_host::cli`.

fn main() -> std::process::ExitCode {
    allocator_host::cli::main()
}

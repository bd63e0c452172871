//! `import-cycles DIR…`: prints the import cycles of each package directory, one per line, each
//! followed by its edges and the references that make them (`--all`: every reference, not
//! only the first of each edge; `--edges`: first every edge of every sibling graph, cycle or
//! not). Exits with 1 where it found a cycle, 2 on a usage or read
//! error.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut all = false;
    let mut graphs = false;
    let mut dirs = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--all" => all = true,
            "--edges" => graphs = true,
            "-h" | "--help" => {
                println!("usage: import-cycles [--all] [--edges] PACKAGE_DIR...");
                return ExitCode::SUCCESS;
            }
            _ => dirs.push(arg),
        }
    }
    if dirs.is_empty() {
        eprintln!("usage: import-cycles [--all] [--edges] PACKAGE_DIR...");
        return ExitCode::from(2);
    }
    let mut found = 0;
    for dir in &dirs {
        let report = match import_cycles::check_package(Path::new(dir)) {
            Ok(report) => report,
            Err(error) => {
                eprintln!("{dir}: {error}");
                return ExitCode::from(2);
            }
        };
        for warning in &report.warnings {
            eprintln!("warning: {dir}: {warning}");
        }
        if graphs {
            for graph in &report.graphs {
                println!("{dir}: {graph}");
            }
        }
        for cycle in &report.cycles {
            if all {
                println!("{dir}: {cycle:#}");
            } else {
                println!("{dir}: {cycle}");
            }
        }
        found += report.cycles.len();
    }
    if found == 0 {
        eprintln!("no import cycles");
        ExitCode::SUCCESS
    } else {
        eprintln!("{found} import cycle(s)");
        ExitCode::from(1)
    }
}

//! `allocator-master experiment` (SPEC 7): its flags and the run with a progress bar.

use std::path::PathBuf;

use super::{CallLimitFlags, ModuleFlags, load_modules};
use allocator_host::master::{Master, Setup};
use allocator_lab::experiment::{self, Measure, Options, Order};

/// `allocator-master experiment` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ExperimentArgs {
    /// The node list (`openb_node_list_gpu_node.csv`): each node becomes an agent whose GPUs
    /// are devices.
    #[arg(long, value_name = "NODES.csv")]
    pub nodes: PathBuf,
    /// The pod lists, comma-separated; a directory stands for the 17 pod lists of the paper's
    /// evaluation in it (`openb_pod_list_default.csv`, `…_cpu050.csv`, …).
    #[arg(long, value_name = "PODS.csv[,PODS.csv…]|DIR", value_delimiter = ',', required = true)]
    pub pods: Vec<PathBuf>,
    /// The allocators, comma-separated: built-in (`hierarchical`) or module names (with the
    /// shipped manifest: `Random`, `DotProd`, `GpuClustering`, `GpuPacking`, `BestFit`, `FGD`).
    #[arg(long, value_name = "NAME[,NAME…]", value_delimiter = ',', required = true)]
    pub allocator: Vec<String>,
    /// The seeds: `A-B` (inclusive) or one number.
    #[arg(long, value_name = "A-B")]
    pub seeds: String,
    /// Target GPU demand as a multiple of the cluster's GPUs.
    #[arg(long, default_value_t = 1.3, value_name = "X")]
    pub inflation: f64,
    /// Whose arrival order, node order and random draws: `ours` (our generator) or
    /// `artifact` (the FGD artifact's, seed for seed: Go's `math/rand` stream as the artifact
    /// draws it; see docs/faithfulness.md).
    #[arg(long, default_value = "ours", value_name = "ours|artifact")]
    pub order: Order,
    /// Experiments run at once (default: every core).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// The results CSV (the artifact's `analysis_allo_discrete.csv` layout).
    #[arg(long, value_name = "RESULTS.csv")]
    pub output: PathBuf,
    /// Also write the fragmentation amount per bucket (% of GPU capacity), in the same layout
    /// (the artifact's `analysis_frag_discrete.csv`).
    #[arg(long = "frag_output", alias = "frag-output", value_name = "FRAG.csv")]
    pub frag_output: Option<PathBuf>,
    /// Also write the fragmentation ratio per bucket (% of unallocated GPU), in the same
    /// layout (the artifact's `analysis_frag_ratio_discrete.csv`).
    #[arg(long = "frag_ratio_output", alias = "frag-ratio-output", value_name = "RATIO.csv")]
    pub frag_ratio_output: Option<PathBuf>,
    /// Also draw the first pod list's results as an SVG: unallocated GPU % (the paper's
    /// Fig. 9(a)) and fragmentation against arrived demand.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Also draw the paper's bar figures as an SVG: per trace family (gpushare, multigpu,
    /// gpuspec, cpu; `default` first for reference), the unallocated GPU % at 100 % arrived
    /// demand per pod list and allocator (mean over seeds, min–max whiskers), above the first
    /// pod list's fragmentation amount and ratio against arrived demand.
    #[arg(long, value_name = "FILE.svg")]
    pub bars: Option<PathBuf>,
    /// Where modules come from.
    #[command(flatten)]
    pub modules: ModuleFlags,
    /// The module call budget and watchdog.
    #[command(flatten)]
    pub limits: CallLimitFlags,
}

/// The 17 pod lists the paper's evaluation runs (the artifact's `FILELIST`), in its order.
pub const EVALUATION_TRACES: [&str; 17] = [
    "default",
    "cpu050",
    "cpu100",
    "cpu200",
    "cpu250",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
];

/// `--pods`: files as given; a directory becomes its 17 evaluation pod lists.
fn pod_lists(given: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in given {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        for t in EVALUATION_TRACES {
            let file = p.join(format!("openb_pod_list_{t}.csv"));
            if !file.is_file() {
                return Err(format!(
                    "--pods {}: the evaluation's pod list '{}' is not there",
                    p.display(),
                    file.display()
                ));
            }
            out.push(file);
        }
    }
    Ok(out)
}

/// Parses `A-B` or `N`.
fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("--seeds must be A-B or N (non-negative integers, A ≤ B), got '{text}'");
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (
            a.trim().parse::<u64>().map_err(|_| bad())?,
            b.trim().parse::<u64>().map_err(|_| bad())?,
        ),
        None => {
            let n = text.trim().parse::<u64>().map_err(|_| bad())?;
            (n, n)
        }
    };
    if a > b || b - a >= 100_000 {
        return Err(bad());
    }
    Ok((a..=b).collect())
}

/// Runs the experiments; `Err` is one line for exit code 2.
pub fn run(
    a: &ExperimentArgs,
    outer_modules: &ModuleFlags,
    outer_limits: &CallLimitFlags,
) -> Result<u8, String> {
    let seeds = parse_seeds(&a.seeds)?;
    if !(a.inflation.is_finite() && a.inflation > 0.0) {
        return Err(format!("--inflation must be a positive number, got {}", a.inflation));
    }
    let jobs =
        a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let modules = a.modules.clone().or(outer_modules);
    let limits = a.limits.clone().or(outer_limits);
    let registry = load_modules(&modules, &limits)?;
    // Each allocator is created once here, so that a bad name is one clear error up front.
    for name in &a.allocator {
        Master::new(&registry, Setup::new(name, "drf", "drf"))
            .map_err(|e| format!("--allocator: {e}"))?;
    }
    let options = Options {
        nodes: a.nodes.clone(),
        pods: pod_lists(&a.pods)?,
        allocators: a.allocator.clone(),
        seeds: seeds.clone(),
        inflation: a.inflation,
        jobs,
        order: a.order,
    };
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} experiments, {elapsed} elapsed, ETA {eta}",
        )
        .map_err(|e| e.to_string())?
        .progress_chars("=> "),
    );
    bar.set_prefix("experiment");
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let started = std::time::Instant::now();
    let (capacity, rows) = experiment::run_all(&options, &registry, &progress)?;
    bar.finish_and_clear();
    let outputs = [
        (Some(&a.output), Measure::Allocated),
        (a.frag_output.as_ref(), Measure::FragAmount),
        (a.frag_ratio_output.as_ref(), Measure::FragRatio),
    ];
    for (path, measure) in outputs {
        if let Some(path) = path {
            std::fs::write(path, experiment::csv_of(&rows, a.inflation, capacity, measure))
                .map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
        }
    }
    if let (Some(path), Some(first)) = (&a.plot, rows.first()) {
        let svg = experiment::plot::render_svg(&rows, &first.workload, seeds.len())?;
        std::fs::write(path, svg).map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    if let Some(path) = &a.bars {
        let svg = experiment::plot::render_bars_svg(&rows)?;
        std::fs::write(path, svg).map_err(|e| format!("cannot write '{}': {e}", path.display()))?;
    }
    println!("{}", experiment::summary(&rows, started.elapsed().as_secs_f64(), jobs));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::{EVALUATION_TRACES, parse_seeds, pod_lists};

    #[test]
    fn a_directory_stands_for_the_seventeen_evaluation_pod_lists() {
        let dir = std::env::temp_dir().join(format!("pod-lists-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for t in &EVALUATION_TRACES[1..] {
            std::fs::write(dir.join(format!("openb_pod_list_{t}.csv")), "").unwrap();
        }
        let e = pod_lists(std::slice::from_ref(&dir)).unwrap_err();
        assert!(e.contains("openb_pod_list_default.csv' is not there"), "{e}");
        std::fs::write(dir.join("openb_pod_list_default.csv"), "").unwrap();
        let lists = pod_lists(&[dir.clone(), "x.csv".into()]).unwrap();
        assert_eq!(lists.len(), 18);
        assert!(lists[0].ends_with("openb_pod_list_default.csv"));
        assert_eq!(lists[17], std::path::PathBuf::from("x.csv"), "a file stays as given");
    }

    #[test]
    fn seeds_are_a_range_or_one_number() {
        assert_eq!(parse_seeds("42-44").unwrap(), [42, 43, 44]);
        assert_eq!(parse_seeds("7").unwrap(), [7]);
        assert!(parse_seeds("9-3").is_err());
        assert!(parse_seeds("x").is_err());
    }
}

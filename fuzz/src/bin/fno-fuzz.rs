//! The long fuzzing run: `fno-fuzz --target all --seconds 1800` (see
//! fuzz/README.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use fno_fuzz::{campaign, rng, targets};

#[derive(Parser)]
#[command(
    about = "Fuzzes the loaders and configuration parsers: each case in a worker process with a \
                   timeout and a memory limit; failing inputs are saved under --out."
)]
struct Args {
    /// Target names (repeat or comma-separate), or `all`; `--list` names them.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    target: Vec<String>,
    /// Seconds per target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seed of the campaign (default: from FNO_FUZZ_SEED or the clock).
    #[arg(long)]
    seed: Option<String>,
    /// Heap and address-space limit of a worker, in MiB.
    #[arg(long, default_value_t = 4096)]
    memory_mb: u64,
    /// A case with no answer after this long is a hang.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Where failing inputs go.
    #[arg(long, default_value = "fuzz-out")]
    out: PathBuf,
    /// Targets fuzzed at once (one worker process each).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// List the targets.
    #[arg(long)]
    list: bool,
    /// Run this saved input on the (single) target in this process, uncaught.
    #[arg(long)]
    reproduce: Option<PathBuf>,
    #[arg(long, hide = true)]
    worker: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(name) = &args.worker {
        fno_fuzz::guard::install_crash_report();
        let target = targets::by_name(name).unwrap_or_else(|| panic!("no target {name}"));
        campaign::worker(target, args.memory_mb);
    }
    if args.list {
        for t in targets::all() {
            println!("{}", t.name);
        }
        return ExitCode::SUCCESS;
    }
    let mut chosen = Vec::new();
    for name in &args.target {
        if name == "all" {
            chosen.extend(targets::all());
        } else if let Some(t) = targets::by_name(name) {
            chosen.push(t);
        } else {
            eprintln!("fno-fuzz: no target {name:?} (see --list)");
            return ExitCode::from(2);
        }
    }
    if let Some(input) = &args.reproduce {
        let [target] = chosen[..] else {
            eprintln!("fno-fuzz: --reproduce needs exactly one --target");
            return ExitCode::from(2);
        };
        return match campaign::reproduce(target, input) {
            Ok(()) => {
                println!("ok");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("clean error: {e}");
                ExitCode::SUCCESS
            }
        };
    }
    let seed = match &args.seed {
        Some(s) => match rng::parse_seed(s) {
            Some(v) => v,
            None => {
                eprintln!("fno-fuzz: --seed {s:?} is not an integer");
                return ExitCode::from(2);
            }
        },
        None => rng::seed_from_env(),
    };
    println!(
        "fno-fuzz: seed {seed} (FNO_FUZZ_SEED={seed} or --seed {seed} repeats this run), {} target(s), {} s each, \
         {} MiB, timeout {} ms, failing inputs under {}",
        chosen.len(),
        args.seconds,
        args.memory_mb,
        args.timeout_ms,
        args.out.display()
    );
    let failed = campaign::run(&campaign::Options {
        targets: chosen,
        seconds: args.seconds,
        seed,
        memory_mb: args.memory_mb,
        timeout: Duration::from_millis(args.timeout_ms),
        out: args.out,
        jobs: args.jobs,
    });
    if failed {
        println!("fno-fuzz: failures found (inputs under the --out directory)");
        ExitCode::FAILURE
    } else {
        println!("fno-fuzz: no failures");
        ExitCode::SUCCESS
    }
}

//! Every fuzz target on a few hundred mutated inputs within a small time
//! budget, in this process: a panic fails the test with its target, seed,
//! case and saved input; an abort, a crash or a hang ends the test binary
//! after naming the case in flight (fuzz/src/guard.rs).
//!
//! Environment: FNO_FUZZ_SEED (default: the clock; printed), FNO_FUZZ_TARGET
//! (substring filter), FNO_FUZZ_SECONDS (whole budget, default 40),
//! FNO_FUZZ_CASES (per target, default 1000), FNO_FUZZ_MEMORY_MB (default
//! 2048), FNO_FUZZ_TIMEOUT_MS (one case, default 30000).

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use fno_fuzz::{guard, rng, run_in_process, targets, Report};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v:?} is not an integer")))
        .unwrap_or(default)
}

/// Straight to stderr, past the test harness's capture: the seed must be
/// visible even when the process dies.
fn say(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

#[test]
fn every_target_survives_mutated_inputs() {
    let seed = rng::seed_from_env();
    let (seconds, cases) = (env_u64("FNO_FUZZ_SECONDS", 40), env_u64("FNO_FUZZ_CASES", 1000));
    let filter = std::env::var("FNO_FUZZ_TARGET").unwrap_or_default();
    guard::set_seed(seed);
    guard::install_crash_report();
    guard::set_memory_limit(env_u64("FNO_FUZZ_MEMORY_MB", 2048) as usize * (1 << 20));
    guard::start_watchdog(Duration::from_millis(env_u64("FNO_FUZZ_TIMEOUT_MS", 30_000)));
    let chosen: Vec<_> = targets::all()
        .into_iter()
        .filter(|t| t.name.contains(&filter))
        .collect();
    assert!(!chosen.is_empty(), "no target matches FNO_FUZZ_TARGET={filter:?}");
    say(&format!(
        "fuzz: seed {seed} (FNO_FUZZ_SEED={seed} repeats this run), {} targets, up to {cases} cases each, {seconds} s in all\n",
        chosen.len()
    ));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    // Each thread takes targets in turn; each target gets an equal share of the
    // budget (its seeds always run).
    let per_target = Duration::from_secs_f64(seconds as f64 * threads as f64 / chosen.len() as f64);
    let save_dir = std::env::temp_dir().join("fno-fuzz-failures");
    let queue = Mutex::new(chosen.into_iter());
    let reports: Mutex<Vec<(&str, Report)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let Some(target) = queue.lock().unwrap().next() else {
                    break;
                };
                let r = run_in_process(target, seed, cases, per_target, &save_dir);
                let secs = r.elapsed.as_secs_f64().max(1e-9);
                say(&format!(
                    "fuzz: {:<26} {:>5} cases in {:>5.1} s ({:>6.0}/s): {} ok, {} clean errors, {} panics{}\n",
                    target.name,
                    r.cases,
                    secs,
                    r.cases as f64 / secs,
                    r.ok,
                    r.errors,
                    r.failures.len(),
                    match r.rejected_seeds.len() {
                        0 => String::new(),
                        n => format!(
                            "; {n} seed(s) rejected, as {}",
                            r.rejected_seeds[0].chars().take(100).collect::<String>()
                        ),
                    }
                ));
                reports.lock().unwrap().push((target.name, r));
            });
        }
    });
    let reports = reports.into_inner().unwrap();
    let failures: Vec<String> = reports
        .iter()
        .flat_map(|(_, r)| &r.failures)
        .map(|f| {
            format!(
                "{} case {} (seed {seed}): {}\n    input: {}",
                f.target,
                f.case,
                f.message,
                f.saved
                    .as_ref()
                    .map_or("(not saved)".into(), |p| p.display().to_string())
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} failing case(s); rerun with FNO_FUZZ_SEED={seed} FNO_FUZZ_TARGET=<target>, or run one input with \
         `cargo run -p fno-fuzz -- --target <target> --reproduce <input>`:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

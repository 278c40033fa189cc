//! A fuzzing harness for everything that reads user input: the dataset
//! loaders of every format, the FNO configuration (`config.json`), training
//! configurations (TOML), checkpoints and inference inputs.
//!
//! Valid seed inputs are built in code ([`seeds`]), mutated by generic and
//! structure-aware mutators ([`mutate`]) with a seeded generator ([`rng`]),
//! and fed to the targets ([`targets`]). A target must return `Ok` or a clean
//! `Err`: a panic, an abort, a hang or an allocation beyond the limit is a
//! failure. Two drivers: [`run_in_process`] (the CI test, `tests/fuzz.rs`)
//! and [`campaign`] (the `fno-fuzz` binary: one worker process per target,
//! restarted after a crash, with a per-case timeout and a memory limit).
//! See fuzz/README.md.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod campaign;
pub mod guard;
pub mod mutate;
pub mod rng;
pub mod seeds;
pub mod targets;

use rng::Rng;
use targets::Target;

/// What one case did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok,
    /// A clean error (its message).
    Error(String),
    /// An error of several lines: users get one line (a failure).
    MultiLine(String),
    /// A panic: its message and location.
    Panic(String),
}

thread_local! {
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A panic hook that records the panics of cases (message and location)
/// instead of printing them, and leaves the others to the previous hook.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CASE.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(a non-string panic payload)".into());
            let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line()));
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("?");
            PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{} (thread {name})", at.unwrap_or_default())));
        }));
    });
}

/// Runs one case, a panic caught and described. Panics on other threads
/// (rayon's) reach the case's thread as a second panic; the first message is kept.
pub fn run_case(target: &Target, scratch: &Path, input: &[u8]) -> Outcome {
    install_panic_hook();
    PANIC.with(|p| p.borrow_mut().take());
    IN_CASE.with(|c| c.set(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| (target.run)(scratch, input)));
    IN_CASE.with(|c| c.set(false));
    match result {
        Ok(Ok(())) => Outcome::Ok,
        // TOML diagnostics keep their caret under the line they quote.
        Ok(Err(e)) if target.ext != "toml" && e.trim_end().contains('\n') => Outcome::MultiLine(e),
        Ok(Err(e)) => Outcome::Error(e),
        Err(_) => Outcome::Panic(
            PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "a panic on another thread".into()),
        ),
    }
}

/// Inputs for one target: its seeds first, then mutations of the corpus (the
/// seeds and the mutated inputs that loaded), deterministic from the seed and
/// the outcomes.
pub struct Fuzzer {
    pub target: &'static Target,
    rng: Rng,
    corpus: Vec<Vec<u8>>,
    seeds: usize,
    produced: usize,
}

/// Mutated inputs kept for further mutation.
const CORPUS_CAP: usize = 256;

impl Fuzzer {
    pub fn new(target: &'static Target, seed: u64) -> Self {
        let corpus = (target.seeds)();
        assert!(!corpus.is_empty(), "{}: no seed inputs", target.name);
        Fuzzer {
            target,
            rng: Rng::new(seed ^ targets::fnv(target.name.as_bytes())),
            seeds: corpus.len(),
            corpus,
            produced: 0,
        }
    }

    pub fn seed_count(&self) -> usize {
        self.seeds
    }

    /// The next input: each seed once, then mutations.
    pub fn next_input(&mut self) -> Vec<u8> {
        self.produced += 1;
        if self.produced <= self.seeds {
            return self.corpus[self.produced - 1].clone();
        }
        // Seeds are picked half of the time, so the corpus never drifts far.
        let i = if self.rng.one_in(2) {
            self.rng.below(self.seeds)
        } else {
            self.rng.below(self.corpus.len())
        };
        let j = self.rng.below(self.corpus.len());
        mutate::mutate(&mut self.rng, &self.corpus[i], &self.corpus[j], self.target.format)
    }

    /// Keeps a mutated input that loaded, as a parent of later mutations.
    pub fn feedback(&mut self, input: &[u8], outcome: &Outcome) {
        if self.produced <= self.seeds || *outcome != Outcome::Ok {
            return;
        }
        if self.corpus.len() < self.seeds + CORPUS_CAP {
            self.corpus.push(input.to_vec());
        } else {
            let at = self.seeds + self.rng.below(CORPUS_CAP);
            self.corpus[at] = input.to_vec();
        }
    }
}

/// A failure found in process.
#[derive(Clone, Debug)]
pub struct Failure {
    pub target: &'static str,
    pub case: u64,
    pub message: String,
    /// The input, saved for reproduction.
    pub saved: Option<PathBuf>,
}

/// One target's in-process run.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: u64,
    pub ok: u64,
    pub errors: u64,
    /// Seeds a target rejected (each should load: a rejected seed is not a
    /// failure but makes the fuzzing weaker).
    pub rejected_seeds: Vec<String>,
    pub failures: Vec<Failure>,
    pub elapsed: Duration,
}

/// A directory name from a target name.
pub fn dir_name(target: &str) -> String {
    target.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '_', "_")
}

/// Runs up to `max_cases` cases of `target` within `budget`, in this process
/// (panics are caught; an abort or a crash ends the process after naming the
/// case, see [`guard`]). Panicking inputs are saved under `save_dir`.
pub fn run_in_process(target: &'static Target, seed: u64, max_cases: u64, budget: Duration, save_dir: &Path) -> Report {
    let start = Instant::now();
    let scratch = seeds::Scratch::new(&dir_name(target.name));
    let mut fuzzer = Fuzzer::new(target, seed);
    let slot = guard::claim_slot();
    let index = targets::index_of(target);
    let mut report = Report::default();
    let _ = std::fs::create_dir_all(save_dir);
    guard::set_current_dir(save_dir);
    let current = guard::current_input_path(save_dir, target, seed);
    while report.cases < max_cases && (report.cases < fuzzer.seed_count() as u64 || start.elapsed() < budget) {
        let case = report.cases;
        let input = fuzzer.next_input();
        let _ = std::fs::write(&current, &input);
        guard::begin(slot, index, case);
        let outcome = run_case(target, &scratch.0, &input);
        guard::end(slot);
        report.cases += 1;
        match &outcome {
            Outcome::Ok => report.ok += 1,
            Outcome::Error(e) => {
                report.errors += 1;
                if case < fuzzer.seed_count() as u64 {
                    report.rejected_seeds.push(format!("seed {case}: {e}"));
                }
            }
            Outcome::Panic(message) | Outcome::MultiLine(message) => {
                let path = save_dir.join(format!("{}-{seed}-{case}.{}", dir_name(target.name), target.ext));
                report.failures.push(Failure {
                    target: target.name,
                    case,
                    message: message.clone(),
                    saved: std::fs::write(&path, &input).ok().map(|_| path),
                });
            }
        }
        fuzzer.feedback(&input, &outcome);
    }
    let _ = std::fs::remove_file(&current);
    report.elapsed = start.elapsed();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::Format;

    fn target(ext: &'static str, run: fn(&Path, &[u8]) -> Result<(), String>) -> Target {
        Target {
            name: "test",
            ext,
            format: Format::Binary,
            seeds: Vec::new,
            run,
        }
    }

    #[test]
    fn errors_of_several_lines_fail_except_toml_diagnostics() {
        let two_lines = |_: &Path, _: &[u8]| Err("bad\n  ^ here".to_string());
        let one_line = |_: &Path, _: &[u8]| Err("bad: expected x at byte 3\n".to_string());
        let scratch = Path::new(".");
        assert!(matches!(
            run_case(&target("npy", two_lines), scratch, b""),
            Outcome::MultiLine(_)
        ));
        assert!(matches!(
            run_case(&target("toml", two_lines), scratch, b""),
            Outcome::Error(_)
        ));
        assert!(matches!(
            run_case(&target("npy", one_line), scratch, b""),
            Outcome::Error(_)
        ));
    }
}

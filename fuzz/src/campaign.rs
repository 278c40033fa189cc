//! The long run (`fno-fuzz`): each target's cases go to a worker process (this
//! binary in `--worker` mode) that runs them one after the other, under an
//! address-space limit and a heap limit, and answers one line per case. A case
//! that crashes the worker (a signal, an abort) or outlives the timeout is a
//! failure; the worker is then restarted. Every failing input is saved.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::targets::Target;
use crate::{dir_name, guard, run_case, seeds, Fuzzer, Outcome};

/// The worker's answers start with this, so that anything else a target
/// prints on stdout is ignored.
const MARK: &str = "\u{1e}fno-fuzz\t";

pub struct Options {
    pub targets: Vec<&'static Target>,
    /// Per target.
    pub seconds: u64,
    pub seed: u64,
    pub memory_mb: u64,
    pub timeout: Duration,
    pub out: PathBuf,
    /// Targets run at once.
    pub jobs: usize,
}

/// The worker: reads length-prefixed inputs on stdin, answers on stdout.
pub fn worker(target: &'static Target, memory_mb: u64) -> ! {
    guard::set_memory_limit((memory_mb as usize).saturating_mul(1 << 20));
    let scratch = seeds::Scratch::new(&format!("worker-{}", dir_name(target.name)));
    let (mut stdin, stdout) = (std::io::stdin().lock(), std::io::stdout());
    loop {
        let mut len = [0u8; 8];
        if stdin.read_exact(&mut len).is_err() {
            drop(scratch);
            std::process::exit(0);
        }
        let mut input = vec![0u8; u64::from_le_bytes(len) as usize];
        stdin.read_exact(&mut input).expect("the case's input on stdin");
        let line = match run_case(target, &scratch.0, &input) {
            Outcome::Ok => "ok\t".to_string(),
            Outcome::Error(e) => format!("err\t{}", e.replace('\n', " ")),
            Outcome::Panic(m) => format!("panic\t{}", m.replace('\n', " ")),
            Outcome::MultiLine(m) => format!("multi-line\t{}", m.replace('\n', "⏎")),
        };
        let mut out = stdout.lock();
        let _ = writeln!(out, "{MARK}{line}");
        let _ = out.flush();
    }
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: std::thread::JoinHandle<()>,
}

const STDERR_TAIL: usize = 16 << 10;

impl Worker {
    fn spawn(target: &Target, memory_mb: u64) -> Worker {
        let exe = std::env::current_exe().expect("the fno-fuzz executable");
        let limit = memory_mb.saturating_mul(1 << 20);
        let mut cmd = Command::new(exe);
        cmd.args(["--worker", target.name, "--memory-mb", &memory_mb.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_BACKTRACE", "0");
        // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let as_limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                let no_core = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &as_limit) != 0 || libc::setrlimit(libc::RLIMIT_CORE, &no_core) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("starting a worker");
        let stdin = child.stdin.take().expect("piped");
        let (stdout, mut err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(answer) = line.strip_prefix(MARK) {
                    if tx.send(answer.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                let mut t = tail.lock().unwrap();
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
        });
        Worker {
            child,
            stdin,
            lines,
            stderr,
            stderr_reader,
        }
    }

    /// The worker's death: its signal or exit code, and the end of its stderr.
    fn death(self) -> (String, String) {
        let Worker {
            mut child,
            stdin,
            stderr,
            stderr_reader,
            ..
        } = self;
        drop(stdin);
        let status = child.wait().ok();
        let _ = stderr_reader.join();
        let stderr = String::from_utf8_lossy(&stderr.lock().unwrap()).into_owned();
        let how = match status {
            Some(s) => match s.signal() {
                Some(sig) => format!("signal {sig} ({})", signal_name(sig)),
                None => format!("exit {}", s.code().unwrap_or(-1)),
            },
            None => "unknown".into(),
        };
        (how, stderr)
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        _ => "?",
    }
}

/// Kinds of failure.
const KINDS: [&str; 6] = ["panic", "crash", "oom", "stack-overflow", "timeout", "multi-line"];

/// One target's run.
#[derive(Default)]
pub struct Summary {
    pub cases: u64,
    pub ok: u64,
    pub errors: u64,
    pub failures: BTreeMap<&'static str, u64>,
    /// Distinct failures (kind and first message line): count and a saved input.
    pub distinct: BTreeMap<(String, String), (u64, PathBuf)>,
    pub elapsed: Duration,
}

impl Summary {
    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }
}

/// The line that names a crash: the panic or allocation message in stderr.
fn crash_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let pick = |needle: &str| lines.iter().rev().find(|l| l.contains(needle)).map(|l| l.to_string());
    pick("memory allocation of")
        .or_else(|| pick("has overflowed its stack"))
        .or_else(|| pick("panicked at"))
        .or_else(|| pick("Assertion"))
        .or_else(|| {
            lines
                .iter()
                .rev()
                .find(|l| !l.starts_with("fno-fuzz:"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default()
}

fn fuzz_target(target: &'static Target, opts: &Options, progress: bool) -> Summary {
    let mut fuzzer = Fuzzer::new(target, opts.seed);
    let dir = opts.out.join(dir_name(target.name));
    let mut worker = Worker::spawn(target, opts.memory_mb);
    let mut s = Summary::default();
    let start = Instant::now();
    let mut last_progress = start;
    let budget = Duration::from_secs(opts.seconds);
    while s.cases < fuzzer.seed_count() as u64 || start.elapsed() < budget {
        let case = s.cases;
        let input = fuzzer.next_input();
        let mut framed = (input.len() as u64).to_le_bytes().to_vec();
        framed.extend_from_slice(&input);
        let sent = worker.stdin.write_all(&framed).and_then(|_| worker.stdin.flush());
        let answer = match sent {
            Ok(()) => worker.lines.recv_timeout(opts.timeout),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        s.cases += 1;
        let failure: Option<(&'static str, String)> = match answer {
            Ok(line) => {
                let (kind, message) = line.split_once('\t').unwrap_or((&line, ""));
                let outcome = match kind {
                    "ok" => Outcome::Ok,
                    "err" => Outcome::Error(message.to_string()),
                    "multi-line" => Outcome::MultiLine(message.to_string()),
                    _ => Outcome::Panic(message.to_string()),
                };
                fuzzer.feedback(&input, &outcome);
                match outcome {
                    Outcome::Ok => {
                        s.ok += 1;
                        None
                    }
                    Outcome::Error(_) => {
                        s.errors += 1;
                        None
                    }
                    Outcome::Panic(m) => Some(("panic", m)),
                    Outcome::MultiLine(m) => Some(("multi-line", m)),
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = worker.child.kill();
                let _ = worker.death();
                worker = Worker::spawn(target, opts.memory_mb);
                Some(("timeout", format!("no answer within {} ms", opts.timeout.as_millis())))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let (how, stderr) = std::mem::replace(&mut worker, Worker::spawn(target, opts.memory_mb)).death();
                let message = crash_message(&stderr);
                let kind = if message.contains("memory allocation of") {
                    "oom"
                } else if message.contains("overflowed its stack") {
                    "stack-overflow"
                } else {
                    "crash"
                };
                Some((kind, format!("{how}: {message}")))
            }
        };
        if let Some((kind, message)) = failure {
            *s.failures.entry(kind).or_default() += 1;
            let key = (kind.to_string(), message);
            let seen = s.distinct.get(&key).map_or(0, |(n, _)| *n);
            let path = dir.join(format!("{kind}-{:03}-case{case}.{}", s.distinct.len(), target.ext));
            // Up to three inputs per distinct failure.
            if seen < 3 && std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&path, &input).is_ok() {
                let note = format!(
                    "target {}\nseed {}\ncase {case}\nkind {kind}\n{}\n\nreproduce: fno-fuzz --target {} --reproduce {}\n",
                    target.name,
                    opts.seed,
                    key.1,
                    target.name,
                    path.display()
                );
                let _ = std::fs::write(path.with_extension(format!("{}.txt", target.ext)), note);
            }
            let entry = s.distinct.entry(key).or_insert((0, path));
            entry.0 += 1;
        }
        if progress && last_progress.elapsed() >= Duration::from_secs(10) {
            last_progress = Instant::now();
            eprintln!(
                "[{}] {:>5.0} s: {} cases ({:.0}/s), {} failures",
                target.name,
                start.elapsed().as_secs_f64(),
                s.cases,
                s.cases as f64 / start.elapsed().as_secs_f64(),
                s.failed()
            );
        }
    }
    s.elapsed = start.elapsed();
    let _ = worker.death();
    s
}

/// One summary line per target and one per distinct failure.
pub fn summary_text(target: &Target, s: &Summary) -> String {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let failures: Vec<String> = KINDS
        .iter()
        .map(|k| format!("{} {k}", s.failures.get(k).unwrap_or(&0)))
        .collect();
    let mut out = format!(
        "{}: {} cases in {:.0} s ({:.0}/s): {} ok, {} clean errors; failures: {}\n",
        target.name,
        s.cases,
        secs,
        s.cases as f64 / secs,
        s.ok,
        s.errors,
        failures.join(", ")
    );
    for ((kind, message), (n, path)) in &s.distinct {
        out += &format!("    {kind} ×{n}: {message}\n        input: {}\n", path.display());
    }
    out
}

/// Runs every target for `seconds` each, `jobs` at a time; true if any failed.
pub fn run(opts: &Options) -> bool {
    let progress = std::io::stderr().is_terminal();
    let queue = Mutex::new(opts.targets.iter().copied());
    let any_failed = Mutex::new(false);
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| loop {
                let Some(target) = queue.lock().unwrap().next() else {
                    break;
                };
                let s = fuzz_target(target, opts, progress);
                if s.failed() > 0 {
                    *any_failed.lock().unwrap() = true;
                }
                print!("{}", summary_text(target, &s));
                let _ = std::io::stdout().flush();
            });
        }
    });
    let failed = *any_failed.lock().unwrap();
    failed
}

/// Runs one saved input in this process, without catching anything, so that
/// a panic prints its backtrace (with RUST_BACKTRACE=1).
pub fn reproduce(target: &'static Target, input: &Path) -> Result<(), String> {
    let bytes = std::fs::read(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let scratch = seeds::Scratch::new("reproduce");
    (target.run)(&scratch.0, &bytes)
}

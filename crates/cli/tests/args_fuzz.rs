//! Fuzzing what users type: every numeric flag of fft, nufft, demo, data
//! generate, train and infer gets boundary numbers (0, 1, 2^31±1, 2^32, 2^53,
//! 2^63, u64::MAX, negatives, NaN, inf, …) beside otherwise valid arguments,
//! each run under a 4 GB address-space cap and a time limit. Every case must
//! end in success or in one `error:` line with exit code 2: no panic, abort,
//! signal, hang or allocation past the cap.
//!
//! CI draws `FNO_ARGS_FUZZ_CASES` cases (default 60) from a printed seed
//! (`FNO_ARGS_FUZZ_SEED` replays one); a long run sets a larger count.
//! Values that only ask for long, legitimate work (many epochs) are not drawn.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fno_datasets::npy::{self, DType, NpyArray};

const NUMBERS: [&str; 22] = [
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-3",
    "2147483647",
    "2147483648",
    "2147483649",
    "4294967296",
    "9007199254740992",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e300",
    "1e-300",
    "NaN",
    "inf",
    "-inf",
    "0.5",
    "",
    "1,2,3,4",
];

/// Address-space cap of a case (KiB, `ulimit -v`), and its time limit.
const CAP_KIB: u64 = 4 << 20;
const LIMIT: Duration = Duration::from_secs(60);

struct Inputs {
    dir: PathBuf,
}

impl Inputs {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("fno-args-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, shape: Vec<usize>, dtype, data: Vec<f32>| {
            npy::write(dir.join(name), &NpyArray::new(shape, dtype, data)).unwrap()
        };
        write(
            "x.npy",
            vec![4, 16],
            DType::F32,
            (0..64).map(|i| (i % 5) as f32).collect(),
        );
        write(
            "p.npy",
            vec![32],
            DType::F32,
            (0..32).map(|i| i as f32 * 0.19).collect(),
        );
        write("v.npy", vec![32], DType::F32, (0..32).map(|i| (i % 3) as f32).collect());
        // A small job: 8 generated 16² Darcy samples, one epoch.
        let config = format!(
            "[model]\nn_modes = [4, 4]\nin_channels = 1\nout_channels = 1\nhidden_channels = 4\nn_layers = 1\n\
             [data.train]\ngenerate = {{ pde = \"darcy\", n = 8, res = 16, seed = 0 }}\n\
             [[data.tests]]\ngenerate = {{ pde = \"darcy\", n = 2, res = 16, seed = 1 }}\n\
             [optim]\nepochs = 1\nbatch_size = 4\nlr = 1e-3\nweight_decay = 0.0\nloss = \"l2\"\n\
             [run]\nout_dir = \"{}\"\nplot_samples = 0\n",
            dir.join("run").display()
        );
        std::fs::write(dir.join("train.toml"), config).unwrap();
        Inputs { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }
}

/// The commands and their numeric flags, each with otherwise valid arguments.
fn command(inputs: &Inputs, which: usize, flag_pick: usize, value: &str) -> Vec<String> {
    let (x, p, v, out) = (
        inputs.path("x.npy"),
        inputs.path("p.npy"),
        inputs.path("v.npy"),
        inputs.path("o.npy"),
    );
    let (base, flags): (Vec<String>, &[&str]) = match which % 6 {
        0 => (
            vec!["fft".into(), "--input".into(), x, "--output".into(), out],
            &["--n", "--modes", "--axes"],
        ),
        1 => (
            vec!["nufft", "--type", "1", "--points", &p, "--values", &v, "--output", &out]
                .into_iter()
                .map(String::from)
                .collect(),
            &["--modes", "--eps", "--upsampling", "--isign"],
        ),
        2 => (vec!["demo".into()], &["--size", "--modes"]),
        3 => (
            vec![
                "data".into(),
                "generate".into(),
                "burgers".into(),
                "--out".into(),
                inputs.path("d.npz"),
            ],
            &["--n", "--res", "--fine", "--seed", "--viscosity", "--time", "--dt"],
        ),
        4 => (
            vec![
                "train".into(),
                "--config".into(),
                inputs.path("train.toml"),
                "--overwrite".into(),
            ],
            &["--devices"],
        ),
        _ => (
            vec![
                "infer".into(),
                "--checkpoint".into(),
                inputs.path("none.safetensors"),
                "--input".into(),
            ]
            .into_iter()
            .chain([inputs.path("x.npy"), "--output".into(), inputs.path("y.npy")])
            .collect(),
            &["--batch-size"],
        ),
    };
    let flag = flags[flag_pick % flags.len()];
    let mut args = base;
    // Flags the base sets are given again last (clap takes the last), so the fuzzed value speaks.
    args.extend([format!("{flag}={value}"), "--backend".into(), "cpu".into()]);
    if which % 6 == 3 {
        // data generate takes no --backend; its required sizes come first.
        args.truncate(args.len() - 2);
        for (f, d) in [("--n", "2"), ("--res", "16")] {
            if f != flag {
                args.extend([f.into(), d.into()]);
            }
        }
    }
    args
}

/// Runs one case under the cap and the limit: `Err` says what went wrong.
fn run_case(args: &[String], work: &Path) -> Result<(), String> {
    let script = format!("ulimit -v {CAP_KIB}; exec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_fno")])
        .args(args)
        .current_dir(work)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            return Err(format!("still running after {LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(2) if stderr.lines().count() == 1 && stderr.starts_with("error: ") => Ok(()),
        code => Err(format!("exit {code:?} (None: a signal), stderr: {stderr}")),
    }
}

#[test]
fn numeric_flags_end_in_success_or_one_error_line() {
    let seed: u64 = std::env::var("FNO_ARGS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(fno_testing::fresh_seed);
    let cases: usize = std::env::var("FNO_ARGS_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    println!("seed {seed}, {cases} cases");
    let inputs = Inputs::new();
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as usize
    };
    let mut failures = Vec::new();
    let start = Instant::now();
    for case in 0..cases {
        let value = NUMBERS[next() % NUMBERS.len()];
        let args = command(&inputs, next(), next(), value);
        if let Err(what) = run_case(&args, &inputs.dir) {
            failures.push(format!("case {case}: fno {}: {what}", args.join(" ")));
        }
    }
    println!("{cases} cases in {:.1} s", start.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

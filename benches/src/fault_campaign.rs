//! A fault-injection campaign against the FFT's checksums (`fft/fault.rs`):
//! single-bit flips drawn at random over stage launches, passes, sites
//! (register, shared memory), tiles, units, values and the 32 bits, on
//! power-of-two and any-size plans; and fault-free runs counting false
//! positives. Prints one JSON line per case and a table by bit position.
//!
//! Usage: `fault_campaign [cuda|wgpu] [--faults N] [--clean-runs N]`
//! (defaults 1500 faults and 20 fault-free runs a case; the wgpu default is
//! 40 and 2, for lavapipe).
//!
//! A flip is *injected* when it found its value (a thread without work in
//! that pass has none), *detected* when its signal's checksums disagreed,
//! *corrected* when the correcting plan's repair agreed and gave
//! the fault-free output (relative L2 ≤ 1e-6). An undetected flip is
//! *harmless* when every signal's output stayed within 1e-6 (relative L2,
//! the transform's round-off) of the fault-free one, *below tolerance* when
//! within 1e-4, and *missed* beyond.

use cubecl::prelude::*;
use fno_kernels::fft::{DeviceFft, Direction, FaultInjection, FaultTolerance, FftDesc, FftKind, FftPlan};
use fno_testing::{relative_l2_f32, uniform_f32, worst_signal_deviation};

/// Relative L2 deviation from the fault-free output within which a result
/// counts as the same transform (round-off).
const SAME: f64 = 1e-6;
/// Per-signal deviation an undetected fault may leave below the tolerance.
const BELOW_TOLERANCE: f64 = 1e-4;

fn cases() -> Vec<(&'static str, FftDesc)> {
    let c2c = |n: usize, batch: usize| FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward);
    vec![
        ("c2c_256", c2c(256, 1024)),
        ("c2c_1024", c2c(1024, 256)),
        ("c2c_4096", c2c(4096, 64)),
        (
            "r2c_1024",
            FftDesc::new(&[256, 1024], &[-1], FftKind::R2C, Direction::Forward),
        ),
        (
            "rfft2_128",
            FftDesc::new(&[16, 128, 128], &[-2, -1], FftKind::R2C, Direction::Forward),
        ),
        ("c2c_1000", c2c(1000, 256)),
        ("c2c_1536", c2c(1536, 128)),
        ("c2c_211_rader", c2c(211, 1024)),
        ("c2c_4099_bluestein", c2c(4099, 64)),
    ]
}

#[derive(Clone, Copy, Default)]
struct Tally {
    injected: u64,
    detected: u64,
    corrected: u64,
    harmless: u64,
    below_tolerance: u64,
    missed: u64,
    /// Detected but not corrected to the fault-free output.
    uncorrected: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.injected += o.injected;
        self.detected += o.detected;
        self.corrected += o.corrected;
        self.harmless += o.harmless;
        self.below_tolerance += o.below_tolerance;
        self.missed += o.missed;
        self.uncorrected += o.uncorrected;
    }
}

fn execute<R: Runtime>(
    client: &ComputeClient<R>,
    device: &DeviceFft<R>,
    input: &cubecl::server::Handle,
    fault: Option<&FaultInjection>,
) -> Vec<f32> {
    let output = client.empty(device.plan().output_floats() * 4);
    match fault {
        Some(f) => device.execute_with_fault(input, &output, f).unwrap(),
        None => device.execute(input, &output).unwrap(),
    }
    f32::from_bytes(&client.read_one(output).unwrap()).to_vec()
}

fn campaign<R: Runtime>(client: ComputeClient<R>, faults: usize, clean_runs: usize) {
    let mut by_bit = [Tally::default(); 32];
    let (mut transforms, mut false_positives) = (0u64, 0u64);
    for (c, (name, desc)) in cases().into_iter().enumerate() {
        let plan = |tolerance| FftPlan::new(desc.clone().fault_tolerance(tolerance)).unwrap();
        let mut detect = plan(FaultTolerance::Detect).on_device(&client).unwrap();
        let mut correct = plan(FaultTolerance::Correct).on_device(&client).unwrap();
        let signals: usize = desc.shape[..desc.shape.len() - desc.axes.len()].iter().product();
        // Fault-free runs on fresh inputs: every flag is a false positive.
        let mut flagged = 0;
        for run in 0..clean_runs {
            let input = client.create_from_slice(f32::as_bytes(&uniform_f32(detect.plan().input_floats(), run as u64)));
            execute(&client, &detect, &input, None);
            execute(&client, &correct, &input, None);
            transforms += 2 * signals as u64;
        }
        flagged += detect.fault_counts().detected + correct.fault_counts().detected;
        false_positives += flagged;
        let input = client.create_from_slice(f32::as_bytes(&uniform_f32(
            detect.plan().input_floats(),
            1000 + c as u64,
        )));
        let clean = execute(&client, &detect, &input, None);
        let clean_corrected = execute(&client, &correct, &input, None);
        let targets = detect.fault_targets();
        let mut case = Tally::default();
        let mut drawn = 0u64;
        while case.injected < faults as u64 && drawn < 4 * faults as u64 {
            let fault = FaultInjection::drawn(&targets, (c as u64) << 32 | drawn).unwrap();
            drawn += 1;
            detect.reset_fault_counts();
            let got = execute(&client, &detect, &input, Some(&fault));
            let counts = detect.fault_counts();
            if counts.injected == 0 {
                continue;
            }
            let mut t = Tally {
                injected: 1,
                ..Tally::default()
            };
            if counts.detected > 0 {
                t.detected = 1;
                correct.reset_fault_counts();
                let fixed = execute(&client, &correct, &input, Some(&fault));
                let counts = correct.fault_counts();
                if counts.corrected == 1 && relative_l2_f32(&fixed, &clean_corrected) <= SAME {
                    t.corrected = 1;
                } else {
                    t.uncorrected = 1;
                }
            } else {
                // The worst signal's deviation (an image for a 2D plan).
                let deviation = worst_signal_deviation(&got, &clean, signals);
                if deviation <= SAME {
                    t.harmless = 1;
                } else if deviation <= BELOW_TOLERANCE {
                    t.below_tolerance = 1;
                } else {
                    t.missed = 1;
                    eprintln!("missed: {name} {fault:?}: deviation {deviation:.3e}");
                }
            }
            case.add(&t);
            by_bit[fault.bit as usize].add(&t);
        }
        println!(
            "{{\"case\": \"{name}\", \"shape\": {:?}, \"stage_launches\": {}, \"injected\": {}, \"detected\": {}, \"corrected\": {}, \"uncorrected\": {}, \"harmless\": {}, \"below_tolerance\": {}, \"missed\": {}, \"clean_transforms\": {}, \"false_positives\": {flagged}}}",
            desc.shape,
            targets.len(),
            case.injected,
            case.detected,
            case.corrected,
            case.uncorrected,
            case.harmless,
            case.below_tolerance,
            case.missed,
            2 * clean_runs * signals,
        );
    }
    let mut total = Tally::default();
    println!("\n| bit | injected | detected | corrected | undetected ≤ 1e-6 | undetected ≤ 1e-4 | missed |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (bit, t) in by_bit.iter().enumerate() {
        total.add(t);
        println!(
            "| {bit} | {} | {} | {} | {} | {} | {} |",
            t.injected, t.detected, t.corrected, t.harmless, t.below_tolerance, t.missed
        );
    }
    println!(
        "| all | {} | {} | {} | {} | {} | {} |",
        total.injected, total.detected, total.corrected, total.harmless, total.below_tolerance, total.missed
    );
    println!(
        "\nfault-free: {transforms} transforms, {false_positives} false positives; detected not corrected: {}",
        total.uncorrected
    );
}

fn count_arg(args: &[String], name: &str, default: usize) -> usize {
    match args.iter().position(|a| a == name).map(|i| args.get(i + 1)) {
        None => default,
        Some(Some(v)) if v.parse::<usize>().is_ok() => v.parse().unwrap(),
        Some(v) => {
            eprintln!("error: {name} takes a count, got {v:?}");
            std::process::exit(2);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        #[cfg(feature = "wgpu")]
        Some("wgpu") => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            campaign(
                WgpuRuntime::client(&WgpuDevice::default()),
                count_arg(&args, "--faults", 40),
                count_arg(&args, "--clean-runs", 2),
            )
        }
        #[cfg(feature = "cuda")]
        Some("cuda") | None => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            campaign(
                CudaRuntime::client(&CudaDevice { index: 0 }),
                count_arg(&args, "--faults", 1500),
                count_arg(&args, "--clean-runs", 20),
            )
        }
        other => {
            eprintln!("error: unknown or uncompiled backend {other:?} (expected cuda or wgpu)");
            std::process::exit(2);
        }
    }
}

//! Fault tolerance by checksums (`fft/fault.rs`): checked plans compute what
//! unchecked ones do and flag nothing on fault-free runs; single-bit flips
//! injected into registers and shared memory are detected when they matter
//! and corrected by the repair launch.

use fno_kernels::fft::{FaultCounts, FaultInjection, FaultSite, FaultTolerance};
use fno_testing::worst_signal_deviation;

use super::*;

/// One of each kind of stage a checked plan runs: radix passes (powers of
/// two, 7-smooth, a split prime first pass), Rader's and Bluestein's
/// convolutions, packed and widened real transforms both ways, truncation,
/// 2D column stages and a four-step length.
fn checked_cases() -> Vec<FftDesc> {
    let c2c = |shape: &[usize], axes: &[isize]| FftDesc::new(shape, axes, FftKind::C2C, Direction::Forward);
    vec![
        c2c(&[16, 256], &[-1]),
        c2c(&[8, 1024], &[-1]).norm(Norm::Ortho),
        FftDesc::new(&[12, 360], &[-1], FftKind::C2C, Direction::Inverse),
        c2c(&[6, 17 * 8], &[-1]),
        c2c(&[5, 211], &[-1]),
        c2c(&[4, 4099], &[-1]),
        c2c(&[2, 1 << 15], &[-1]),
        c2c(&[64, 512], &[-1]).modes(&[64]),
        FftDesc::new(&[8, 512], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[8, 85], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[8, 257], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[512]),
        FftDesc::new(&[4, 64, 64], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[16, 16]),
        FftDesc::new(&[2, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward),
    ]
}

fn counts_of<R: Runtime>(device: &DeviceFft<R>) -> FaultCounts {
    device.fault_counts()
}

/// Checked plans (detect and correct) match the oracle within the unchecked
/// bound on random, constant and impulse inputs, and count no fault.
#[test]
fn checked_plans_flag_no_fault_free_tile() {
    let client = client();
    let seed = drawn_seed();
    let mut errors = Vec::new();
    for (c, desc) in checked_cases().into_iter().enumerate() {
        for tolerance in [FaultTolerance::Detect, FaultTolerance::Correct] {
            let desc = desc.clone().fault_tolerance(tolerance);
            let device = device_with(&client, &desc, DeviceOptions::default());
            let e = error_of(&client, &device, seed + c as u64);
            let bound = if desc.shape.iter().any(|&n| n > 4096) {
                LONG_BOUND
            } else {
                BOUND
            };
            assert!(e <= bound, "{desc:?} (seed {seed}): error {e:.3e}");
            errors.push((format!("{desc:?}"), e));
            let plan = device.plan();
            let floats = plan.input_floats();
            let constant = vec![0.75f32; floats];
            let mut impulse = vec![0.0f32; floats];
            impulse[0] = 1.0e3;
            for input in [constant, impulse] {
                let in_h = client.create_from_slice(f32::as_bytes(&input));
                let out_h = client.empty(plan.output_floats() * 4);
                device.execute(&in_h, &out_h).unwrap();
            }
            let counts = counts_of(&device);
            assert_eq!(
                counts,
                FaultCounts::default(),
                "{desc:?}: fault-free runs counted faults"
            );
        }
    }
    report("checked_plans_flag_no_fault_free_tile", &errors);
}

/// Resident cubes (staged tiles; plain loads on wgpu) check each tile they
/// walk, and transform a faulty one again from global memory.
#[test]
fn resident_cubes_check_and_correct_their_tiles() {
    let client = client();
    let seed = drawn_seed();
    let options = DeviceOptions {
        prefetch: TilePrefetch::Always,
        resident_cubes: Some(3),
        ..DeviceOptions::default()
    };
    let desc = FftDesc::new(&[12, 1024], &[-1], FftKind::C2C, Direction::Forward);
    let detect = device_with(&client, &desc.clone().fault_tolerance(FaultTolerance::Detect), options);
    let correct = device_with(&client, &desc.clone().fault_tolerance(FaultTolerance::Correct), options);
    assert!(
        detect.recipe().stages().all(|cfg| cfg.prefetch.is_some()),
        "the stage is not resident"
    );
    let input = uniform_f32(detect.plan().input_floats(), seed);
    let expected = detect.plan().execute_cpu(&widen(&input)).unwrap();
    let clean = run(&client, &correct, &input, None);
    assert!(relative_l2(&widen(&clean), &expected) <= BOUND);
    let shape = &correct.fault_targets()[0];
    let mut draw = Draw(seed);
    let mut corrected = 0;
    for pass in 0..shape.passes {
        for site in [FaultSite::Register, FaultSite::Shared] {
            let fault = FaultInjection {
                launch: 0,
                pass,
                site,
                tile: draw.below(shape.tiles as u64) as u32,
                unit: draw.below(shape.units as u64) as u32,
                value: draw.below(1 << 20) as u32,
                bit: 30,
            };
            let what = format!("{fault:?} (seed {seed})");
            let fixed = run(&client, &correct, &input, Some(&fault));
            let counts = correct.fault_counts();
            if counts.injected == corrected {
                continue;
            }
            corrected += 1;
            assert_eq!((counts.detected, counts.corrected), (corrected, corrected), "{what}");
            // The repair runs unstaged: the same transform, rounded alike or nearly.
            let e = relative_l2(&widen(&fixed), &widen(&clean));
            assert!(e <= 1e-6, "{what}: corrected output {e:.3e} from the fault-free one");
        }
    }
    assert!(corrected >= 2, "only {corrected} faults injected");
    assert_eq!(counts_of(&detect), FaultCounts::default());
}

/// A small deterministic generator for the campaign's choices.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

fn run<R: Runtime>(
    client: &ComputeClient<R>,
    device: &DeviceFft<R>,
    input: &[f32],
    fault: Option<&FaultInjection>,
) -> Vec<f32> {
    let plan = device.plan();
    let in_h = client.create_from_slice(f32::as_bytes(input));
    let out_h = client.create_from_slice(f32::as_bytes(&vec![POISON; plan.output_floats()]));
    match fault {
        Some(f) => device.execute_with_fault(&in_h, &out_h, f).unwrap(),
        None => device.execute(&in_h, &out_h).unwrap(),
    }
    f32::from_bytes(&client.read_one(out_h).unwrap()).to_vec()
}

/// How far one signal's output may move from the fault-free one under a
/// fault the checksums let through: their tolerance (16u·√(log₂m + 1) of the
/// terms' norm) passes a DFT stage's faults up to ≈ 4e-5 of the signal, and
/// inside a Rader or Bluestein convolution's forward transform, where the
/// kernel spectrum weighs some values lightly, up to ≈ 6e-4 (Rader's 211:
/// docs/abft.md, "What escapes").
const ESCAPE_BOUND: f64 = 1e-3;

/// Flips of high bits (exponent and sign) and a low mantissa bit into
/// registers and shared memory of every stage: a detected one is corrected
/// to the fault-free output; one the checksums let through (a low bit, or a
/// high bit of a value near zero) moved no signal beyond [`ESCAPE_BOUND`].
#[test]
fn injected_faults_are_detected_and_corrected() {
    let client = client();
    let seed = drawn_seed();
    let mut draw = Draw(seed);
    let cases = [
        FftDesc::new(&[16, 256], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[5, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[4, 64, 64], &[-2, -1], FftKind::R2C, Direction::Forward),
    ];
    let (mut injected, mut escaped, mut worst_escape) = (0, 0, 0.0f64);
    for (c, desc) in cases.into_iter().enumerate() {
        let mut detect = device_with(
            &client,
            &desc.clone().fault_tolerance(FaultTolerance::Detect),
            DeviceOptions::default(),
        );
        let mut correct = device_with(
            &client,
            &desc.clone().fault_tolerance(FaultTolerance::Correct),
            DeviceOptions::default(),
        );
        let input = uniform_f32(detect.plan().input_floats(), seed + c as u64);
        let expected = detect.plan().execute_cpu(&widen(&input)).unwrap();
        let clean = run(&client, &detect, &input, None);
        assert!(
            relative_l2(&widen(&clean), &expected) <= BOUND,
            "{desc:?} (seed {seed})"
        );
        let clean_corrected = run(&client, &correct, &input, None);
        for (launch, stage) in detect.fault_targets().iter().enumerate() {
            for pass in 0..stage.passes {
                for site in [FaultSite::Register, FaultSite::Shared] {
                    for bit in [31u32, 30, 27, 24, 3] {
                        let fault = FaultInjection {
                            launch,
                            pass,
                            site,
                            tile: draw.below(stage.tiles as u64) as u32,
                            unit: draw.below(stage.units as u64) as u32,
                            value: draw.below(1 << 20) as u32,
                            bit,
                        };
                        let what = format!("{desc:?} {fault:?} (seed {seed})");
                        detect.reset_fault_counts();
                        let got = run(&client, &detect, &input, Some(&fault));
                        let counts = detect.fault_counts();
                        if counts.injected == 0 {
                            // The value picked lies past the pass's work (a ragged thread), or the pass writes no tile.
                            assert_eq!(got, clean, "{what}: nothing injected, yet the output changed");
                            continue;
                        }
                        injected += 1;
                        if counts.detected == 0 {
                            let deviation = worst_signal_deviation(&got, &clean, desc.shape[0]);
                            assert!(
                                deviation <= ESCAPE_BOUND,
                                "{what}: an undetected fault moved a signal by {deviation:.3e}"
                            );
                            escaped += 1;
                            worst_escape = worst_escape.max(deviation);
                            continue;
                        }
                        assert_eq!(counts.detected, 1, "{what}");
                        correct.reset_fault_counts();
                        let fixed = run(&client, &correct, &input, Some(&fault));
                        let counts = correct.fault_counts();
                        assert_eq!((counts.detected, counts.corrected), (1, 1), "{what}");
                        assert_eq!(
                            fixed, clean_corrected,
                            "{what}: the corrected output differs from the fault-free one"
                        );
                    }
                }
            }
        }
    }
    println!("injected {injected} faults, {escaped} undetected, moving a signal by at most {worst_escape:.1e}");
    assert!(injected > 20, "the campaign injected only {injected} faults");
    // Four of the five bits flipped are high ones, which most values feel.
    assert!(
        2 * escaped <= injected,
        "{escaped} of {injected} faults went undetected"
    );
}

/// Injection asks for a checked plan and a stage launch it has.
#[test]
fn injection_refuses_unchecked_plans() {
    let client = client();
    let desc = FftDesc::new(&[4, 64], &[-1], FftKind::C2C, Direction::Forward);
    let fault = FaultInjection {
        launch: 0,
        pass: 0,
        site: FaultSite::Register,
        tile: 0,
        unit: 0,
        value: 0,
        bit: 30,
    };
    let unchecked = device_with(&client, &desc, DeviceOptions::default());
    let buffer = client.create_from_slice(f32::as_bytes(&[0.0; 512]));
    let out = client.empty(512 * 4);
    assert!(unchecked.execute_with_fault(&buffer, &out, &fault).is_err());
    let checked = device_with(
        &client,
        &desc.fault_tolerance(FaultTolerance::Detect),
        DeviceOptions::default(),
    );
    let far = FaultInjection { launch: 3, ..fault };
    assert!(checked.execute_with_fault(&buffer, &out, &far).is_err());
}

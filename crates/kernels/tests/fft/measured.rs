//! Measured planning: candidate lowerings timed on the device, the fastest
//! kept, which must match the oracle like any other plan.

use super::*;

/// Measured planning lowers each candidate (Rader's rows in cubes of each
/// size, contiguous strides at run time and compiled in, a plane launch or
/// separate ones), times them and
/// keeps the fastest, which matches the oracle; a plan whose choices the
/// caller fixed times nothing.
#[test]
fn measured_plans_time_their_candidate_lowerings() {
    let client = client();
    let limits = DeviceLimits::of(&client);
    let mut seed = drawn_seed();
    let mut errors = Vec::new();
    for desc in [
        FftDesc::new(&[64, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[64, 421], &[-1], FftKind::R2C, Direction::Forward),
    ] {
        let plan = FftPlan::new(desc.clone()).unwrap();
        let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
        let timed = device.measurements();
        let cubes: Vec<(Vec<usize>, Vec<usize>, usize)> = timed
            .iter()
            .map(|m| {
                let recipe = lower(&plan, &limits, m.options).unwrap();
                (
                    stage_tiles(&recipe),
                    stage_threads(&recipe),
                    unit_stride_stages(&recipe),
                )
            })
            .collect();
        // Three cube sizes, each with strides at run time and compiled.
        assert_eq!(timed.len(), 6, "{desc:?}: {timed:?}");
        for (i, c) in cubes.iter().enumerate() {
            assert!(!cubes[..i].contains(c), "{desc:?}: {cubes:?} timed twice");
        }
        assert!(timed.iter().all(|m| m.ms > 0.0 && m.ms.is_finite()), "{timed:?}");
        let fastest = timed.iter().min_by(|a, b| a.ms.total_cmp(&b.ms)).unwrap();
        assert_eq!(device.options(), fastest.options, "{desc:?}");
        let e = error_of(&client, &device, seed);
        assert!(e <= BOUND, "{desc:?} (seed {seed}): {e:.3e}");
        errors.push((format!("{desc:?}"), e));
        seed += 1;
    }
    // Without Rader's rows only the strides vary.
    let plan = FftPlan::new(FftDesc::new(&[64, 256], &[-1], FftKind::C2C, Direction::Forward)).unwrap();
    let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
    let strides: Vec<UnitStrides> = device.measurements().iter().map(|m| m.options.unit_strides).collect();
    assert_eq!(strides, [UnitStrides::Runtime, UnitStrides::Compiled]);
    errors.push((
        format!("measured C2C 256 (seed {seed})"),
        error_of(&client, &device, seed),
    ));
    seed += 1;
    // A plane the rules take is timed against separate launches with both
    // strides (the plane kernel has no compiled strides); a plane asked for is not.
    let plan = FftPlan::new(FftDesc::new(&[8, 32, 48], &[-2, -1], FftKind::R2C, Direction::Forward)).unwrap();
    assert_eq!(lower(&plan, &limits, FFT_ONLY).unwrap().planes().count(), 1);
    let device = plan.on_device_measured(&client, FFT_ONLY).unwrap();
    let planes: Vec<PlaneFusion> = device.measurements().iter().map(|m| m.options.plane).collect();
    assert_eq!(planes, [PlaneFusion::Auto, PlaneFusion::Never, PlaneFusion::Never]);
    errors.push((
        format!("measured rfft2 32×48 (seed {seed})"),
        error_of(&client, &device, seed),
    ));
    let always = DeviceOptions {
        plane: PlaneFusion::Always,
        ..FFT_ONLY
    };
    let device = plan.on_device_measured(&client, always).unwrap();
    assert!(device
        .measurements()
        .iter()
        .all(|m| m.options.plane == PlaneFusion::Always));
    assert_eq!(device.recipe().planes().count(), 1);
    let fixed = DeviceOptions {
        convolution_row_threads: Some(64),
        unit_strides: UnitStrides::Compiled,
        ..FFT_ONLY
    };
    let plan = FftPlan::new(FftDesc::new(&[64, 211], &[-1], FftKind::C2C, Direction::Forward)).unwrap();
    let device = plan.on_device_measured(&client, fixed).unwrap();
    assert!(device.measurements().is_empty());
    assert_eq!(device.options(), fixed);
    assert_eq!(unit_stride_stages(device.recipe()), 1);
    let threads = stage_threads(device.recipe())[0] * stage_tiles(device.recipe())[0];
    assert!(threads <= 64, "{threads} threads a cube of 211's rows");
    for (case, e) in &errors {
        assert!(*e <= BOUND, "{case}: {e:.3e}");
    }
    report("measured_plans_time_their_candidate_lowerings", &errors);
}

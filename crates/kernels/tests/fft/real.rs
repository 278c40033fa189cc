//! Real transforms (R2C, C2R) beyond the packed half-length ones of the other
//! files: odd lengths run as twins or widened, and the untangling of the
//! packed spectrum. The planner's choices are asserted in `planner.rs`.

use super::*;

/// Odd real transforms as twins, every axis an FFT.
pub(super) const TWINS: DeviceOptions = SEPARATE_FFTS;
/// Odd real transforms widened to complex ones.
pub(super) const WIDEN: DeviceOptions = DeviceOptions {
    odd_real: OddReal::Widen,
    ..TWINS
};

fn r2c(shape: &[usize], axis: isize) -> FftDesc {
    FftDesc::new(shape, &[axis], FftKind::R2C, Direction::Forward)
}

fn c2r(shape: &[usize], axis: isize, n: usize) -> FftDesc {
    FftDesc::new(shape, &[axis], FftKind::C2R, Direction::Inverse).lengths(&[n])
}

/// Odd real transforms that run as twins under [`TWINS`] on every device.
pub(super) fn twinned_cases() -> Vec<FftDesc> {
    let mut twinned = Vec::new();
    for n in [9usize, 15, 45, 109, 211, 243, 625, 1021] {
        twinned.push(r2c(&[5, n], -1));
        twinned.push(c2r(&[3, n / 2 + 1], -1, n));
    }
    twinned.extend([
        r2c(&[2, 3, 45], -1),
        r2c(&[3, 135], -1).modes(&[20]),
        r2c(&[3, 211], -1).modes(&[31]).norm(Norm::Ortho),
        r2c(&[5, 50], -1).lengths(&[45]),
        c2r(&[3, 20], -1, 75).modes(&[20]),
        c2r(&[7, 10], -1, 211).modes(&[10]).norm(Norm::Forward),
        // Columns: signals side by side, an odd count of them.
        r2c(&[3, 75, 5], 1),
        c2r(&[2, 38, 7], 1, 75),
        r2c(&[2, 45, 3], 1).modes(&[12]),
        FftDesc::new(&[3, 15, 21], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[3, 15, 11], &[-2, -1], FftKind::C2R, Direction::Inverse).lengths(&[15, 21]),
    ]);
    twinned
}

/// Odd real transforms that stay widened under [`TWINS`]: a lone signal, and
/// lengths with a prime radix above 7.
pub(super) fn widened_cases() -> [FftDesc; 3] {
    [r2c(&[1, 45], -1), r2c(&[4, 85], -1), c2r(&[4, 71], -1, 141)]
}

/// Odd real transforms whose convolution fits one cube only on CUDA
/// (Bluestein's 4099, 8232 points; Rader's 421 over rows, one butterfly of
/// radix 5 a thread): twins there.
pub(super) fn cuda_twinned_cases() -> [FftDesc; 4] {
    [
        r2c(&[5, 4099], -1),
        c2r(&[3, 2050], -1, 4099),
        r2c(&[3, 421], -1),
        r2c(&[2, 421, 3], 1),
    ]
}

/// Checks the twin and widened cases, and `extra` ones that must run in
/// twins too, on `client`, as twins and widened (inputs from `seed` on).
pub(super) fn check_odd_real<R: Runtime>(client: &ComputeClient<R>, test: &str, extra: &[FftDesc], seed: u64) {
    let mut twinned = twinned_cases();
    twinned.extend_from_slice(extra);
    // Each case really runs as twins, or widened, as the test means it to.
    let limits = DeviceLimits::of(client);
    let twins = |desc: &FftDesc, options| twin_stages(&lowered(desc, &limits, options));
    for desc in &twinned {
        assert_eq!(twins(desc, TWINS), 1, "{desc:?}");
        assert_eq!(twins(desc, WIDEN), 0, "{desc:?}");
    }
    for desc in &widened_cases() {
        assert_eq!(twins(desc, TWINS), 0, "{desc:?}");
    }
    let mut seed = seed;
    let mut errors = Vec::new();
    for desc in twinned.into_iter().chain(widened_cases()) {
        for options in [TWINS, WIDEN] {
            let e = check_with(client, &desc, seed, options);
            assert!(e <= BOUND, "{desc:?} {options:?} (seed {seed}): {e:.3e}");
            errors.push((format!("{desc:?} {options:?}"), e));
            seed += 1;
        }
    }
    report(test, &errors);
}

/// Real transforms of odd lengths run two signals per complex transform
/// (`OddReal::Twins`): signal `2s` as the real part of slot `s`, `2s + 1` as
/// its imaginary part, their spectra separated by symmetry. Odd batch counts
/// (the last slot alone), several batch dims, columns, windows, crops, mixed
/// radix, Rader and Bluestein, against the oracle both ways, the planner's
/// choice asserted: a lone signal, and lengths with a prime radix above 7,
/// stay widened.
#[test]
fn odd_real_transforms_pair_signals() {
    check_odd_real(&client(), "odd_real_transforms_pair_signals", &[], drawn_seed());
}

/// Real transforms untangle bins `k` and `n − k` in the last pass's registers
/// where every thread of that pass gets a butterfly and its mirror without
/// holding more values than the plan's largest radix (R2C 1000 and 500: a
/// radix-5 last pass after radix 10), through shared memory otherwise; every
/// window of both against the oracle. (Which stages untangle in registers is
/// a crate-private rule, checked by the crate's unit tests.)
#[test]
fn real_transforms_untangle_in_registers_where_threads_pair_up() {
    let in_registers = [1000usize, 500];
    let in_shared = [192usize, 256, 1024];
    let cases: Vec<FftDesc> = in_registers
        .iter()
        .chain(&in_shared)
        .flat_map(|&n| {
            [
                FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward),
                FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward).modes(&[n / 8]),
                FftDesc::new(&[2, n, 3], &[1], FftKind::R2C, Direction::Forward),
            ]
        })
        .collect();
    check_all(
        "real_transforms_untangle_in_registers_where_threads_pair_up",
        drawn_seed(),
        cases,
        DEFAULT,
    );
}

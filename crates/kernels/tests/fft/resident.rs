//! Resident cubes: stages whose cubes walk many tiles, staging the next one's
//! input while transforming the current one, and the radix order of stages
//! that read a staged tile. The planner's choices are asserted in
//! `planner.rs`; the CUDA runs (asynchronous copies) are in `cuda.rs`.

use super::*;

/// Every stage that can stays resident, three cubes walking its tiles.
pub(super) const RESIDENT: DeviceOptions = DeviceOptions {
    prefetch: TilePrefetch::Always,
    resident_cubes: Some(3),
    ..SEPARATE_FFTS
};

/// Stages whose cubes stay resident and walk many tiles, staging the next
/// one's input while transforming the current one: rows of many lengths,
/// column tiles with a ragged last tile, load windows, a four-step pass, a 2D
/// transform (an R2C stage reads real pairs: it stays one tile per cube). The
/// callers launch few resident cubes, so that each walks several tiles.
/// `long` adds the lengths whose working tile and staged input need more
/// shared memory than lavapipe's 32 KiB.
pub(super) fn resident_cases(long: bool) -> Vec<FftDesc> {
    let mut cases = vec![
        FftDesc::new(&[13, 64], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[7, 500], &[-1], FftKind::C2C, Direction::Inverse),
        // Odd rows: no two-pair copies.
        FftDesc::new(&[5, 375], &[-1], FftKind::C2C, Direction::Forward),
        // First passes that split their butterflies, one pass and two.
        FftDesc::new(&[9, 47], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[7, 85], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[3, 96, 21], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 1 << 15], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[4, 48, 40], &[-2, -1], FftKind::C2C, Direction::Forward),
        // A zero-padding inverse (the load window holds 24 of 64 values), a truncating forward.
        FftDesc::new(&[11, 24], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[24])
            .lengths(&[64]),
        FftDesc::new(&[10, 64], &[-1], FftKind::C2C, Direction::Forward).modes(&[17]),
        FftDesc::new(&[6, 256], &[-1], FftKind::R2C, Direction::Forward),
        // Composites above 16 that save a pass, run last: 192 = 8·24, 224 = 8·28.
        FftDesc::new(&[5, 192], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[4, 224], &[-1], FftKind::C2C, Direction::Forward),
        // Rader's rows, their first pass gathering the staged input: two
        // passes (211 = 15·14 + 1, 421 = 20·21 + 1) and three (541), several
        // tiles a cube, so that a stale x[0] would show.
        FftDesc::new(&[40, 211], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[13, 421], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 541], &[-1], FftKind::C2C, Direction::Forward),
    ];
    if long {
        cases.extend([
            FftDesc::new(&[7, 1000], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[5, 6144], &[-1], FftKind::C2C, Direction::Forward),
            // 16·16·27 on 8 warps, 16·21·32 on 336 threads.
            FftDesc::new(&[3, 6912], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[2, 10752], &[-1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[3, 12288], &[-1], FftKind::C2C, Direction::Inverse),
        ]);
    }
    cases
}

/// Checks [`resident_cases`] under `options` on `client` against the oracle;
/// every case but the real one must run a resident stage there (its complex
/// input is copied as it is). Inputs are drawn from `seed` on.
pub(super) fn check_resident<R: Runtime>(
    client: &ComputeClient<R>,
    test: &str,
    options: DeviceOptions,
    long: bool,
    seed: u64,
) {
    let mut errors = Vec::new();
    for (seed, desc) in (seed..).zip(resident_cases(long)) {
        let device = device_with(client, &desc, options);
        let resident = resident_stages(device.recipe());
        if desc.kind == FftKind::C2C {
            assert!(resident > 0, "{desc:?}: no resident stage");
        }
        // Every case transforms its last axis, whose length sets the bound.
        let lengths = desc.lengths.as_ref().unwrap_or(&desc.shape);
        let bound = if lengths[lengths.len() - 1] > 4096 {
            LONG_BOUND
        } else {
            BOUND
        };
        let e = error_of(client, &device, seed);
        assert!(e <= bound, "{desc:?} (seed {seed}): {e:.3e}");
        errors.push((format!("{desc:?} ({resident} resident launches)"), e));
    }
    report(test, &errors);
}

#[test]
fn resident_cubes_fill_the_next_tile() {
    check_resident(
        &client(),
        "resident_cubes_fill_the_next_tile",
        RESIDENT,
        false,
        drawn_seed(),
    );
}

/// The cases of [`staged_stages_take_their_largest_pass_last`], each with its
/// options and the radices the planner gives it.
pub(super) fn staged_plans() -> [(FftDesc, DeviceOptions, Vec<usize>); 5] {
    let c2c = |shape: &[usize], axis: isize| FftDesc::new(shape, &[axis], FftKind::C2C, Direction::Forward);
    [
        (c2c(&[5, 192], -1), RESIDENT, vec![8, 24]),
        (c2c(&[4, 224], -1), RESIDENT, vec![8, 28]),
        // 7·2^5 over rows read from global memory: 7·4·8, no composite above 16.
        (c2c(&[4, 224], -1), SEPARATE, vec![7, 4, 8]),
        (c2c(&[2, 252, 9], 1), SEPARATE, vec![7, 3, 12]),
        (c2c(&[2, 384, 9], 1), SEPARATE, vec![6, 8, 8]),
    ]
}

/// Stages that read a staged tile (resident cubes) or signals side by side
/// (column tiles) run a first pass larger than their last one last, and
/// resident ones take composites above 16 where those save a pass: the
/// planner's radices asserted, the transforms against the oracle.
#[test]
fn staged_stages_take_their_largest_pass_last() {
    let client = client();
    let mut errors = Vec::new();
    for (seed, (desc, options, _)) in (drawn_seed()..).zip(staged_plans()) {
        let device = device_with(&client, &desc, options);
        if options == RESIDENT {
            assert!(resident_stages(device.recipe()) > 0, "{desc:?}: no resident stage");
        }
        let e = error_of(&client, &device, seed);
        assert!(e <= BOUND, "{desc:?} (seed {seed}): {e:.3e}");
        errors.push((format!("{desc:?}"), e));
    }
    report("staged_stages_take_their_largest_pass_last", &errors);
}

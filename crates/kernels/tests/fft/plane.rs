//! The last two axes in one launch, the intermediate image in shared memory
//! (the plane kernel): with and without the planner's rules, against the
//! oracle. The rules' choices are asserted in `planner.rs`.

use super::*;

/// The cases of [`last_two_axes_in_one_plane_launch`], each with whether the
/// planner fuses it by default.
pub(super) fn plane_cases() -> Vec<(FftDesc, bool)> {
    vec![
        (
            FftDesc::new(&[3, 32, 48], &[-2, -1], FftKind::R2C, Direction::Forward),
            true,
        ),
        (
            FftDesc::new(&[3, 32, 25], &[-2, -1], FftKind::C2R, Direction::Inverse).lengths(&[32, 48]),
            true,
        ),
        (
            FftDesc::new(&[2, 24, 40], &[-2, -1], FftKind::C2C, Direction::Forward),
            true,
        ),
        (
            FftDesc::new(&[2, 24, 40], &[-1, -2], FftKind::C2C, Direction::Inverse),
            true,
        ),
        // Odd smooth rows, which separate launches pair as twins.
        (
            FftDesc::new(&[3, 45, 45], &[-2, -1], FftKind::R2C, Direction::Forward),
            false,
        ),
        (
            FftDesc::new(&[4, 32, 32], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
            false,
        ),
        (
            FftDesc::new(&[4, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[12, 7])
                .lengths(&[32, 32]),
            false,
        ),
        (
            FftDesc::new(&[3, 24, 40], &[-2, -1], FftKind::C2C, Direction::Forward).modes(&[9, 10]),
            false,
        ),
        (
            FftDesc::new(&[3, 9, 10], &[-1, -2], FftKind::C2C, Direction::Inverse)
                .modes(&[10, 9])
                .lengths(&[40, 24]),
            false,
        ),
        (
            FftDesc::new(&[2, 45, 30], &[-2, -1], FftKind::R2C, Direction::Forward)
                .modes(&[15, 8])
                .mode_order(ModeOrder::ShiftedOddLower),
            false,
        ),
        (
            FftDesc::new(&[2, 15, 8], &[-2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[15, 8])
                .lengths(&[45, 30])
                .mode_order(ModeOrder::ShiftedOddLower)
                .norm(Norm::Ortho),
            false,
        ),
        (
            FftDesc::new(&[2, 16, 40], &[-2, -1], FftKind::R2C, Direction::Forward)
                .lengths(&[16, 32])
                .modes(&[8, 9]),
            false,
        ),
        (
            FftDesc::new(&[2, 5, 36, 20], &[-3, -2, -1], FftKind::R2C, Direction::Forward).modes(&[3, 8, 6]),
            false,
        ),
        (
            FftDesc::new(&[2, 3, 8, 6], &[-3, -2, -1], FftKind::C2R, Direction::Inverse)
                .modes(&[3, 8, 6])
                .lengths(&[5, 36, 20]),
            false,
        ),
    ]
}

/// The last two axes in one launch (the intermediate image in shared memory):
/// full transforms, which the planner fuses by default, and truncating
/// forwards and zero-padding inverses in both axis orders, mixed radices, mode
/// orders, a cropped (row-pitched) input and a third axis before them, which
/// it fuses when asked to. Each must match the oracle like the per-axis path.
#[test]
fn last_two_axes_in_one_plane_launch() {
    // Each case really runs as a plane when asked to.
    let limits = DeviceLimits::of(&client());
    for (desc, _) in plane_cases() {
        assert_eq!(lowered(&desc, &limits, ALWAYS_PLANE).planes().count(), 1, "{desc:?}");
    }
    let pruned = DeviceOptions {
        prune: true,
        ..ALWAYS_PLANE
    };
    check_all(
        "last_two_axes_in_one_plane_launch",
        drawn_seed(),
        plane_cases().into_iter().map(|(desc, _)| desc),
        &[PLANE, ALWAYS_PLANE, pruned, SEPARATE],
    );
}

/// The cases of [`thin_plane_cubes_only_when_asked`].
pub(super) fn thin_plane_cases() -> [FftDesc; 2] {
    [
        FftDesc::new(&[2, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 85, 43], &[-2, -1], FftKind::C2C, Direction::Inverse),
    ]
}

/// Where the image leaves a plane cube room for fewer than
/// `MIN_PLANE_THREADS` threads (85² on lavapipe; not on an H100), the planner
/// keeps separate launches unless asked for a plane; both match the oracle.
#[test]
fn thin_plane_cubes_only_when_asked() {
    // Each case really runs as a plane when asked to.
    let limits = DeviceLimits::of(&client());
    for desc in thin_plane_cases() {
        assert_eq!(lowered(&desc, &limits, ALWAYS_PLANE).planes().count(), 1, "{desc:?}");
    }
    check_all(
        "thin_plane_cubes_only_when_asked",
        drawn_seed(),
        thin_plane_cases(),
        PLANE_OR_SEPARATE,
    );
}

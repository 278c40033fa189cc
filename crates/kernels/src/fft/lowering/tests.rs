//! Recipe checks of rules that live inside the stage kernel's planning
//! (crate-private), on lavapipe's limits where they were first checked; the
//! transforms themselves are checked against the oracle in `tests/fft/`.

use super::super::plan::{Direction, FftDesc, FftKind, FftPlan};
use super::super::stage::{loads_directly, stores_directly, tile_loads_ahead, OutputForm, StageConfig};
use super::super::{DeviceOptions, DirectDft};
use super::{lower, DeviceLimits};

fn stages(desc: &FftDesc, options: DeviceOptions) -> Vec<StageConfig> {
    let plan = FftPlan::new(desc.clone()).unwrap();
    let recipe = lower(&plan, &DeviceLimits::LAVAPIPE, options).unwrap();
    recipe.stages().cloned().collect()
}

/// Tile loads whose input is not a Hermitian spectrum issue every load of
/// their walk before placing any value: convolution rows (Rader's C2C and R2C
/// 211, Bluestein's C2C 1019) walking units, R2C 85's real twins and Rader's
/// 211 columns walking the tile flat. The irfft's Hermitian bins and C2C
/// 85's rows of complex pairs place each value as it lands
/// (`tests/fft/tiles.rs` runs them against the oracle).
#[test]
fn tile_loads_issue_their_rounds_ahead() {
    let fft_only = DeviceOptions {
        direct_dft: DirectDft::Never,
        ..DeviceOptions::default()
    };
    let cases = [
        (FftDesc::new(&[37, 211], &[-1], FftKind::C2C, Direction::Forward), 1),
        (FftDesc::new(&[37, 211], &[-1], FftKind::R2C, Direction::Forward), 1),
        (FftDesc::new(&[5, 1019], &[-1], FftKind::C2C, Direction::Inverse), 1),
        (
            FftDesc::new(&[37, 106], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[211]),
            0,
        ),
        (FftDesc::new(&[37, 85], &[-1], FftKind::C2C, Direction::Forward), 0),
        (FftDesc::new(&[37, 85], &[-1], FftKind::R2C, Direction::Forward), 1),
        (FftDesc::new(&[3, 211, 9], &[-2], FftKind::C2C, Direction::Forward), 1),
    ];
    for (desc, expected) in cases {
        let ahead = stages(&desc, fft_only)
            .iter()
            .filter(|cfg| cfg.prefetch.is_none() && !loads_directly(cfg) && tile_loads_ahead(cfg))
            .count();
        assert_eq!(ahead, expected, "{desc:?}");
    }
}

/// Real transforms untangle their bins in the last pass's registers where
/// that pass stores directly (R2C 1000 and 500), through shared memory
/// otherwise (192, 256, 1024); `tests/fft/real.rs` runs every window of both.
#[test]
fn real_rows_untangle_in_registers_where_threads_pair_up() {
    for (n, in_registers) in [(1000, true), (500, true), (192, false), (256, false), (1024, false)] {
        for desc in [
            FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward),
            FftDesc::new(&[3, n], &[-1], FftKind::R2C, Direction::Forward).modes(&[n / 8]),
        ] {
            let untangling = stages(&desc, DeviceOptions::default())
                .iter()
                .any(|cfg| cfg.output == OutputForm::Untangled && stores_directly(cfg));
            assert_eq!(untangling, in_registers, "{desc:?}");
        }
    }
}

//! What the spectral benchmarks share: ../shared/anchors/spectral_torch.py's
//! cases and the timing of groups of back-to-back calls.

use std::time::Instant;

use burn::tensor::backend::Backend;

/// (spatial dims, batch, channels, grid side, neuraloperator n_modes per dim)
pub type Case = (usize, usize, usize, usize, &'static [usize]);

pub const CASES: &[Case] = &[
    (1, 64, 64, 1024, &[32]),
    (1, 256, 64, 256, &[64]),
    (1, 512, 128, 256, &[128]),
    (2, 32, 32, 64, &[24, 24]),
    (2, 32, 32, 85, &[24, 24]),
    (2, 16, 64, 128, &[32, 32]),
    (2, 16, 64, 256, &[64, 64]),
    (2, 8, 128, 256, &[64, 64]),
    (2, 8, 64, 421, &[48, 48]),
];

/// Back-to-back calls per timed group aim at about this long (fewer than
/// `--reps` for slow cases, at least one).
const GROUP_MS: f64 = 100.0;

/// Median over 5 groups of `reps` back-to-back calls of the mean time per call:
/// the device stays busy as in a training loop, and host launch costs count only
/// where the device would wait for them. Slow calls get smaller groups. Also
/// the host's share: the time per call until the group's last call returns
/// (the launches queued, not yet waited for; a full launch queue holds it
/// back to the device's pace).
pub fn median_ms<B: Backend>(device: &B::Device, reps: usize, f: impl FnMut()) -> Measured {
    median_ms_synced(|| B::sync(device).unwrap(), reps, f)
}

/// [`median_ms`] on any engine: `sync` waits for the device.
pub fn median_ms_synced(sync: impl Fn(), reps: usize, mut f: impl FnMut()) -> Measured {
    f();
    sync();
    let start = Instant::now();
    for _ in 0..2 {
        f();
    }
    sync();
    let warm_ms = start.elapsed().as_secs_f64() * 1e3 / 2.0;
    let reps = reps.min((GROUP_MS / warm_ms) as usize).max(1);
    let mut times: Vec<Measured> = (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                f();
            }
            let host = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
            sync();
            Measured {
                ms: start.elapsed().as_secs_f64() * 1e3 / reps as f64,
                host_ms: host,
            }
        })
        .collect();
    times.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    times[2]
}

/// Time per call, and the host's part of it (see [`median_ms`]).
#[derive(Clone, Copy)]
pub struct Measured {
    pub ms: f64,
    pub host_ms: f64,
}

/// neuraloperator's n_modes as stored modes: the last dim keeps m // 2 + 1 bins.
pub fn stored_modes(dim: usize, n_modes: &[usize]) -> Vec<usize> {
    n_modes
        .iter()
        .enumerate()
        .map(|(d, &m)| if d + 1 == dim { m / 2 + 1 } else { m })
        .collect()
}

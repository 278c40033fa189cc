//! Untangling a real spectrum from (and folding it into) a half-length complex
//! spectrum held in global memory: the extra pass of real transforms too long for
//! one shared-memory tile. Shorter real transforms do this inside [`super::stage`].

use cubecl::prelude::*;

use crate::precision::{load_value, store_value, Storage};

use super::stage::{window_index, window_position};
use super::window::Window;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HalfSpectrumConfig {
    /// Half length: the complex transform length.
    pub n: usize,
    /// R2C: window of the `n + 1` output bins. C2R: window of the input bins.
    pub window: Window,
    /// Entries the bins array holds along the axis.
    pub stored: usize,
    pub scale_bits: u32,
}

#[cube]
fn cmul<F: Float>(ar: F, ai: F, br: F, bi: F) -> (F, F) {
    (ar * br - ai * bi, ar * bi + ai * br)
}

/// `X[k] = (Z[k] + conj Z[n-k])/2 - i/2 · W_2n^k · (Z[k] - conj Z[n-k])` for the
/// window's bins. `z` is `[outer][n][inner]`, `x` is `[outer][stored][inner]`.
#[cube(launch_unchecked)]
pub fn untangle_kernel<F: Float, SI: Storage, SO: Storage>(
    z: &Array<SI::Elem>,
    x: &mut Array<SO::Elem>,
    twiddles: &Array<F>,
    inner: usize,
    total: usize,
    #[comptime] cfg: HalfSpectrumConfig,
) {
    let id = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if id >= total {
        terminate!();
    }
    let n = comptime![cfg.n];
    let stored = comptime![cfg.stored];
    let i = id % inner;
    let j = (id / inner) % stored;
    let o = id / (inner * stored);
    let k = window_index(j, cfg.window, comptime![cfg.n + 1]);
    let za = 2 * ((o * n + k % n) * inner + i);
    let zc = 2 * ((o * n + (n - k) % n) * inner + i);
    let (zr, zi) = (load_value::<F, SI>(z[za]), load_value::<F, SI>(z[za + 1]));
    let (yr, yi) = (load_value::<F, SI>(z[zc]), load_value::<F, SI>(z[zc + 1]));
    let (wr, wi) = (twiddles[2 * k], twiddles[2 * k + 1]);
    let (dr, di) = cmul::<F>(zr - yr, zi + yi, wr, wi);
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)] * 0.5);
    x[2 * id] = store_value::<F, SO>((zr + yr + di) * scale);
    x[2 * id + 1] = store_value::<F, SO>((zi - yi - dr) * scale);
}

/// `Z[k] = (X[k] + conj X[n-k]) + i·W_2n^{-k}·(X[k] - conj X[n-k])` for all
/// `k < n`, bins outside the window being zero and the imaginary parts of DC and
/// Nyquist ignored. `x` is `[outer][stored][inner]`, `z` is `[outer][n][inner]`.
#[cube(launch_unchecked)]
pub fn fold_kernel<F: Float, SI: Storage, SO: Storage>(
    x: &Array<SI::Elem>,
    z: &mut Array<SO::Elem>,
    twiddles: &Array<F>,
    inner: usize,
    total: usize,
    #[comptime] cfg: HalfSpectrumConfig,
) {
    let id = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if id >= total {
        terminate!();
    }
    let n = comptime![cfg.n];
    let i = id % inner;
    let k = (id / inner) % n;
    let o = id / (inner * n);
    let (xr, xi) = load_bin::<F, SI>(x, o, k, i, inner, cfg);
    let (yr, yi) = load_bin::<F, SI>(x, o, n - k, i, inner, cfg);
    let (wr, wi) = (twiddles[2 * k], F::new(0.0) - twiddles[2 * k + 1]);
    let (dr, di) = cmul::<F>(xr - yr, xi + yi, wr, wi);
    z[2 * id] = store_value::<F, SO>(xr + yr - di);
    z[2 * id + 1] = store_value::<F, SO>(xi - yi + dr);
}

#[cube]
fn load_bin<F: Float, S: Storage>(
    x: &Array<S::Elem>,
    o: usize,
    k: usize,
    i: usize,
    inner: usize,
    #[comptime] cfg: HalfSpectrumConfig,
) -> (F, F) {
    let stored = comptime![cfg.stored];
    let (held, j) = window_position(k, cfg.window, comptime![cfg.n + 1]);
    let mut vr = F::new(0.0);
    let mut vi = F::new(0.0);
    if held {
        let at = 2 * ((o * stored + j) * inner + i);
        vr = load_value::<F, S>(x[at]);
        vi = load_value::<F, S>(x[at + 1]);
    }
    if k == 0 || k == comptime![cfg.n] {
        vi = F::new(0.0);
    }
    (vr, vi)
}

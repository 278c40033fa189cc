//! Where a tile's values are: its signals' coordinates in global memory, their
//! slots in shared memory, positions in the load and store windows, and the
//! walks of the cube's units over the tile.

use cubecl::prelude::*;

use super::config::{AxisFold, StageConfig};
use crate::fft::window::Window;

/// Shared-memory position of element `x` of a signal: one padding word every
/// 32 values where `padded` (see [`StageConfig::padded_slots`]).
#[cube]
pub(crate) fn slot(x: usize, #[comptime] padded: bool) -> usize {
    if comptime![padded] {
        x + x / 32
    } else {
        x
    }
}

/// Where a tile's signals live and where its outputs go: everything the passes
/// need to read the first pass straight from global memory and write the last
/// pass straight back.
#[derive(CubeType, Clone, Copy)]
pub(crate) struct TileCoords {
    /// Flat input/output offsets of the tile's first signal.
    pub in_base: usize,
    pub out_base: usize,
    pub in_sc: usize,
    pub out_sc: usize,
    pub in_axis: usize,
    pub out_axis: usize,
    /// Batch coordinates of the tile: `b` and the first `c`.
    pub b: usize,
    pub c0: usize,
    pub nc: usize,
}

/// Offset of index `j` along an axis of the given stride, the stride a
/// compile-time 1 where `unit`.
#[cube]
pub(super) fn axis_offset(j: usize, stride: usize, #[comptime] unit: bool) -> usize {
    if comptime![unit] {
        j
    } else {
        j * stride
    }
}

/// Whether axis index `axis` carries data under `fold` in a stage of length
/// `n`: folds whose `len` is shorter than the axis they cover (Bluestein's
/// zero-padded convolution) drop the tail.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::single_match)]
pub(super) fn within_fold(axis: usize, #[comptime] n: usize, #[comptime] fold: Option<AxisFold>) -> bool {
    let mut within = true;
    match comptime![fold] {
        Some(f) => {
            if comptime![f.len < n * f.k_mul] {
                within = axis < comptime![f.len];
            }
        }
        None => {}
    }
    within
}

/// Dense position of sequence index `k` in a window, or `len` of the dense
/// storage when the window does not hold `k` (the caller treats it as zero).
#[cube]
pub(crate) fn window_position(k: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> (bool, usize) {
    match comptime![window] {
        Window::Prefix(len) => {
            let held = comptime![len.min(seq_len)];
            (k < held, k)
        }
        Window::Centered(m) => {
            let low = comptime![m - m / 2];
            let high_start = comptime![seq_len - m / 2];
            // Runtime wrap-around below is harmless: unheld positions are never read.
            let shift = comptime![seq_len - m];
            (k < low || k >= high_start, select(k < low, k, k - shift))
        }
        Window::Shifted(m) => {
            let low = comptime![m - m / 2];
            let high_start = comptime![seq_len - m / 2];
            (
                k < low || k >= high_start,
                select(k < low, k + comptime![m / 2], k - high_start),
            )
        }
        Window::ShiftedLower(m) => {
            let t = k + comptime![m / 2 + 1];
            let j = select(t >= seq_len, t - seq_len, t);
            (j < comptime![m], j)
        }
    }
}

/// Sequence index held at dense position `j` of a window.
#[cube]
pub(crate) fn window_index(j: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> usize {
    match comptime![window] {
        Window::Prefix(_) => j,
        Window::Centered(m) => {
            let low = comptime![m - m / 2];
            let shift = comptime![seq_len - m];
            select(j < low, j, j + shift)
        }
        Window::Shifted(m) => {
            let half = comptime![m / 2];
            select(j < half, j + comptime![seq_len - m / 2], j - half)
        }
        Window::ShiftedLower(m) => {
            let t = j + comptime![seq_len - m / 2 - 1];
            select(t >= seq_len, t - seq_len, t)
        }
    }
}

/// Splits a tile-local flat index into (signal, element) for the chosen walk order.
#[cube]
pub(crate) fn split_flat(
    flat: usize,
    #[comptime] len: usize,
    #[comptime] signals: usize,
    #[comptime] signals_fastest: bool,
) -> (usize, usize) {
    if signals_fastest {
        (flat % signals, flat / signals)
    } else {
        (flat / len, flat % len)
    }
}

/// [`split_flat`] of `flat + step` from that of `flat`, without dividing: the
/// store loops walk long tiles, and a division by a length that is not a
/// power of two costs several integer instructions per element.
#[cube]
pub(super) fn advance_flat(
    s: usize,
    u: usize,
    #[comptime] step: usize,
    #[comptime] len: usize,
    #[comptime] signals: usize,
    #[comptime] signals_fastest: bool,
) -> (usize, usize) {
    // The fast index wraps at most once per step after its whole part is added.
    let wrap = comptime![if signals_fastest { signals } else { len }];
    let (fast, slow) = if signals_fastest { (s, u) } else { (u, s) };
    let fast = fast + comptime![step % wrap];
    let carry = fast >= wrap;
    let fast = select(carry, fast - wrap, fast);
    let slow = slow + comptime![step / wrap] + select(carry, 1usize, 0usize);
    if signals_fastest {
        (fast, slow)
    } else {
        (slow, fast)
    }
}

/// Axis index (before windowing) of local element `k` of a signal whose index
/// along the fold's batch dimension is `d`.
#[cube]
pub(super) fn axis_index(k: usize, d: usize, #[comptime] fold: Option<AxisFold>) -> usize {
    match comptime![fold] {
        Some(f) => k * comptime![f.k_mul] + d,
        None => k,
    }
}

#[cube]
pub(super) fn fold_dim_index(b: usize, c: usize, #[comptime] fold: Option<AxisFold>) -> usize {
    match comptime![fold] {
        Some(f) => {
            if comptime![f.dim == 1] {
                b
            } else {
                c
            }
        }
        None => 0usize,
    }
}

/// (signal, thread within the signal) of this unit in a stage's tile: the
/// passes walk the tile in the order the global loads coalesce in.
#[cube]
pub(crate) fn unit_in_tile(#[comptime] cfg: StageConfig) -> (usize, usize) {
    let signals = comptime![cfg.signals_per_cube];
    let per_signal = comptime![cfg.threads_per_signal];
    if comptime![cfg.load_signals_fastest] {
        (UNIT_POS as usize % signals, UNIT_POS as usize / signals)
    } else {
        (UNIT_POS as usize / per_signal, UNIT_POS as usize % per_signal)
    }
}

/// The tiles of a launch: the batch extents, the tile count, and the strides
/// of the input and output along `(a, b, c)` and the axis.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub struct TileGrid {
    pub nb: usize,
    pub nc: usize,
    pub num_tiles: usize,
    pub in_sa: usize,
    pub in_sb: usize,
    pub in_sc: usize,
    pub in_axis: usize,
    pub out_sa: usize,
    pub out_sb: usize,
    pub out_sc: usize,
    pub out_axis: usize,
}

// Runtime integer `div_ceil` has no cube expansion.
#[cube]
#[allow(clippy::manual_div_ceil)]
pub(super) fn tile_coords(
    tile: usize,
    grid: TileGrid,
    #[comptime] signals: usize,
    #[comptime] one_row: bool,
) -> TileCoords {
    let (a, b, c0) = if comptime![one_row] {
        (0usize, 0usize, tile * signals)
    } else {
        let tiles_c = (grid.nc + signals - 1) / signals;
        let ab = tile / tiles_c;
        (ab / grid.nb, ab % grid.nb, (tile % tiles_c) * signals)
    };
    TileCoords {
        in_base: a * grid.in_sa + b * grid.in_sb + c0 * grid.in_sc,
        out_base: a * grid.out_sa + b * grid.out_sb + c0 * grid.out_sc,
        in_sc: grid.in_sc,
        out_sc: grid.out_sc,
        in_axis: grid.in_axis,
        out_axis: grid.out_axis,
        b,
        c0,
        nc: grid.nc,
    }
}

//! The parts of Rader's and Bluestein's convolutions around the passes: Rader's
//! slot tables and the turn from the forward transform to the inverse.

use cubecl::prelude::*;

use super::butterfly::{complex_mul, small_dft, table_value};
use super::config::StageConfig;
use super::coords::slot;

/// The slot of a Rader stage's input `k` (`output` false) or output `k`
/// (`output` true), from the stage's factors (see [`Convolution::Rader`]).
#[cube]
pub(super) fn rader_slot<F: Float>(factors: &Array<F>, k: usize, #[comptime] output: bool) -> usize {
    let at = if comptime![output] { 2 * k + 1 } else { 2 * k };
    usize::cast_from(u32::reinterpret(factors[at]))
}

/// The input `g^-s` that slot `s` of a Rader stage's convolution holds, from
/// the stage's factors (see [`Convolution::Rader`]).
#[cube]
pub(super) fn rader_source<F: Float>(factors: &Array<F>, s: usize, #[comptime] cfg: StageConfig) -> usize {
    let table = comptime![2 * cfg.n + 2 * cfg.pass_len()];
    usize::cast_from(u32::reinterpret(factors[table + s]))
}

/// Where element `k` of a signal's input goes in its shared-memory tile:
/// slot `k`, or for Rader's algorithm input `s` of the convolution where
/// `k = g^-s`, and `x[0]` in the slot after the convolution's.
#[cube]
pub(crate) fn input_slot<F: Float>(factors: &Array<F>, k: usize, #[comptime] cfg: StageConfig) -> usize {
    if comptime![cfg.rader()] {
        slot(rader_slot::<F>(factors, k, false), cfg.padded_slots)
    } else {
        slot(k, cfg.padded_slots)
    }
}

/// A convolution's turn (see [`Round::turn`]) on butterfly `i` of the first
/// transform's last pass, whose output `t` in registers `at_slot + t` is
/// element `i + t·m/r` of the transform: each times the kernel's spectrum,
/// then the inverse's radix-`r` DFT over them. Rader's `A[0] = Σ a` (`X[0]`
/// less `x[0]`) is kept aside first.
#[cube]
// The comptime switch stays an outer `if`: without Rader's, no code of it.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
pub(super) fn turn_to_inverse<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    signal: usize,
    i: usize,
    #[comptime] at_slot: usize,
    #[comptime] r: usize,
    #[comptime] cfg: StageConfig,
) {
    let m = comptime![cfg.pass_len()];
    let kernel = comptime![cfg.n];
    if comptime![cfg.rader()] {
        if i == 0 {
            // X[0] = x[0] + Σ a.
            let base = signal * comptime![cfg.smem_stride];
            let dc = base + slot(m + 1, cfg.padded_slots);
            let x0 = base + slot(m, cfg.padded_slots);
            smem_re[dc] = re[at_slot] + smem_re[x0];
            smem_im[dc] = im[at_slot] + smem_im[x0];
        }
    }
    #[unroll]
    for t in 0..r {
        let e = i + t * comptime![m / r];
        let (fr, fi) = table_value::<F>(factors, kernel + e);
        let (yr, yi) = complex_mul::<F>(re[at_slot + t], im[at_slot + t], fr, fi);
        re[at_slot + t] = yr;
        im[at_slot + t] = yi;
    }
    small_dft::<F>(re, im, at_slot, 1usize, r, true);
}

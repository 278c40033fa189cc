//! One element to or from global memory: where element `k` of a tile's
//! signal lives, reading it in its input form and writing it in its output form.

use cubecl::prelude::*;

use crate::precision::Storage;

use super::butterfly::{complex_mul, table_twiddle, table_value};
use super::config::{InputForm, OutputForm, StageConfig};
use super::coords::{axis_index, axis_offset, fold_dim_index, window_position, within_fold, TileCoords};
use crate::pairs::{read_float, read_pair, write_float, write_pair};

/// Where a Hermitian input (bins `0..=len/2` of a length-`len` spectrum) holds
/// axis index `axis`: the bin, and whether the value is its conjugate
/// (`X[len-k] = conj X[k]`).
#[cube]
pub(crate) fn hermitian_bin(axis: usize, #[comptime] len: usize) -> (usize, bool) {
    let mirrored = 2 * axis > len;
    (select(mirrored, len - axis, axis), mirrored)
}

/// The imaginary part at an axis index from its bin's: negated when mirrored,
/// and, like pocketfft, ignored at DC and Nyquist.
#[cube]
pub(crate) fn hermitian_imag<F: Float>(vi: F, bin: usize, mirrored: bool, #[comptime] len: usize) -> F {
    let mut out = select(mirrored, F::new(0.0) - vi, vi);
    if bin == 0 || 2 * bin == len {
        out = F::new(0.0);
    }
    out
}

/// Where element `k` of the tile's signal `s` comes from: the signal's offset,
/// the axis index the load window refers to, and whether the batch (and a
/// fold's length) holds it.
#[cube]
pub(super) fn load_source(at: TileCoords, s: usize, k: usize, #[comptime] cfg: StageConfig) -> (usize, usize, bool) {
    let d = fold_dim_index(at.b, at.c0 + s, cfg.load_fold);
    let axis = axis_index(k, d, cfg.load_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.load_fold);
    (at.in_base + s * at.in_sc, axis, inside)
}

/// Element `k` of the tile's signal `s`, zero outside the load window.
#[cube]
// The cube macro expands a comptime `match`, not an `if let` or match guards.
#[allow(clippy::single_match, clippy::collapsible_match)]
pub(super) fn load_element<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let in_seq = comptime![cfg.input_seq_len()];
    // A twin slot's first signal; its second lies one signal further along `c`.
    let first = if comptime![cfg.input.is_twin()] { 2 * s } else { s };
    let (sig, axis, inside) = load_source(at, first, k, cfg.clone());
    let twin_inside = inside && at.c0 + first + 1 < at.nc;
    let mut vr = F::new(0.0);
    let mut vi = F::new(0.0);
    match comptime![cfg.input] {
        InputForm::RealTwins => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, S, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
            if held && twin_inside {
                vi = read_float::<F, S, N>(input, sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::HermitianTwins => {
            // A + iB from bins A[k] and B[k] of the two signals.
            let len = comptime![cfg.n];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (ar, ai) = read_pair::<F, S, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = ar;
                vi = hermitian_imag::<F>(ai, bin, mirrored, len);
            }
            if held && twin_inside {
                let (br, bi) = read_pair::<F, S, N>(
                    input,
                    sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr -= hermitian_imag::<F>(bi, bin, mirrored, len);
                vi += br;
            }
        }
        InputForm::RealPairs => {
            // Complex slot k packs real samples 2k (re) and 2k + 1 (im).
            let (held0, j0) = window_position(2 * axis, cfg.load, in_seq);
            if comptime![cfg.vector_input] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    let (a, b) = read_pair::<F, S, N>(input, (sig + j0) / 2, true);
                    vr = a;
                    vi = b;
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.load, in_seq);
                if held0 && inside {
                    vr = read_float::<F, S, N>(input, sig + axis_offset(j0, at.in_axis, cfg.unit_input_axis));
                }
                if held1 && inside {
                    vi = read_float::<F, S, N>(input, sig + axis_offset(j1, at.in_axis, cfg.unit_input_axis));
                }
            }
        }
        InputForm::Real => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, S, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::Hermitian => {
            let len = comptime![cfg.load_fold.map_or(cfg.n, |f| f.len)];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, S, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = hermitian_imag::<F>(b, bin, mirrored, len);
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, S, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = b;
            }
        }
    }
    match comptime![cfg.load_factor] {
        Some(offset) => {
            if inside {
                let (fr, fi) = table_value::<F>(factors, offset + axis);
                let (tr, ti) = complex_mul::<F>(vr, vi, fr, fi);
                vr = tr;
                vi = ti;
            }
        }
        None => {}
    }
    (vr, vi)
}

/// Element `thread + round · threads` of a unit walk over `len` elements of
/// a signal ([`walks_units`]), and whether the signal has it: always but in
/// a ragged last round, where the check is the only one made at run time.
#[cube]
pub(super) fn unit_walk_element(
    thread: usize,
    #[comptime] round: usize,
    #[comptime] threads: usize,
    #[comptime] len: usize,
) -> (usize, bool) {
    let k = thread + round * threads;
    (k, comptime![(round + 1) * threads <= len] || k < len)
}

/// Writes transform output `k` of the tile's signal `s` if the store window
/// holds it: four-step twiddled, multiplied by its factor, scaled, and written
/// in the stage's output form.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match, clippy::collapsible_match)]
pub(super) fn store_element<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    let out_seq = comptime![cfg.output_seq_len()];
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)]);
    let sig = at.out_base + s * at.out_sc;
    let d = fold_dim_index(at.b, at.c0 + s, cfg.store_fold);
    let axis = axis_index(k, d, cfg.store_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.store_fold);
    let (mut vr, mut vi) = value;
    match comptime![cfg.post_twiddle] {
        Some(pt) => {
            let d2 = if comptime![pt.dim == 1] { at.b } else { at.c0 + s };
            let e = (d2 * k) % comptime![pt.total];
            let (cr, ci) = table_twiddle::<F>(post_coarse, e / comptime![pt.fine_len], cfg.inverse);
            let (fr, fi) = table_twiddle::<F>(post_fine, e % comptime![pt.fine_len], cfg.inverse);
            let (wr, wi) = complex_mul::<F>(cr, ci, fr, fi);
            let (tr, ti) = complex_mul::<F>(vr, vi, wr, wi);
            vr = tr;
            vi = ti;
        }
        None => {}
    }
    match comptime![cfg.store_factor] {
        Some(offset) => {
            if inside {
                let (fr, fi) = table_value::<F>(factors, offset + axis);
                let (tr, ti) = complex_mul::<F>(vr, vi, fr, fi);
                vr = tr;
                vi = ti;
            }
        }
        None => {}
    }
    match comptime![cfg.output] {
        OutputForm::RealPairs => {
            let (held0, j0) = window_position(2 * axis, cfg.store, out_seq);
            if comptime![cfg.vector_output] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    write_pair::<F, S, N>(output, (sig + j0) / 2, vr * scale, vi * scale, true);
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.store, out_seq);
                if held0 && inside {
                    write_float::<F, S, N>(
                        output,
                        sig + axis_offset(j0, at.out_axis, cfg.unit_output_axis),
                        vr * scale,
                    );
                }
                if held1 && inside {
                    write_float::<F, S, N>(
                        output,
                        sig + axis_offset(j1, at.out_axis, cfg.unit_output_axis),
                        vi * scale,
                    );
                }
            }
        }
        OutputForm::RealPart | OutputForm::TwinReals => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                write_float::<F, S, N>(
                    output,
                    sig + axis_offset(j, at.out_axis, cfg.unit_output_axis),
                    vr * scale,
                );
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                write_pair::<F, S, N>(
                    output,
                    sig + axis_offset(j, at.out_axis, cfg.unit_output_axis),
                    vr * scale,
                    vi * scale,
                    cfg.vector_output,
                );
            }
        }
    }
}

/// Writes transform output `k` of the tile's slot `s` ([`store_element`]):
/// a twin slot's real and imaginary parts go to its two signals.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn store_slot_value<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.output == OutputForm::TwinReals] {
        let (vr, vi) = value;
        let zero = F::new(0.0);
        store_element::<F, S, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s,
            k,
            (vr, zero),
            cfg.clone(),
        );
        store_element::<F, S, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s + 1,
            k,
            (vi, zero),
            cfg,
        );
    } else {
        store_element::<F, S, N>(output, post_coarse, post_fine, factors, at, s, k, value, cfg);
    }
}

/// The imaginary part of loaded value `k`: like pocketfft, irfft ignores it at
/// DC and Nyquist of a packed Hermitian input.
#[cube]
// The comptime switch stays an outer `if`.
#[allow(clippy::collapsible_if)]
pub(crate) fn packed_bin_imag<F: Float>(vi: F, k: usize, #[comptime] cfg: StageConfig) -> F {
    let mut out = vi;
    if comptime![cfg.input == InputForm::HermitianPacked] {
        if k == 0 || k == comptime![cfg.n] {
            out = F::new(0.0);
        }
    }
    out
}

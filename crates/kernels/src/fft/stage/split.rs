//! A first pass of a large odd radix whose butterflies are split over
//! several threads.

use cubecl::prelude::*;

use crate::precision::Storage;

use super::args::{Registers, StageTables, TileChecks, TileMemory};
use super::checksum::{check_input, check_output};
use super::config::StageConfig;
use super::coords::{slot, TileCoords};
use super::element::store_slot_value;
use super::pass_input::{butterfly_needed, read_pass_element, PassSignal};
use super::rules::{loads_directly, stores_directly};
use crate::fft::factor::butterfly_split;

/// Output `t` of a butterfly of odd radix `r` that slot `m` of a split
/// unit's outputs holds ([`split_first_pass`]): slot 0 is `y_0` (the first
/// chunk's alone), slots `2p + 1` and `2p + 2` the pair of chunk entry `p`,
/// `y_k` then `y_{r-k}` (swapped for the inverse), `k = chunk·pairs + p + 1`.
pub(crate) fn split_output(r: usize, pairs: usize, chunk: usize, m: usize, inverse: bool) -> Option<usize> {
    if m == 0 {
        return (chunk == 0).then_some(0);
    }
    let k = chunk * pairs + (m - 1) / 2 + 1;
    let first = m % 2 == 1;
    (k <= r / 2).then_some(if first != inverse { k } else { r - k })
}

/// (chunk, signal, butterfly) of unit `w` of a split first pass with
/// `butterflies` butterflies a signal: chunks slowest, so that a warp's
/// lanes share one (its constants are compiled in), then butterflies (rows)
/// or signals (columns) fastest, as the loads coalesce.
#[cube]
fn split_unit(w: usize, #[comptime] butterflies: usize, #[comptime] cfg: StageConfig) -> (usize, usize, usize) {
    let signals = comptime![cfg.signals_per_cube];
    let per_chunk = comptime![cfg.signals_per_cube * butterflies];
    let rest = w % per_chunk;
    if comptime![cfg.load_signals_fastest] {
        (w / per_chunk, rest % signals, rest / signals)
    } else {
        (w / per_chunk, rest / butterflies, rest % butterflies)
    }
}

/// A first pass of odd radix `r` whose butterflies are split over
/// [`butterfly_split`] threads each. The cube deals its units (signal,
/// butterfly, chunk) over all its threads; unit `chunk` of a butterfly
/// computes the output pairs `(y_k, y_{r-k})` of its chunk of `k` (and `y_0`
/// for chunk 0) as [`small_prime_dft`] does ([`split_chunk`]). The first pass
/// has no twiddles. Outputs are held across the barrier where the pass reads
/// the tile it overwrites.
///
/// [`small_prime_dft`]: super::butterfly::small_prime_dft()
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match)]
pub(super) fn split_first_pass<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    staged: &SharedMemory<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    at: TileCoords,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
    #[comptime] cfg: StageConfig,
) {
    let butterflies = comptime![cfg.pass_len() / r];
    let split = comptime![butterfly_split(r, cfg.butterfly_pairs)];
    let pairs = comptime![(r / 2).div_ceil(split)];
    let outputs = comptime![2 * pairs + 1];
    let units = comptime![cfg.signals_per_cube * butterflies * split];
    let threads = comptime![cfg.threads_per_cube()];
    let rounds = comptime![units.div_ceil(threads)];
    let to_global = comptime![cfg.radices.len() == 1 && stores_directly(&cfg)];
    // As the unsplit pass: only a first pass that reads global memory itself
    // writes the tile without a barrier first.
    let from_global = comptime![loads_directly(&cfg) && cfg.prefetch.is_none()];
    let lane = UNIT_POS as usize;
    let mut out = Registers::<F> {
        re: Array::<F>::new(comptime![rounds * outputs]),
        im: Array::<F>::new(comptime![rounds * outputs]),
    };
    #[unroll]
    for q in 0..rounds {
        let w = lane + q * threads;
        let (chunk, s, i) = split_unit(w, butterflies, cfg.clone());
        let signal = PassSignal {
            at,
            signal: s,
            base: s * comptime![cfg.smem_stride],
        };
        #[unroll]
        for c in 0..split {
            if lane < threads && w < units && chunk == c {
                split_chunk::<F, SI, NI>(
                    input,
                    staged,
                    tables,
                    tile_memory,
                    check,
                    &mut out,
                    signal,
                    i,
                    comptime![(q * outputs, c, r)],
                    cfg.clone(),
                );
            }
        }
    }
    if comptime![!from_global && !to_global] {
        // In place: every read of this pass must land before any write.
        sync_cube();
    }
    #[unroll]
    for q in 0..rounds {
        let w = lane + q * threads;
        let (chunk, s, i) = split_unit(w, butterflies, cfg.clone());
        #[unroll]
        for c in 0..split {
            if lane < threads && w < units && chunk == c {
                #[unroll]
                for m in 0..outputs {
                    match comptime![split_output(r, pairs, c, m, inverse)] {
                        Some(t) => {
                            let value = (out.re[comptime![q * outputs + m]], out.im[comptime![q * outputs + m]]);
                            place_split_output::<F, SO, NO>(
                                output,
                                tables,
                                tile_memory,
                                check,
                                value,
                                at,
                                s,
                                i,
                                comptime![(t, r)],
                                cfg.clone(),
                            );
                        }
                        None => {}
                    }
                }
            }
        }
    }
    if comptime![!to_global] {
        sync_cube();
    }
}

/// Chunk `c` of butterfly `i`'s outputs into `out` from `held`: `y_0` (chunk
/// 0 only) and the pairs `(y_k, y_{r-k})` of its `k`, streaming the input
/// pairs `(x_j, x_{r-j})` through cosine and sine sums instead of holding all
/// `r` values and outputs.
#[cube]
#[allow(clippy::too_many_arguments)]
fn split_chunk<F: Float, SI: Storage, NI: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    staged: &SharedMemory<Vector<SI::Elem, NI>>,
    tables: &StageTables<F>,
    tile_memory: &TileMemory<F>,
    check: &mut TileChecks<F>,
    out: &mut Registers<F>,
    signal: PassSignal,
    i: usize,
    #[comptime] at: (usize, usize, usize),
    #[comptime] cfg: StageConfig,
) {
    let (held, c, r) = at;
    let butterflies = comptime![cfg.pass_len() / r];
    let pairs = comptime![(r / 2).div_ceil(butterfly_split(r, cfg.butterfly_pairs))];
    let (x0r, x0i) = read_pass_element::<F, SI, NI>(
        input,
        staged,
        tables,
        tile_memory,
        signal,
        i,
        0usize,
        0usize,
        cfg.clone(),
    );
    if comptime![c == 0] {
        check_input::<F>(&check.checks, &mut check.sums, i, x0r, x0i, cfg.clone());
    }
    let first = comptime![c * pairs];
    let count = comptime![pairs.min(r / 2 - c * pairs)];
    // Per output pair: the cosine sums' re, im, the sine sums' re, im.
    let mut acc = Array::<F>::new(comptime![4 * pairs]);
    #[unroll]
    for p in 0..count {
        acc[4 * p] = x0r;
        acc[4 * p + 1] = x0i;
        acc[4 * p + 2] = F::new(0.0);
        acc[4 * p + 3] = F::new(0.0);
    }
    let mut y0r = x0r;
    let mut y0i = x0i;
    #[unroll]
    for j in 0..comptime![r / 2] {
        let (ar, ai) = read_pass_element::<F, SI, NI>(
            input,
            staged,
            tables,
            tile_memory,
            signal,
            i,
            comptime![(j + 1) * butterflies],
            0usize,
            cfg.clone(),
        );
        let (br, bi) = read_pass_element::<F, SI, NI>(
            input,
            staged,
            tables,
            tile_memory,
            signal,
            i,
            comptime![(r - 1 - j) * butterflies],
            0usize,
            cfg.clone(),
        );
        if comptime![c == 0] {
            check_input::<F>(
                &check.checks,
                &mut check.sums,
                i + comptime![(j + 1) * butterflies],
                ar,
                ai,
                cfg.clone(),
            );
            check_input::<F>(
                &check.checks,
                &mut check.sums,
                i + comptime![(r - 1 - j) * butterflies],
                br,
                bi,
                cfg.clone(),
            );
        }
        let (sum_r, sum_i, diff_r, diff_i) = (ar + br, ai + bi, ar - br, ai - bi);
        if comptime![c == 0] {
            y0r += sum_r;
            y0i += sum_i;
        }
        #[unroll]
        for p in 0..count {
            let angle = comptime![2.0 * core::f64::consts::PI * (((j + 1) * (first + p + 1)) % r) as f64 / r as f64];
            let cos = F::new(comptime![angle.cos() as f32]);
            let sin = F::new(comptime![angle.sin() as f32]);
            acc[4 * p] += cos * sum_r;
            acc[4 * p + 1] += cos * sum_i;
            acc[4 * p + 2] += sin * diff_r;
            acc[4 * p + 3] += sin * diff_i;
        }
    }
    out.re[held] = y0r;
    out.im[held] = y0i;
    #[unroll]
    for p in 0..count {
        // C ∓ i·S in slot 2p + 1, C ± i·S in 2p + 2 (see `split_output`).
        let (cr, ci, sr, si) = (acc[4 * p], acc[4 * p + 1], acc[4 * p + 2], acc[4 * p + 3]);
        out.re[held + 2 * p + 1] = cr + si;
        out.im[held + 2 * p + 1] = ci - sr;
        out.re[held + 2 * p + 2] = cr - si;
        out.im[held + 2 * p + 2] = ci + sr;
    }
}

/// Output `t` of butterfly `i` of signal `s`: to global memory where the
/// single pass stores directly (its outputs are the transform's, checked
/// here), else to the tile at `i·r + t` (span 1).
#[cube]
#[allow(clippy::too_many_arguments)]
fn place_split_output<F: Float, SO: Storage, NO: Size>(
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    value: (F, F),
    at: TileCoords,
    s: usize,
    i: usize,
    #[comptime] output_of: (usize, usize),
    #[comptime] cfg: StageConfig,
) {
    let (t, r) = output_of;
    let butterflies = comptime![cfg.pass_len() / r];
    if comptime![cfg.radices.len() == 1] {
        // A single pass: its outputs are the transform's.
        check_output::<F>(
            &check.checks,
            &mut check.sums,
            i + comptime![t] * butterflies,
            value.0,
            value.1,
            cfg.clone(),
        );
    }
    if comptime![cfg.radices.len() == 1 && stores_directly(&cfg)] {
        if butterfly_needed(i, cfg.clone(), r) {
            store_slot_value::<F, SO, NO>(
                output,
                &tables.post_coarse,
                &tables.post_fine,
                &tables.factors,
                at,
                s,
                i + comptime![t] * butterflies,
                value,
                cfg.clone(),
            );
        }
    } else {
        let to = s * comptime![cfg.smem_stride] + slot(i * r + comptime![t], cfg.padded_slots);
        tile_memory.re[to] = value.0;
        tile_memory.im[to] = value.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks of a split butterfly hold every output `0..r` once, in the
    /// forward and the inverse order, however finely it is split.
    #[test]
    fn split_chunks_hold_every_output_once() {
        for r in [17usize, 19, 23, 47, 61, 67] {
            for pairs in [1usize, 4, 12, 33] {
                let split = butterfly_split(r, pairs);
                let per_chunk = (r / 2).div_ceil(split);
                for inverse in [false, true] {
                    let mut held: Vec<usize> = (0..split)
                        .flat_map(|c| {
                            (0..2 * per_chunk + 1).filter_map(move |m| split_output(r, per_chunk, c, m, inverse))
                        })
                        .collect();
                    held.sort_unstable();
                    assert_eq!(
                        held,
                        (0..r).collect::<Vec<_>>(),
                        "r {r}, pairs {pairs}, inverse {inverse}"
                    );
                }
            }
        }
    }
}

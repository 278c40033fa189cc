//! A real signal of length `2n` through the half-length transform of its
//! packed pairs: its Hermitian bins folded before the passes (C2R), its bins
//! untangled after them (R2C).

use cubecl::prelude::*;

use crate::precision::Storage;

use super::args::StageTables;
use super::butterfly::{complex_mul, table_twiddle};
use super::config::StageConfig;
use super::coords::{slot, TileCoords};
use super::element::store_element;

/// Packed C2R: folds the `n + 1` Hermitian bins of each signal in shared memory
/// into the half-length complex spectrum of its real pairs.
#[cube]
pub(crate) fn fold_packed_tile<F: Float>(
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    twiddles: &Array<F>,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.n];
    let half = comptime![cfg.n / 2];
    let base = signal * comptime![cfg.smem_stride];
    let mut k = thread;
    while k <= half {
        let (xr, xi) = (
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
        );
        let (yr, yi) = (
            smem_re[base + slot(n - k, cfg.padded_slots)],
            smem_im[base + slot(n - k, cfg.padded_slots)],
        );
        let (zr, zi) = fold_bins::<F>(xr, xi, yr, yi, twiddles, k);
        smem_re[base + slot(k, cfg.padded_slots)] = zr;
        smem_im[base + slot(k, cfg.padded_slots)] = zi;
        if k != 0 && 2 * k != n {
            let (zr, zi) = fold_bins::<F>(yr, yi, xr, xi, twiddles, n - k);
            smem_re[base + slot(n - k, cfg.padded_slots)] = zr;
            smem_im[base + slot(n - k, cfg.padded_slots)] = zi;
        }
        k += comptime![cfg.threads_per_signal];
    }
    sync_cube();
}

/// Value `k` of the half-length spectrum of a real signal's pairs, from bins
/// `x = X[k]` and `y = X[n-k]` of the signal's spectrum:
/// `Z[k] = (X[k] + conj X[n-k]) + i·W_2n^{-k}·(X[k] - conj X[n-k])`, `W_2n = exp(-iπ/n)`.
#[cube]
pub(super) fn fold_bins<F: Float>(xr: F, xi: F, yr: F, yi: F, twiddles: &Array<F>, k: usize) -> (F, F) {
    let (wr, wi) = table_twiddle::<F>(twiddles, k, true);
    let (dr, di) = complex_mul::<F>(xr - yr, xi + yi, wr, wi);
    (xr + yr - di, xi - yi + dr)
}

/// Units of work of an untangling last pass with `quarter` butterflies: unit
/// `u > 0` is butterfly `u` with its mirror `quarter - u`; unit 0 is butterfly
/// 0 (its own mirror) with, for an even `quarter`, butterfly `quarter / 2`
/// (also its own).
pub(crate) fn untangled_units(quarter: usize) -> usize {
    quarter.div_ceil(2)
}

/// Bin `k` of a real signal's spectrum from `z = Z[k]` and `y = Z[n-k]` of the
/// half-length transform of its packed pairs, given `w = W_2n^k`:
/// `X[k] = (z + conj y)/2 - i/2 · w · (z - conj y)`.
#[cube]
pub(super) fn untangle_bin<F: Float>(zr: F, zi: F, yr: F, yi: F, wr: F, wi: F) -> (F, F) {
    let (dr, di) = complex_mul::<F>(zr - yr, zi + yi, wr, wi);
    ((zr + yr + di) * F::new(0.5), (zi - yi - dr) * F::new(0.5))
}

/// Stores bins `a` and `n - a` of the spectrum from `Z[a]` and `Z[n-a]`; the
/// second twiddle is `W_2n^(n-a) = -conj W_2n^a`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_bin_pair<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    at: TileCoords,
    signal: usize,
    a: usize,
    z: (F, F),
    y: (F, F),
    #[comptime] both: bool,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.n];
    let (wr, wi) = table_twiddle::<F>(&tables.twiddles, a, false);
    let (zr, zi) = z;
    let (yr, yi) = y;
    let x = untangle_bin::<F>(zr, zi, yr, yi, wr, wi);
    store_element::<F, S, N>(
        output,
        &tables.post_coarse,
        &tables.post_fine,
        &tables.factors,
        at,
        signal,
        a,
        x,
        cfg.clone(),
    );
    if both {
        let x = untangle_bin::<F>(yr, yi, zr, zi, F::new(0.0) - wr, wi);
        store_element::<F, S, N>(
            output,
            &tables.post_coarse,
            &tables.post_fine,
            &tables.factors,
            at,
            signal,
            n - a,
            x,
            cfg,
        );
    }
}

/// Bins `a` and, when `both`, `n - a` that a unit of an untangling last pass
/// stores, with `a = offset + u` for unit `u` (see [`untangled_units`]): `Z[a]`
/// sits in the unit's register slot `z` and `Z[n-a]` in slot `y`. Slots
/// `0..r` hold butterfly `u`'s outputs, `r..2r` its mirror's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BinPair {
    pub offset: usize,
    pub z: usize,
    pub y: usize,
    pub both: bool,
}

/// The bin pairs of unit 0 (`first`) or of any other unit of an untangling
/// last pass of radix `r` with `quarter` butterflies. Output `t` of butterfly
/// `i` is `Z[i + t·n/r]`, and `n - (i + t·n/r) = (n/r - i) + (r-1-t)·n/r`: for
/// unit `u > 0` that is output `r-1-t` of its mirror. Butterfly 0 is its own
/// mirror through `t ↔ r - t` (`t = 0`: `Z[0]` gives `X[0]` and `X[n]`), and
/// for an even `quarter` butterfly `quarter/2` in unit 0's mirror slots is its
/// own through `t ↔ r-1-t`.
pub(crate) fn untangled_bin_pairs(quarter: usize, r: usize, first: bool) -> Vec<BinPair> {
    if !first {
        return (0..r)
            .map(|t| BinPair {
                offset: t * quarter,
                z: t,
                y: r + (r - 1 - t),
                both: true,
            })
            .collect();
    }
    let zero = (0..=r / 2).map(|t| {
        let y = (r - t) % r;
        BinPair {
            offset: t * quarter,
            z: t,
            y,
            both: t == 0 || t != y,
        }
    });
    let half = (0..r.div_ceil(2))
        .filter(|_| quarter.is_multiple_of(2))
        .map(|t| BinPair {
            offset: quarter / 2 + t * quarter,
            z: r + t,
            y: r + (r - 1 - t),
            both: t != r - 1 - t,
        });
    zero.chain(half).collect()
}

/// Stores the bins of unit `u` of an untangling last pass, whose butterflies'
/// outputs sit in registers from `at_slot` (see [`untangled_bin_pairs`]).
#[cube]
// The cube macro unrolls index ranges over comptime lists, not iterators.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
pub(super) fn store_untangled_unit<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    at: TileCoords,
    signal: usize,
    u: usize,
    re: &Array<F>,
    im: &Array<F>,
    #[comptime] at_slot: usize,
    #[comptime] r: usize,
    #[comptime] cfg: StageConfig,
) {
    // Unit 0 holds the self-mirrored butterflies, every other unit a butterfly and its mirror.
    let first = comptime![untangled_bin_pairs(cfg.n / r, r, true)];
    let rest = comptime![untangled_bin_pairs(cfg.n / r, r, false)];
    if u == 0 {
        #[unroll]
        for p in 0..comptime![first.len()] {
            let pair = comptime![first[p]];
            let (z, y) = comptime![(at_slot + pair.z, at_slot + pair.y)];
            store_bin_pair::<F, S, N>(
                output,
                tables,
                at,
                signal,
                comptime![pair.offset],
                (re[z], im[z]),
                (re[y], im[y]),
                comptime![pair.both],
                cfg.clone(),
            );
        }
    } else {
        #[unroll]
        for p in 0..comptime![rest.len()] {
            let pair = comptime![rest[p]];
            let (z, y) = comptime![(at_slot + pair.z, at_slot + pair.y)];
            store_bin_pair::<F, S, N>(
                output,
                tables,
                at,
                signal,
                u + comptime![pair.offset],
                (re[z], im[z]),
                (re[y], im[y]),
                comptime![pair.both],
                cfg.clone(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over all units of an untangling last pass, every bin `0..=n` is stored
    /// once, from the slots holding `Z[a]` and `Z[n-a]` (indices mod `n`).
    #[test]
    fn untangled_units_store_every_bin_once_from_its_pair() {
        for r in 2..=16usize {
            for quarter in 1..=40usize {
                let n = r * quarter;
                let mut stored = vec![0usize; n + 1];
                for u in 0..untangled_units(quarter) {
                    let mirror = if u == 0 { quarter / 2 } else { quarter - u };
                    // Slot t holds Z[u + t·quarter]; slot r + t holds Z[mirror + t·quarter].
                    let held = |slot: usize| {
                        let (i, t) = if slot < r { (u, slot) } else { (mirror, slot - r) };
                        (i + t * quarter) % n
                    };
                    for pair in untangled_bin_pairs(quarter, r, u == 0) {
                        let a = u + pair.offset;
                        assert_eq!(held(pair.z), a % n, "r {r} quarter {quarter} unit {u} {pair:?}");
                        assert_eq!(held(pair.y), (n - a) % n, "r {r} quarter {quarter} unit {u} {pair:?}");
                        stored[a] += 1;
                        if pair.both {
                            stored[n - a] += 1;
                        }
                    }
                }
                assert!(stored.iter().all(|&c| c == 1), "r {r} quarter {quarter}: {stored:?}");
            }
        }
    }
}

//! Kernel selection: the block shape, thread tiles and split of `r` a problem
//! launches with.

use super::config::CgemmConfig;
use super::problem::CgemmProblem;
use crate::limits::DeviceLimits;
use crate::precision::Precision;

/// Most threads a cube gets, most complex values it stages per `r` term, and
/// the `r` terms staged at once (at most 16 KiB of shared memory), chosen from
/// a sweep of block shapes (`spectral_bench --cgemm-sweep`;
/// benches/results/2026-11-22_spectral_conv_h100.md).
const MAX_THREADS: usize = 256;
const MAX_STAGED_PER_TERM: usize = 512;
const CHUNK: usize = 4;
/// Shortest slice of `r` a split cube sums.
const MIN_SPLIT_TERMS: usize = 64;

/// Largest register tile not wider than the problem (1, 2 or 4 per side).
fn tile_for(len: usize) -> usize {
    match len {
        0..=1 => 1,
        2..=3 => 2,
        _ => 4,
    }
}

/// Threads along a side: enough to cover it with `tile`-wide tiles, at most 8.
fn threads_for(len: usize, tile: usize) -> usize {
    len.div_ceil(tile).next_power_of_two().min(8)
}

fn prev_power_of_two(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.max(1).leading_zeros())
}

impl CgemmProblem {
    /// The block shape this problem launches with on `limits`' device: small
    /// problems trade register tiles, then modes per cube, for parallelism
    /// until the grid keeps the device busy.
    pub fn config(&self, limits: &DeviceLimits) -> CgemmConfig {
        let min_cubes = limits.cubes_in_flight();
        let (tile_p, tile_q) = (tile_for(self.p), tile_for(self.q));
        let threads_p = threads_for(self.p, tile_p).min(4);
        let threads_q = threads_for(self.q, tile_q);
        let staged = tile_p * threads_p + tile_q * threads_q;
        let modes = (MAX_THREADS / (threads_p * threads_q))
            .min(prev_power_of_two(MAX_STAGED_PER_TERM / staged))
            .min(16)
            .min(self.k.max(1).next_power_of_two())
            .max(1);
        let mut cfg = CgemmConfig {
            tile_p,
            tile_q,
            threads_p,
            threads_q,
            modes,
            chunk: CHUNK,
            complex: self.complex,
            conj_a: self.conj_a,
            conj_b: self.conj_b,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            splits: 1,
        };
        // A long reduction into few outputs splits r among cubes (slices of at
        // least MIN_SPLIT_TERMS) until the GPU's threads are busy, rather than
        // shrinking cubes that would each walk all of r. The partials are
        // added into an f32 output only.
        let busy = self.cubes(&cfg) * cfg.threads();
        if busy < min_cubes * MAX_THREADS && self.precisions.c == Precision::F32 {
            cfg.splits = (min_cubes * MAX_THREADS)
                .div_ceil(busy)
                .min(self.r / MIN_SPLIT_TERMS)
                .max(1);
        }
        while self.cubes(&cfg) < min_cubes {
            if cfg.tile_q > 2 {
                cfg.tile_q /= 2;
            } else if cfg.tile_p > 2 {
                cfg.tile_p /= 2;
            } else if cfg.modes > 2 {
                cfg.modes /= 2;
            } else {
                break;
            }
        }
        cfg
    }

    fn cubes(&self, cfg: &CgemmConfig) -> usize {
        self.k.div_ceil(cfg.modes) * self.p.div_ceil(cfg.block_p()) * self.q.div_ceil(cfg.block_q()) * cfg.splits
    }
}

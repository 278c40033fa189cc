//! Global loads into the tile, and the host rules that choose how a stage
//! reads its input.

use cubecl::prelude::*;

use crate::precision::Storage;

use super::config::StageConfig;
use super::convolution::input_slot;
use super::coords::{advance_flat, split_flat, unit_in_tile, TileCoords};
use super::element::{load_element, packed_bin_imag, unit_walk_element};
use super::rules::{tile_loads_ahead, walks_units};

/// Fills the tile's shared memory with its signals' (windowed) input from
/// global memory, walking in the order the loads coalesce in.
#[cube]
pub(crate) fn load_tile<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let load_len = comptime![cfg.load_len()];
    if comptime![tile_loads_ahead(&cfg)] {
        if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
            load_rounds_ahead::<F, S, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        } else {
            load_flat_ahead::<F, S, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        }
    } else if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
        let (s, thread) = unit_in_tile(cfg.clone());
        let threads = comptime![cfg.threads_per_signal];
        #[unroll]
        for round in 0..comptime![load_len.div_ceil(threads)] {
            let (k, held) = unit_walk_element(thread, round, threads, load_len);
            if held {
                load_tile_element::<F, S, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            }
        }
    } else {
        let step = comptime![cfg.threads_per_cube()];
        let fastest = comptime![cfg.load_signals_fastest];
        let mut flat = UNIT_POS as usize;
        let (mut s, mut k) = split_flat(flat, load_len, signals, fastest);
        while flat < comptime![load_len * signals] {
            load_tile_element::<F, S, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
            s = next_s;
            k = next_k;
            flat += step;
        }
    }
    sync_cube();
}

/// A flat walk's load of the tile (see [`load_tile`]) unrolled over its
/// rounds, issuing every round's global load before it places any value
/// ([`flat_loads_ahead`]).
#[cube]
fn load_flat_ahead<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let load_len = comptime![cfg.load_len()];
    let signals = comptime![cfg.signals_per_cube];
    let total = comptime![load_len * signals];
    let step = comptime![cfg.threads_per_cube()];
    let fastest = comptime![cfg.load_signals_fastest];
    let rounds = comptime![total.div_ceil(step)];
    let first = UNIT_POS as usize;
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            let (vr, vi) = load_element::<F, S, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
}

/// A unit walk's load of its signal's elements ([`walks_units`]) that issues
/// every round's global load before it places any value in shared memory, so
/// that the loads' latencies overlap ([`loads_ahead`]).
#[cube]
fn load_rounds_ahead<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let (s, thread) = unit_in_tile(cfg.clone());
    let load_len = comptime![cfg.load_len()];
    let threads = comptime![cfg.threads_per_signal];
    let rounds = comptime![load_len.div_ceil(threads)];
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            let (vr, vi) = load_element::<F, S, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
    }
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
    }
}

/// Element `k` of the tile's signal `s` from global memory to its slot in
/// shared memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_tile_element<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) {
    let (vr, vi) = load_element::<F, S, N>(input, factors, at, s, k, cfg.clone());
    place_element::<F>(factors, smem_re, smem_im, s, k, vr, vi, cfg);
}

/// Writes loaded element `k` of the tile's signal `s` to its slot in shared
/// memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn place_element<F: Float>(
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    vr: F,
    vi: F,
    #[comptime] cfg: StageConfig,
) {
    let to = s * comptime![cfg.smem_stride] + input_slot::<F>(factors, k, cfg.clone());
    smem_re[to] = vr;
    smem_im[to] = packed_bin_imag::<F>(vi, k, cfg);
}

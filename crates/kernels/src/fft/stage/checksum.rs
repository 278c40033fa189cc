//! A stage's checksums in the kernel (see `fft/fault.rs`): each unit sums
//! `vᵀz` over the values its first pass reads and `−eᵀX` over the outputs its
//! last pass computes, with the squares of both sums' terms beside them; the
//! cube adds them up per signal and compares with the round-off tolerance. Also the test-only flips
//! of [`FaultInjection`](crate::fft::FaultInjection).

use cubecl::prelude::*;

use super::config::{Round, StageConfig};
use super::coords::slot;
use super::rules::pass_split;
use crate::fault::{is_finite, FAULT_HEADER, REPAIR_CAPACITY};
use crate::fft::fault::weight_prime;
use crate::fft::FaultSite;

/// What a unit's flag adds for a non-finite input (beside its injections).
const NON_FINITE: f32 = 1024.0;

/// Adds value `e` of the first pass's input: `v_e · z` to the difference.
#[cube]
pub(super) fn check_input<F: Float>(
    checks: &Array<F>,
    sums: &mut Array<F>,
    e: usize,
    zr: F,
    zi: F,
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.checks.is_some()] {
        let vr = checks[2 * e];
        let vi = checks[2 * e + 1];
        let (pr, pi) = (vr * zr - vi * zi, vr * zi + vi * zr);
        sums[0] += pr;
        sums[1] += pi;
        sums[2] += pr * pr + pi * pi;
    }
}

/// Subtracts output `k` of the last pass: `e_k · X` from the difference.
#[cube]
pub(super) fn check_output<F: Float>(
    checks: &Array<F>,
    sums: &mut Array<F>,
    k: usize,
    xr: F,
    xi: F,
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.checks.is_some()] {
        let at = comptime![2 * cfg.pass_len()] + 2 * k;
        let er = checks[at];
        let ei = checks[at + 1];
        sums[0] -= er * xr - ei * xi;
        sums[1] -= er * xi + ei * xr;
        sums[3] += xr * xr + xi * xi;
    }
}

/// Subtracts the `r` outputs `k = i + t·stride` of butterfly `i` of the last
/// pass: `e_k = ω_p^(i mod p)·ω_p^(t·stride mod p)`, so the outputs add up
/// by class `t·stride mod p` (known when compiling), the classes weigh
/// constants, and one table read (`e_i`) turns the sum — two adds an output
/// where [`check_output`] reads a weight and multiplies.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn check_butterfly_outputs<F: Float>(
    checks: &Array<F>,
    sums: &mut Array<F>,
    i: usize,
    re: &Array<F>,
    im: &Array<F>,
    #[comptime] at_slot: usize,
    #[comptime] r: usize,
    #[comptime] stride: usize,
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.checks.is_some()] {
        let p = comptime![weight_prime(cfg.pass_len())];
        let mut class_re = Array::<F>::new(p);
        let mut class_im = Array::<F>::new(p);
        let mut norm = F::new(0.0);
        #[unroll]
        for t in 0..r {
            let (xr, xi) = (re[at_slot + t], im[at_slot + t]);
            let c = comptime![(t * stride) % p];
            // The first output of a class starts its sum (no add of a zero).
            if comptime![(0..t).all(|u| (u * stride) % p != c)] {
                class_re[c] = xr;
                class_im[c] = xi;
            } else {
                class_re[c] += xr;
                class_im[c] += xi;
            }
            norm += xr * xr + xi * xi;
        }
        let mut sr = class_re[0];
        let mut si = class_im[0];
        #[unroll]
        for c in 1..p {
            if comptime![(0..r).any(|t| (t * stride) % p == c)] {
                let angle = comptime![2.0 * std::f64::consts::PI * c as f64 / p as f64];
                let wr = F::new(comptime![angle.cos() as f32]);
                let wi = F::new(comptime![angle.sin() as f32]);
                sr += wr * class_re[c] - wi * class_im[c];
                si += wr * class_im[c] + wi * class_re[c];
            }
        }
        let at = comptime![2 * cfg.pass_len()] + 2 * i;
        let er = checks[at];
        let ei = checks[at + 1];
        sums[0] -= er * sr - ei * si;
        sums[1] -= er * si + ei * sr;
        sums[3] += norm;
    }
}

/// Whether executed pass `pass` flips a value at `site` (comptime).
pub(super) fn injects_at(cfg: &StageConfig, site: FaultSite, pass: usize) -> bool {
    cfg.checks.and_then(|c| c.inject) == Some((site, pass))
}

/// The index of a pass among those a stage runs: a convolution's inverse
/// transform (its reversed round) runs after the forward's passes and
/// starts at its second pass (the turn ran its first).
pub(super) fn executed_pass(cfg: &StageConfig, pass: usize, reversed: bool) -> usize {
    if reversed {
        cfg.radices.len() + pass - 1
    } else {
        pass
    }
}

/// `x` with bit `bit` flipped.
#[cube]
pub(super) fn flip_bit<F: Float>(x: F, bit: u32) -> F {
    F::reinterpret(u32::reinterpret(x) ^ (1u32 << bit))
}

/// Flips one of a unit's register values of the pass, when the injection
/// picks this unit (`inject[1]`) and, among its `butterflies` butterflies of
/// radix `r`, this one's value (`inject[2]` modulo the unit's values).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn flip_register<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    inject: &Array<u32>,
    sums: &mut Array<F>,
    inject_here: bool,
    #[comptime] butterfly: usize,
    #[comptime] butterflies: usize,
    #[comptime] r: usize,
) {
    if inject_here && UNIT_POS == inject[1] {
        let value = inject[2] as usize % comptime![2 * butterflies * r];
        let held = value / 2;
        if held / r == butterfly {
            let at = held;
            if (value & 1) == 0 {
                re[at] = flip_bit::<F>(re[at], inject[3]);
            } else {
                im[at] = flip_bit::<F>(im[at], inject[3]);
            }
            sums[4] += F::new(1.0);
        }
    }
}

/// Flips a value of the tile in shared memory (unit 0, then a barrier):
/// `inject[2]` picks signal, element and part, `inject[3]` the bit.
#[cube]
pub(super) fn flip_shared<F: Float>(
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    inject: &Array<u32>,
    sums: &mut Array<F>,
    #[comptime] cfg: StageConfig,
) {
    if UNIT_POS == 0 {
        let signals = comptime![cfg.signals_per_cube];
        let len = comptime![cfg.pass_len()];
        let value = inject[2] as usize;
        let s = value % signals;
        let e = (value / signals) % len;
        let at = s * comptime![cfg.smem_stride] + slot(e, cfg.padded_slots);
        if ((value / (signals * len)) & 1) == 0 {
            smem_re[at] = flip_bit::<F>(smem_re[at], inject[3]);
        } else {
            smem_im[at] = flip_bit::<F>(smem_im[at], inject[3]);
        }
        sums[4] += F::new(1.0);
    }
    sync_cube();
}

/// Whether the first pass runs split (`split.rs`, as `passes.rs` decides):
/// it deals its butterflies over the cube's units regardless of signal.
pub(super) fn checks_whole_tile(cfg: &StageConfig) -> bool {
    pass_split(cfg, &Round::first(cfg), 0) > 1
}

/// Which checksum group `signal`'s units add to: their signal, or the
/// whole tile where the first pass runs split ([`checks_whole_tile`]).
#[cube]
pub(super) fn check_group(signal: usize, #[comptime] cfg: StageConfig) -> usize {
    let mut group = signal;
    if comptime![checks_whole_tile(&cfg)] {
        group = 0usize;
    }
    group
}

/// A unit's place in its checksum group ([`check_group`]): its thread of
/// the signal, or its unit of the cube where the group is the whole tile;
/// member 0 leads the group.
#[cube]
pub(super) fn group_member(thread: usize, #[comptime] cfg: StageConfig) -> usize {
    let mut member = thread;
    if comptime![checks_whole_tile(&cfg)] {
        member = UNIT_POS as usize;
    }
    member
}

/// How many partial sums a group's verdict adds up in its first round: about
/// √members, so that the first round's members (in parallel) and the leader
/// (alone, in the second) each add about √members slots; a group of fewer
/// than 16 members is added up by its leader at once (the leader adding all
/// of them alone cost most on short signals:
/// benches/results/2026-11-29_abft_fourth_h200.md).
pub(super) fn verdict_lanes(members: usize) -> usize {
    if members < 16 {
        members
    } else {
        (1..).find(|l| l * l >= members).expect("a root")
    }
}

/// Each checksum group's verdict ([`check_group`]: a signal, or a tile) from
/// its units' sums, added up in the tile's shared memory (free once the tile
/// is stored): its leader (first unit) gets whether the group is faulty and
/// whether a fault was injected into it, every other unit `(false, false)`.
/// The tile memory is in use until the leaders are done: a cube that goes on
/// with another tile meets a barrier first.
#[cube]
pub(super) fn group_verdict<F: Float>(
    checks: &Array<F>,
    sums: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) -> (bool, bool) {
    let threads = comptime![cfg.threads_per_cube()];
    let whole_tile = comptime![checks_whole_tile(&cfg)];
    let per_group = comptime![if whole_tile { threads } else { cfg.threads_per_signal }];
    let lanes = comptime![verdict_lanes(per_group)];
    let member = group_member(thread, cfg.clone());
    let first = check_group(signal, cfg.clone()) * per_group;
    let slot = first + member;
    // A non-finite input is no fault of the stage (the output is as
    // non-finite as the input); flagged beside the injections.
    let finite_input = is_finite::<F>(sums[2]);
    sync_cube();
    smem_re[slot] = sums[0];
    smem_im[slot] = sums[1];
    smem_re[threads + slot] = sums[2] + sums[3];
    smem_im[threads + slot] = sums[4] + select(finite_input, F::new(0.0), F::new(NON_FINITE));
    sync_cube();
    if comptime![per_group > lanes] {
        if member < lanes {
            let mut dr = smem_re[slot];
            let mut di = smem_im[slot];
            let mut norm = smem_re[threads + slot];
            let mut injected = smem_im[threads + slot];
            let mut j = slot + lanes;
            while j < first + per_group {
                dr += smem_re[j];
                di += smem_im[j];
                norm += smem_re[threads + j];
                injected += smem_im[threads + j];
                j += lanes;
            }
            smem_re[slot] = dr;
            smem_im[slot] = di;
            smem_re[threads + slot] = norm;
            smem_im[threads + slot] = injected;
        }
        sync_cube();
    }
    let mut faulty = false;
    let mut injected_here = false;
    if member == 0 {
        let mut dr = F::new(0.0);
        let mut di = F::new(0.0);
        let mut norm = F::new(0.0);
        let mut injected = F::new(0.0);
        #[unroll]
        for j in 0..lanes {
            dr += smem_re[first + j];
            di += smem_im[first + j];
            norm += smem_re[threads + first + j];
            injected += smem_im[threads + first + j];
        }
        let tolerance = checks[comptime![4 * cfg.pass_len()]];
        // From a finite input, a non-finite difference or output (an
        // overflow) is a fault.
        let squared = dr * dr + di * di;
        let bound = tolerance * tolerance * norm;
        let agrees = is_finite::<F>(squared) && is_finite::<F>(bound) && squared <= bound;
        faulty = injected < F::new(NON_FINITE) && !agrees;
        let non_finite = F::floor(injected / F::new(NON_FINITE));
        injected_here = injected - non_finite * F::new(NON_FINITE) > F::new(0.5);
    }
    (faulty, injected_here)
}

/// A group leader's record of its first verdict: a fault detected (and, to
/// correct, the group listed for the repair launch as `entry`), a fault
/// injected.
#[cube]
pub(super) fn record_verdict(
    faults: &Array<Atomic<u32>>,
    faulty: bool,
    injected: bool,
    entry: usize,
    #[comptime] cfg: StageConfig,
) {
    if faulty {
        faults[0].fetch_add(1u32);
        if comptime![cfg.checks.is_some_and(|c| c.correct)] {
            let listed = faults[3].fetch_add(1u32) as usize;
            if listed < comptime![REPAIR_CAPACITY] {
                faults[comptime![FAULT_HEADER] + listed].store(entry as u32);
            }
        }
    }
    if injected {
        faults[2].fetch_add(1u32);
    }
}

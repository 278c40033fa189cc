//! A model of the shared-memory bank conflicts of a stage's tile, by which
//! the planner lays out the signals of a stage bound by shared memory (see
//! [`shared_layout`]).
//!
//! Shared memory serves a warp's access in wavefronts: 32 banks of 4-byte
//! words, one word per bank per wavefront (lanes reading the same word
//! share it). A warp whose lanes hit `w` distinct words of one bank takes
//! `w` wavefronts. The model replays the words that [`stockham_passes`] and
//! the tile's load and store walks touch, warp by warp, and counts.
//!
//! [`stockham_passes`]: super::stage

use super::stage::{
    loads_directly, padded_len, pass_split, split_output, stores_directly, untangled_units, walks_units, OutputForm,
    Round, StageConfig,
};

const BANKS: usize = 32;
const WARP: usize = 32;

/// What a stage's warps ask of shared memory: their accesses (warp
/// instructions with at least one active lane, the conflict-free floor) and
/// the wavefronts those take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    pub accesses: usize,
    pub wavefronts: usize,
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, other: Traffic) {
        self.accesses += other.accesses;
        self.wavefronts += other.wavefronts;
    }
}

impl std::iter::Sum for Traffic {
    fn sum<I: Iterator<Item = Traffic>>(iter: I) -> Traffic {
        let mut total = Traffic::default();
        iter.for_each(|t| total += t);
        total
    }
}

/// Wavefronts one warp access takes; `words` holds one word per active lane.
fn wavefronts(words: &mut Vec<usize>) -> usize {
    words.sort_unstable();
    words.dedup();
    let mut per_bank = [0usize; BANKS];
    for &w in words.iter() {
        per_bank[w % BANKS] += 1;
    }
    words.clear();
    per_bank.into_iter().max().unwrap_or(0)
}

/// Shared-memory position of element `x` of signal `s` (see `stage::slot`):
/// the words its first `x` values span.
fn word(cfg: &StageConfig, s: usize, x: usize) -> usize {
    s * cfg.smem_stride + padded_len(x, cfg.padded_slots)
}

/// One access of every warp of the cube, where lane `u` of the cube touches
/// `at(u)` (nothing for `None`).
fn cube_access(cfg: &StageConfig, at: impl Fn(usize) -> Option<usize>) -> Traffic {
    let threads = cfg.threads_per_cube();
    let mut words = Vec::with_capacity(WARP);
    (0..threads)
        .step_by(WARP)
        .map(|first| {
            words.extend((first..(first + WARP).min(threads)).filter_map(&at));
            Traffic {
                accesses: usize::from(!words.is_empty()),
                wavefronts: wavefronts(&mut words),
            }
        })
        .sum()
}

/// (signal, thread within the signal) of cube lane `u` (see `stage::unit_in_tile`).
fn unit(cfg: &StageConfig, u: usize) -> (usize, usize) {
    if cfg.load_signals_fastest {
        (u % cfg.signals_per_cube, u / cfg.signals_per_cube)
    } else {
        (u / cfg.threads_per_signal, u % cfg.threads_per_signal)
    }
}

/// The traffic of a walk over `len` elements of every signal of the tile, in
/// the order the tile's loads and stores walk it ([`walked_element`]),
/// reading element `k` and, for a `mirrored` walk (the store of bins that
/// pair `Z[k]` with `Z[n - k]`), element `n - k` too.
fn walk(cfg: &StageConfig, len: usize, signals_fastest: bool, mirrored: bool) -> Traffic {
    let n = cfg.n;
    (0..len * cfg.signals_per_cube)
        .step_by(cfg.threads_per_cube())
        .map(|start| {
            let element = |u| walked_element(cfg, len, signals_fastest, start, u);
            let mut traffic = cube_access(cfg, |u| element(u).map(|(s, k)| word(cfg, s, k % n)));
            if mirrored {
                traffic += cube_access(cfg, |u| element(u).map(|(s, k)| word(cfg, s, (n - k % n) % n)));
            }
            traffic
        })
        .sum()
}

/// The (signal, element) unit `u` takes in the round of a walk over `len`
/// elements of every signal that starts at flat position `start`: a unit
/// walk's or a flat walk's (see `stage::walks_units`), `None` where the
/// unit has none.
fn walked_element(
    cfg: &StageConfig,
    len: usize,
    signals_fastest: bool,
    start: usize,
    u: usize,
) -> Option<(usize, usize)> {
    let signals = cfg.signals_per_cube;
    if walks_units(cfg, len, signals_fastest) {
        let (s, thread) = unit(cfg, u);
        let k = thread + start / cfg.threads_per_cube() * cfg.threads_per_signal;
        return (k < len).then_some((s, k));
    }
    let flat = start + u;
    let (s, k) = if signals_fastest {
        (flat % signals, flat / signals)
    } else {
        (flat / len, flat % len)
    };
    (flat < len * signals).then_some((s, k))
}

/// One Stockham pass as a tile runs it (see `stage::stockham_passes`): radix
/// `r`, whether it reads and writes shared memory, and the span its writes
/// are placed for (the span already transformed; the inverse's first, 1, at
/// a convolution's turn).
struct Pass {
    r: usize,
    /// Threads each butterfly is split over (`stage::pass_split`).
    split: usize,
    written_span: usize,
    reads: bool,
    writes: bool,
}

/// The passes of the stage's tile in the order [`Round`] gives them: one
/// transform, or a convolution's two, which turn from the first's last pass
/// to the second's second pass.
fn passes(cfg: &StageConfig, loads_global: bool, stores_global: bool) -> Vec<Pass> {
    let count = cfg.radices.len();
    let forward = Round::first(cfg);
    let mut all: Vec<Pass> = (0..count)
        .map(|pass| {
            let (r, span) = forward.radix_and_span(&cfg.radices, pass);
            let last = pass + 1 == count;
            Pass {
                r,
                split: pass_split(cfg, &forward, pass),
                // A turning pass writes as the inverse's first pass (span 1) would.
                written_span: if last && forward.turn { 1 } else { span },
                reads: pass > 0 || !(loads_global || cfg.prefetch.is_some()),
                writes: !last || !stores_global,
            }
        })
        .collect();
    if forward.turn {
        let inverse = Round::inverse_of_turn();
        all.extend((1..count).map(|pass| {
            let (r, span) = inverse.radix_and_span(&cfg.radices, pass);
            Pass {
                r,
                split: pass_split(cfg, &inverse, pass),
                written_span: span,
                reads: true,
                writes: true,
            }
        }));
    }
    all
}

/// The shared-memory traffic of one cube of the stage: its Stockham passes
/// ([`passes`]), the tile's load (where the first pass does not read global
/// memory) and its store (where the last pass does not write it). Rader's
/// permutations count as the identity.
pub(crate) fn tile_traffic(cfg: &StageConfig) -> Traffic {
    let n = cfg.pass_len();
    let threads = cfg.threads_per_signal;
    let (loads_global, stores_global) = (loads_directly(cfg), stores_directly(cfg));
    let mut total = Traffic::default();
    if !loads_global {
        total += walk(cfg, cfg.load_len(), cfg.load_signals_fastest, false);
    }
    if !stores_global {
        let len = if cfg.store_walks_elements() {
            cfg.n
        } else {
            cfg.store.stored_len(cfg.output_seq_len())
        };
        let mirrored = matches!(cfg.output, OutputForm::Untangled | OutputForm::TwinSpectra);
        total += walk(cfg, len, cfg.store_signals_fastest, mirrored);
    }
    for pass in passes(cfg, loads_global, stores_global) {
        let Pass {
            r,
            split,
            written_span,
            reads,
            writes,
        } = pass;
        let butterflies = n / r;
        if split > 1 {
            total += split_pass_traffic(cfg, r, split, reads, writes);
            continue;
        }
        // An untangling last pass gives each thread butterfly u and its mirror.
        let untangle = !writes && cfg.output == OutputForm::Untangled;
        let units = if untangle {
            untangled_units(butterflies)
        } else {
            butterflies
        };
        for q in 0..units.div_ceil(threads) {
            for mirror in [false, true].into_iter().take(if untangle { 2 } else { 1 }) {
                // Butterfly `i` of lane `u`'s signal `s`, if it has one.
                let butterfly = |u: usize| {
                    let (s, thread) = unit(cfg, u);
                    let work = thread + q * threads;
                    let i = match (mirror, work) {
                        (false, _) => work,
                        (true, 0) => butterflies / 2,
                        (true, _) => butterflies - work,
                    };
                    let exists = work < units && !(mirror && work == 0 && butterflies % 2 == 1);
                    exists.then_some((s, i))
                };
                for j in 0..r {
                    if reads {
                        total += cube_access(cfg, |u| butterfly(u).map(|(s, i)| word(cfg, s, i + j * butterflies)));
                    }
                    if writes {
                        total += cube_access(cfg, |u| {
                            butterfly(u).map(|(s, i)| {
                                let k = i % written_span;
                                word(cfg, s, (i - k) * r + k + j * written_span)
                            })
                        });
                    }
                }
            }
        }
    }
    total
}

/// The traffic of a split first pass (`stage::split_first_pass`): the cube
/// deals (chunk, signal, butterfly) units over its lanes, chunk slowest; each
/// unit reads its butterfly's `r` inputs and writes its chunk's outputs.
fn split_pass_traffic(cfg: &StageConfig, r: usize, split: usize, reads: bool, writes: bool) -> Traffic {
    let butterflies = cfg.pass_len() / r;
    let pairs = (r / 2).div_ceil(split);
    let per_chunk = cfg.signals_per_cube * butterflies;
    let threads = cfg.threads_per_cube();
    let mut total = Traffic::default();
    for q in 0..(per_chunk * split).div_ceil(threads) {
        // (chunk, signal, butterfly) of lane `u` (see `stage::split_unit`).
        let unit = |u: usize| {
            let w = u + q * threads;
            let rest = w % per_chunk;
            let (s, i) = if cfg.load_signals_fastest {
                (rest % cfg.signals_per_cube, rest / cfg.signals_per_cube)
            } else {
                (rest / butterflies, rest % butterflies)
            };
            (w < per_chunk * split).then_some((w / per_chunk, s, i))
        };
        if reads {
            for j in 0..r {
                total += cube_access(cfg, |u| unit(u).map(|(_, s, i)| word(cfg, s, i + j * butterflies)));
            }
        }
        if writes {
            for m in 0..2 * pairs + 1 {
                total += cube_access(cfg, |u| {
                    unit(u).and_then(|(c, s, i)| split_output(r, pairs, c, m, false).map(|t| word(cfg, s, i * r + t)))
                });
            }
        }
    }
    total
}

/// The lanes a signal of a row stage may take in [`shared_layout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lanes {
    /// Its own threads (a caller that fixes the cube's threads).
    Own,
    /// Its own threads, or those rounded up to a power of two below a warp.
    PowerOfTwo,
}

/// Lays out the signals of a stage in shared memory for the fewest modelled
/// wavefronts per signal: the threads each signal of a row stage takes (its
/// own, or where `lanes` allows rounded up to a power of two below a warp, so
/// that signals sit in aligned lane groups), whether slots are padded, and
/// the distance between signals. `signals_for(cfg)` gives the signals a cube
/// of that layout would hold, each of `slots` complex values. The
/// configuration as given is one candidate, kept on ties
/// (benches/results/2026-11-25_shared_layout_h100.md).
pub(crate) fn shared_layout(
    cfg: &StageConfig,
    slots: usize,
    lanes: Lanes,
    signals_for: impl Fn(&StageConfig) -> usize,
) -> StageConfig {
    let own = cfg.threads_per_signal;
    let mut candidates = vec![own];
    if lanes == Lanes::PowerOfTwo && !cfg.load_signals_fastest && own < WARP && !own.is_power_of_two() {
        candidates.push(own.next_power_of_two());
    }
    // Idle lanes cost their share of the stage's other instructions (global
    // loads and stores, arithmetic): wavefronts scaled by the lanes a signal takes.
    let cost = |c: &StageConfig| {
        let per_signal = tile_traffic(c).wavefronts as f64 / c.signals_per_cube as f64;
        per_signal * c.threads_per_signal as f64 / own as f64
    };
    let mut best = cfg.clone();
    best.signals_per_cube = signals_for(&best);
    let mut best_cost = cost(&best);
    for &threads in &candidates {
        for padded in [true, false] {
            let mut candidate = cfg.clone();
            candidate.threads_per_signal = threads;
            candidate.padded_slots = padded;
            let least = padded_len(slots, padded);
            for stride in least..least + BANKS {
                candidate.smem_stride = stride;
                candidate.signals_per_cube = signals_for(&candidate);
                let c = cost(&candidate);
                if c < best_cost {
                    best_cost = c;
                    best = candidate.clone();
                }
                // The distance between signals means nothing to a cube of one.
                if candidate.signals_per_cube == 1 {
                    break;
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::factor::{default_max_radix, BUTTERFLY_PAIRS};
    use super::super::stage::whole_signal_stage;
    use super::super::stage::{Convolution, InputForm};
    use super::*;

    #[test]
    fn wavefronts_count_the_distinct_words_of_the_busiest_bank() {
        let count = |words: Vec<usize>| wavefronts(&mut words.clone());
        assert_eq!(count((0..32).collect()), 1);
        assert_eq!(count((0..32).map(|lane| 2 * lane).collect()), 2);
        assert_eq!(count((0..32).map(|lane| 32 * lane).collect()), 32);
        assert_eq!(count((0..32).map(|lane| 33 * lane).collect()), 1);
        // Lanes reading one word share it.
        assert_eq!(count(vec![7; 32]), 1);
        assert_eq!(count(Vec::new()), 0);
    }

    /// Rader's 211 over rows (210 = 15·14, 15 threads a signal, 17 signals a
    /// cube): the model sees the 2-way conflicts ncu counted on that layout and
    /// few on the modelled one (16 lanes a signal, unpadded, signals 240 words
    /// apart; benches/results/2026-11-25_shared_layout_h100.md).
    #[test]
    fn the_model_sees_the_conflicts_ncu_counted_for_rader_211_rows() {
        let forms = (InputForm::Complex, OutputForm::Complex);
        let mut plain = whole_signal_stage(
            211,
            Some(Convolution::Rader),
            forms,
            default_max_radix(210),
            BUTTERFLY_PAIRS,
        );
        plain.signals_per_cube = 17;
        assert_eq!(
            (plain.radices.as_slice(), plain.threads_per_signal),
            (&[15, 14][..], 15)
        );
        let ways = |cfg: &StageConfig| {
            let traffic = tile_traffic(cfg);
            traffic.wavefronts as f64 / traffic.accesses as f64
        };
        let plain_ways = ways(&plain);
        assert!((1.8..=2.3).contains(&plain_ways), "plain layout: {plain_ways:.2}-way");
        let modelled = shared_layout(&plain, 212, Lanes::PowerOfTwo, |cfg| 256 / cfg.threads_per_signal);
        assert_eq!(
            (
                modelled.threads_per_signal,
                modelled.padded_slots,
                modelled.smem_stride % 32
            ),
            (16, false, 16)
        );
        let modelled_ways = ways(&modelled);
        assert!(modelled_ways <= 1.35, "modelled layout: {modelled_ways:.2}-way");
    }

    /// Rader's rows walk units (211 over 16 threads a signal: a ragged last
    /// round), its column tiles and plain rows walk flat; either way every
    /// element of every signal is taken once.
    #[test]
    fn tile_walks_take_every_element_once() {
        let forms = (InputForm::Complex, OutputForm::Complex);
        let mut rows = whole_signal_stage(
            211,
            Some(Convolution::Rader),
            forms,
            default_max_radix(210),
            BUTTERFLY_PAIRS,
        );
        rows.threads_per_signal = 16;
        rows.signals_per_cube = 5;
        let mut columns = rows.clone();
        columns.load_signals_fastest = true;
        columns.store_signals_fastest = true;
        let mut plain = whole_signal_stage(384, None, forms, default_max_radix(384), BUTTERFLY_PAIRS);
        plain.signals_per_cube = 3;
        for (cfg, by_units) in [(&rows, true), (&columns, false), (&plain, false)] {
            let len = cfg.n;
            let fastest = cfg.load_signals_fastest;
            assert_eq!(walks_units(cfg, len, fastest), by_units, "n = {}", cfg.n);
            let mut taken = vec![0usize; len * cfg.signals_per_cube];
            for start in (0..len * cfg.signals_per_cube).step_by(cfg.threads_per_cube()) {
                for u in 0..cfg.threads_per_cube() {
                    if let Some((s, k)) = walked_element(cfg, len, fastest, start, u) {
                        taken[s * len + k] += 1;
                    }
                }
            }
            assert!(taken.iter().all(|&t| t == 1), "n = {}: {taken:?}", cfg.n);
        }
    }
}

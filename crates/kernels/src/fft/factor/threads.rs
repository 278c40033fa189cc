//! Threads and rounds of a plan's passes: threads per signal, split first-pass
//! butterflies, and pass orders that keep the threads busy.

use super::primes::is_smooth;

/// Threads a cube may have on every backend we target.
pub const MAX_SIGNAL_THREADS: usize = 1024;

/// Most output pairs `(y_k, y_{r-k})` of an odd radix's butterfly one thread
/// computes in a split first pass ([`butterfly_split`]).
pub const BUTTERFLY_PAIRS: usize = 12;

/// Smallest radix whose first pass splits its butterflies.
const MIN_SPLIT_RADIX: usize = 17;

/// Threads the butterflies of a first pass of radix `r` are split over: for
/// an odd `r` from `MIN_SPLIT_RADIX` (17) on, at least two and enough that each
/// computes at most `pairs` of its `(r−1)/2` output pairs; 1 for other
/// radices or where `pairs` is 0. A split thread streams the input pairs
/// `(x_j, x_{r-j})` through its accumulators instead of holding the whole
/// butterfly, which would spill. Smaller odd radices such as 15 lose by
/// splitting
/// (benches/results/2026-11-25_split_butterflies_h100.md).
pub fn butterfly_split(r: usize, pairs: usize) -> usize {
    if pairs == 0 || r.is_multiple_of(2) || r < MIN_SPLIT_RADIX {
        1
    } else {
        (r / 2).div_ceil(pairs).max(2)
    }
}

/// Threads a signal's Stockham passes over `len` run on: the work units of
/// one of the passes (its `len / r` butterflies, those of a split first pass
/// times their [`butterfly_split`] over `pairs`), divided into the fewest
/// equal rounds that bring it within [`MAX_SIGNAL_THREADS`]; the one that
/// leaves the fewest units idle over all passes, then the fewest threads
/// (more signals share a cube). For powers of two that is one butterfly of
/// the largest radix per thread. Breaking ties towards more threads (fewer
/// rounds) ran slower (benches/results/2026-11-24_composite_radices_h100.md).
pub fn threads_per_signal(len: usize, radices: &[usize], pairs: usize) -> usize {
    let units: Vec<usize> = radices
        .iter()
        .enumerate()
        .map(|(pass, &r)| {
            let split = if pass == 0 { butterfly_split(r, pairs) } else { 1 };
            (len / r).max(1) * split
        })
        .collect();
    let cost = |threads: usize| (slots(&units, threads), threads);
    units
        .iter()
        .map(|&u| u.div_ceil(u.div_ceil(MAX_SIGNAL_THREADS)))
        .min_by_key(|&threads| cost(threads))
        .unwrap_or(1)
}

/// Thread-rounds the unsplit passes `radices` over `len` take on `threads`
/// threads: each pass's rounds times the threads, idle ones included.
pub fn thread_rounds_on(len: usize, radices: &[usize], threads: usize) -> usize {
    let units: Vec<usize> = radices.iter().map(|&r| (len / r).max(1)).collect();
    slots(&units, threads)
}

/// Rounds of butterflies one of `threads` threads runs over the unsplit
/// passes `radices` over `len`: each pass's `len / r` butterflies, a round
/// per `threads` of them.
pub fn rounds_per_thread(len: usize, radices: &[usize], threads: usize) -> usize {
    radices.iter().map(|&r| (len / r).div_ceil(threads)).sum()
}

/// [`thread_rounds_on`] the plan's [`threads_per_signal`].
pub fn thread_rounds(len: usize, radices: &[usize]) -> usize {
    thread_rounds_on(len, radices, threads_per_signal(len, radices, 0))
}

/// Thread-rounds passes of `units` work units each take on `threads` threads.
fn slots(units: &[usize], threads: usize) -> usize {
    units.iter().map(|&u| u.div_ceil(threads) * threads).sum()
}

/// `radices` of a 7-smooth `len` reordered for a first pass that reads
/// global memory: where the first pass's last round of butterflies leaves at
/// least half of the `threads` idle, so that most threads have no loads in
/// flight there, the first pass whose butterflies fill whole rounds trades
/// places with it (the passes' product, and so the transform, does not depend
/// on their order). A last round only a third idle gains too little to reorder
/// (benches/results/2026-11-26_first_pass_rounds_h100.md).
pub fn first_pass_in_whole_rounds(len: usize, radices: &[usize], threads: usize) -> Vec<usize> {
    let mut ordered = radices.to_vec();
    let last_round = |r: usize| (len / r) % threads;
    let mostly_idle = |r: usize| last_round(r) != 0 && 2 * last_round(r) <= threads;
    if is_smooth(len) && ordered.first().is_some_and(|&r| mostly_idle(r)) {
        if let Some(pass) = ordered.iter().position(|&r| last_round(r) == 0) {
            ordered.swap(0, pass);
        }
    }
    ordered
}

/// `radices` of a 7-smooth `len` reordered for a stage whose first pass reads
/// a staged tile (resident cubes) or signals side by side (column tiles):
/// where the first pass's radix exceeds the last's, the two trade places, so
/// that the plan's odd composite, which it puts first, runs last: there a
/// larger last pass runs faster, while column tiles lose with their smallest
/// radix last (benches/results/2026-11-26_staged_pass_order_h100.md).
pub fn largest_first_pass_last(len: usize, radices: &[usize]) -> Vec<usize> {
    let mut ordered = radices.to_vec();
    if let (true, [first, .., last]) = (is_smooth(len), ordered.as_mut_slice()) {
        if first > last {
            std::mem::swap(first, last);
        }
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::super::radices::{default_max_radix, radices};
    use super::*;

    #[test]
    fn threads_leave_the_fewest_butterflies_idle() {
        // Powers of two: one butterfly of the largest radix per thread.
        assert_eq!(threads_per_signal(128, &[2, 8, 8], BUTTERFLY_PAIRS), 16);
        assert_eq!(threads_per_signal(1024, &[4, 16, 16], BUTTERFLY_PAIRS), 64);
        assert_eq!(threads_per_signal(192, &[3, 8, 8], BUTTERFLY_PAIRS), 24);
        // 768 = 12·8·8: 96 threads run every pass in one round (64 would take two for the 8s).
        assert_eq!(threads_per_signal(768, &[12, 8, 8], BUTTERFLY_PAIRS), 96);
        assert_eq!(threads_per_signal(1000, &[5, 5, 5, 8], BUTTERFLY_PAIRS), 200);
        // Ties (as many idle slots) go to fewer threads: 384 = 6·8·8 on 48, not 64.
        assert_eq!(threads_per_signal(384, &[6, 8, 8], BUTTERFLY_PAIRS), 48);
        assert_eq!(threads_per_signal(3072, &[12, 16, 16], BUTTERFLY_PAIRS), 192);
        assert_eq!(threads_per_signal(500, &[5, 5, 5, 4], BUTTERFLY_PAIRS), 100);
        assert_eq!(threads_per_signal(1, &[], BUTTERFLY_PAIRS), 1);
        // Bluestein's 8232 = 3·7·7·7·8 for n = 4099: every pass has over 1024
        // butterflies, so each thread takes several (1176 radix-7 ones in two rounds).
        assert_eq!(threads_per_signal(8232, &[3, 7, 7, 7, 8], BUTTERFLY_PAIRS), 588);
        // A split first pass counts its units: 141 = 47·3 splits each radix-47
        // butterfly's 23 pairs over 2 threads (6 a signal, 47 radix-3
        // butterflies in 8 rounds); unsplit it runs on 3.
        assert_eq!(threads_per_signal(141, &[47, 3], BUTTERFLY_PAIRS), 6);
        assert_eq!(threads_per_signal(141, &[47, 3], 0), 3);
        assert_eq!(threads_per_signal(47, &[47], BUTTERFLY_PAIRS), 2);
        assert_eq!(threads_per_signal(85, &[17, 5], BUTTERFLY_PAIRS), 10);
        let splits = [47, 17, 23, 67, 16, 15, 7].map(|r| butterfly_split(r, BUTTERFLY_PAIRS));
        assert_eq!(splits, [2, 2, 2, 3, 1, 1, 1]);
        assert_eq!([47, 67].map(|r| butterfly_split(r, 4)), [6, 9]);
        assert_eq!(butterfly_split(47, 0), 1);
        assert!((1..=1 << 14)
            .filter_map(|n| radices(n, 16).map(|r| (n, r)))
            .all(|(n, r)| threads_per_signal(n, &r, BUTTERFLY_PAIRS) <= MAX_SIGNAL_THREADS));
    }

    #[test]
    fn first_passes_take_whole_rounds_where_a_pass_can() {
        // 384 = 6·8·8 on 48 threads: 64 radix-6 butterflies would leave 32 of
        // 48 threads idle in a second round; 48 radix-8 ones take one.
        assert_eq!(first_pass_in_whole_rounds(384, &[6, 8, 8], 48), [8, 6, 8]);
        assert_eq!(first_pass_in_whole_rounds(504, &[6, 6, 14], 36), [14, 6, 6]);
        assert_eq!(first_pass_in_whole_rounds(1512, &[9, 12, 14], 126), [12, 9, 14]);
        // Whole rounds already, a last round at most a third idle (192 = 3·8·8:
        // 64 butterflies over 24 threads), or no pass whole: as planned.
        assert_eq!(first_pass_in_whole_rounds(768, &[12, 8, 8], 64), [12, 8, 8]);
        assert_eq!(first_pass_in_whole_rounds(192, &[3, 8, 8], 24), [3, 8, 8]);
        assert_eq!(first_pass_in_whole_rounds(1215, &[9, 9, 15], 81), [9, 9, 15]);
        assert_eq!(first_pass_in_whole_rounds(384, &[6, 8, 8], 40), [6, 8, 8]);
        assert_eq!(first_pass_in_whole_rounds(1, &[], 1), Vec::<usize>::new());
        // Prime radices above 7 stay first (their butterflies split there).
        assert_eq!(first_pass_in_whole_rounds(141, &[47, 3], 6), [47, 3]);
        for n in (2..=4096usize).filter(|&n| is_smooth(n)) {
            let planned = radices(n, default_max_radix(n)).unwrap();
            let threads = threads_per_signal(n, &planned, 0);
            let ordered = first_pass_in_whole_rounds(n, &planned, threads);
            let (mut a, mut b) = (planned.clone(), ordered.clone());
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "{n}: the same passes");
            assert_eq!(threads_per_signal(n, &ordered, 0), threads, "{n}: the same threads");
            if ordered != planned {
                let last_round = |r: usize| (n / r) % threads;
                assert_eq!(last_round(ordered[0]), 0, "{n}: {ordered:?}");
                assert!(2 * last_round(planned[0]) <= threads, "{n}: {planned:?}");
            }
        }
    }

    #[test]
    fn staged_stages_run_a_larger_first_pass_last() {
        assert_eq!(largest_first_pass_last(6144, &[24, 16, 16]), [16, 16, 24]);
        assert_eq!(largest_first_pass_last(504, &[12, 6, 7]), [7, 6, 12]);
        assert_eq!(largest_first_pass_last(6912, &[24, 24, 12]), [12, 24, 24]);
        // A first pass no larger than the last stays: powers of two (their
        // leftover bits first), 384 = 6·8·8, 1000 = 10·10·10.
        assert_eq!(largest_first_pass_last(256, &[4, 8, 8]), [4, 8, 8]);
        assert_eq!(largest_first_pass_last(384, &[6, 8, 8]), [6, 8, 8]);
        assert_eq!(largest_first_pass_last(1000, &[10, 10, 10]), [10, 10, 10]);
        assert_eq!(largest_first_pass_last(12, &[12]), [12]);
        assert_eq!(largest_first_pass_last(1, &[]), Vec::<usize>::new());
        // Prime radices above 7 keep their place.
        assert_eq!(largest_first_pass_last(141, &[47, 3]), [47, 3]);
    }
}

//! Factoring a transform length into the radices of its Stockham passes, and
//! choosing the lengths of the algorithms built on top (four-step, Bluestein,
//! Rader).

/// Largest radix made of an odd radix and a power of two.
pub const MAX_COMPOSITE: usize = 16;

/// Pass lengths from which the passes use radix 16 by default.
const RADIX_16_FROM: usize = 1024;

/// The largest power-of-two radix the Stockham passes over `len` use by
/// default. A radix-16 butterfly runs in registers as two radix-4 layers, so a
/// pass covers four bits of the length between two shared-memory round trips,
/// at the cost of more registers and fewer threads per signal: that pays from
/// 1024 points, and shorter passes keep radix 8
/// (benches/results/2026-11-23_c2r_fold_dense_weight_h100.md).
pub fn default_max_radix(len: usize) -> usize {
    if len >= RADIX_16_FROM {
        16
    } else {
        8
    }
}

/// Largest prime above 7 that runs as one butterfly of its own (`x_j` paired
/// with `x_{p-j}`, every product by a constant, in registers): 141 = 47·3 and
/// 85 = 17·5 run as two mixed-radix passes. Lengths with a larger prime factor
/// run through Rader's or Bluestein's algorithm. Above 67 the butterfly spills
/// registers and takes NVRTC tens of seconds to compile
/// (benches/results/2026-11-25_prime_radices_h100.md).
pub const MAX_PRIME_RADIX: usize = 67;

/// Radices whose product is `n`; `None` when `n` has a prime factor above
/// [`MAX_PRIME_RADIX`] (such lengths run through Rader's or Bluestein's
/// algorithm).
///
/// Primes above 7 come first, largest first, each a pass of its own (the
/// first pass has no twiddles to multiply). The 7-smooth rest follows, its
/// tuned plan putting the odd primes first, then powers of two of at most
/// `max_radix` (itself a power of two ≥ 2): the fewest such passes, all of
/// `max_radix` but the first, which takes the remaining bits (a 128-point pass
/// runs as 2·8·8 rather than 4·4·8). Those remaining bits
/// join the first odd radix where the product stays within 16 (`MAX_COMPOSITE`:
/// 6, 10, 12, 14). Where pairing odd primes (9, 15) or spreading the bits
/// over several odd radices takes fewer passes, that plan runs instead:
/// 1000 = 10·10·10 rather than 5·5·5·8, Rader's 210 = 15·14 rather than 6·5·7.
pub fn radices(n: usize, max_radix: usize) -> Option<Vec<usize>> {
    radices_within(n, max_radix, MAX_COMPOSITE)
}

/// [`radices`] with composites (an odd radix times a power of two) up to
/// `max_composite` instead of [`MAX_COMPOSITE`].
pub fn radices_within(n: usize, max_radix: usize, max_composite: usize) -> Option<Vec<usize>> {
    assert!(
        max_radix >= 2 && max_radix.is_power_of_two(),
        "a radix cap of {max_radix} is not a power of two ≥ 2"
    );
    let (large_primes, smooth) = split_large_primes(n)?;
    let factors = SmoothFactors::of(smooth)?;
    let cap_bits = max_radix.trailing_zeros() as usize;
    let tuned = tuned_radices(&factors, cap_bits, max_composite);
    let fewest = fewest_pass_radices(smooth, &factors, cap_bits, max_composite);
    let smooth_plan = if fewest.len() < tuned.len() { fewest } else { tuned };
    Some(large_primes.into_iter().chain(smooth_plan).collect())
}

/// Every plan of exactly `passes` passes over a 7-smooth `n`, each multiset
/// of radices once, in non-increasing order: radices that are powers of two
/// up to `max_radix`, the others 7-smooth up to `max_composite` (27 = 3·9
/// and 25 included, which [`radices_within`] never forms). None where `n` is
/// not 7-smooth.
pub fn smooth_plans(n: usize, passes: usize, max_radix: usize, max_composite: usize) -> Vec<Vec<usize>> {
    let allowed = |r: usize| {
        if r.is_power_of_two() {
            r <= max_radix
        } else {
            r <= max_composite && is_smooth(r)
        }
    };
    let mut plans = Vec::new();
    let mut plan = Vec::with_capacity(passes);
    collect_plans(n, passes, max_radix.max(max_composite), &allowed, &mut plan, &mut plans);
    plans
}

/// Extends `plan` by `passes` radices of at most `largest` whose product is
/// `rest`, pushing each completed plan.
fn collect_plans(
    rest: usize,
    passes: usize,
    largest: usize,
    allowed: &impl Fn(usize) -> bool,
    plan: &mut Vec<usize>,
    plans: &mut Vec<Vec<usize>>,
) {
    if passes == 0 {
        if rest == 1 {
            plans.push(plan.clone());
        }
        return;
    }
    for r in (2..=largest.min(rest)).rev() {
        if rest.is_multiple_of(r) && allowed(r) {
            plan.push(r);
            collect_plans(rest / r, passes - 1, r, allowed, plan, plans);
            plan.pop();
        }
    }
}

/// The prime factors of `n` above 7 (with multiplicity, largest first) and the
/// 7-smooth rest; `None` when one of them is above [`MAX_PRIME_RADIX`].
fn split_large_primes(n: usize) -> Option<(Vec<usize>, usize)> {
    let mut large = Vec::new();
    let mut smooth = n;
    for p in prime_factors(n).into_iter().rev().take_while(|&p| p > 7) {
        if p > MAX_PRIME_RADIX {
            return None;
        }
        while smooth.is_multiple_of(p) {
            large.push(p);
            smooth /= p;
        }
    }
    Some((large, smooth))
}

/// `n = 3^threes · 5^fives · 7^sevens · 2^bits`.
struct SmoothFactors {
    threes: usize,
    fives: usize,
    sevens: usize,
    bits: usize,
}

impl SmoothFactors {
    fn of(n: usize) -> Option<Self> {
        if n == 0 {
            return None;
        }
        let mut rest = n;
        let mut count = |p: usize| {
            let mut k = 0;
            while rest.is_multiple_of(p) {
                rest /= p;
                k += 1;
            }
            k
        };
        let (threes, fives, sevens) = (count(3), count(5), count(7));
        rest.is_power_of_two().then(|| SmoothFactors {
            threes,
            fives,
            sevens,
            bits: rest.trailing_zeros() as usize,
        })
    }
}

/// Power-of-two passes holding `bits` bits, at most `cap_bits` each: all
/// full but the first, which takes what is left over.
fn power_of_two_passes(bits: usize, cap_bits: usize) -> impl Iterator<Item = usize> {
    let leftover = (!bits.is_multiple_of(cap_bits)).then(|| 1 << (bits % cap_bits));
    leftover
        .into_iter()
        .chain(std::iter::repeat_n(1 << cap_bits, bits / cap_bits))
}

/// The odd primes, then the power-of-two passes, whose leftover bits join the
/// first odd radix when the product stays within `max_composite`.
fn tuned_radices(f: &SmoothFactors, cap_bits: usize, max_composite: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [(3, f.threes), (5, f.fives), (7, f.sevens)]
        .into_iter()
        .flat_map(|(p, k)| std::iter::repeat_n(p, k))
        .collect();
    let full_bits = f.bits - f.bits % cap_bits;
    let leftover = 1 << (f.bits % cap_bits);
    let mut pow2_bits = f.bits;
    if let Some(odd) = out
        .first_mut()
        .filter(|odd| leftover > 1 && **odd * leftover <= max_composite)
    {
        *odd *= leftover;
        pow2_bits = full_bits;
    }
    out.extend(power_of_two_passes(pow2_bits, cap_bits));
    out
}

/// Bits of a power of two that odd radix `r` can take within `max_composite`.
fn composite_room(r: usize, max_composite: usize) -> usize {
    (max_composite / r).ilog2() as usize
}

/// The plan with the fewest passes: odd primes paired into 9s and 15s where
/// that helps, the bits spread over the odd radices with room (within 16: 3 up
/// to 12, 5 to 10, 7 to 14) once the power-of-two passes are full. Among
/// equally short plans, the one with the fewest pairings (smaller butterflies,
/// fewer registers); among the ways to spread the bits, the one whose passes
/// take the fewest thread-rounds ([`thread_rounds`]), one bit at a time round
/// the odd radices where that ties, else the one with the largest first
/// radix. So C2C 3024 runs as 12·6·6·7 on 252 threads rather than 6·6·6·14 on
/// 504, whose radix-14 pass leaves 288 threads idle
/// (benches/results/2026-11-26_first_pass_rounds_h100.md).
fn fewest_pass_radices(len: usize, f: &SmoothFactors, cap_bits: usize, max_composite: usize) -> Vec<usize> {
    let room = |r: usize| composite_room(r, max_composite);
    let odd_radices = |nines: usize, fifteens: usize| -> Vec<usize> {
        let threes = f.threes - 2 * nines - fifteens;
        [
            (9, nines),
            (15, fifteens),
            (3, threes),
            (5, f.fives - fifteens),
            (7, f.sevens),
        ]
        .into_iter()
        .flat_map(|(r, k)| std::iter::repeat_n(r, k))
        .collect()
    };
    let pow2_passes = |odd: &[usize]| {
        let odd_room: usize = odd.iter().map(|&r| room(r)).sum();
        f.bits.saturating_sub(odd_room).div_ceil(cap_bits)
    };
    let pairings = (0..=f.threes / 2)
        .flat_map(|nines| (0..=(f.threes - 2 * nines).min(f.fives)).map(move |fifteens| (nines, fifteens)));
    let (nines, fifteens) = pairings
        .min_by_key(|&(nines, fifteens)| {
            let odd = odd_radices(nines, fifteens);
            (odd.len() + pow2_passes(&odd), nines + fifteens)
        })
        .expect("the plan without pairings exists");
    let odd = odd_radices(nines, fifteens);
    let pow2_bits = f.bits.min(pow2_passes(&odd) * cap_bits);
    let spare = f.bits - pow2_bits;
    let with_pow2 = |odd: Vec<usize>| -> Vec<usize> {
        odd.into_iter()
            .chain(power_of_two_passes(pow2_bits, cap_bits))
            .collect()
    };
    let round_robin = with_pow2(spread_round_robin(&odd, spare, room));
    bit_spreads(&odd, spare, room)
        .into_iter()
        .map(with_pow2)
        .min_by_key(|plan| {
            (
                thread_rounds(len, plan),
                *plan != round_robin,
                std::cmp::Reverse(plan.first().copied()),
            )
        })
        .unwrap_or(round_robin)
}

/// `odd` with `spare` bits given one at a time round the radices with
/// `room` for a bit.
fn spread_round_robin(odd: &[usize], mut spare: usize, room: impl Fn(usize) -> usize) -> Vec<usize> {
    let mut out = odd.to_vec();
    while spare > 0 {
        for r in out.iter_mut().filter(|r| room(**r) > 0) {
            if spare > 0 {
                *r *= 2;
                spare -= 1;
            }
        }
    }
    out
}

/// Every way to give `spare` bits to the radices of `odd`, each within its
/// `room` (bits it can take).
fn bit_spreads(odd: &[usize], spare: usize, room: impl Fn(usize) -> usize + Copy) -> Vec<Vec<usize>> {
    let Some((&first, rest)) = odd.split_first() else {
        return if spare == 0 { vec![Vec::new()] } else { Vec::new() };
    };
    (0..=room(first).min(spare))
        .flat_map(|bits| {
            bit_spreads(rest, spare - bits, room).into_iter().map(move |mut tail| {
                tail.insert(0, first << bits);
                tail
            })
        })
        .collect()
}

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
/// butterfly (radix 47 took 128 registers a thread unsplit). Smaller odd
/// radices such as 15 lose by splitting
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

/// The two radices `a ≤ b ≤ max_radix` with `a·b = len`, both 7-smooth, of
/// the most even split: on `b` threads, one butterfly each, the radix-`a`
/// pass keeps all of them busy and the radix-`b` pass all but `b − a`.
/// `None` where no such split exists.
pub fn balanced_two_passes(len: usize, max_radix: usize) -> Option<[usize; 2]> {
    (2..)
        .take_while(|a| a * a <= len)
        .filter(|&a| len.is_multiple_of(a) && len / a <= max_radix && is_smooth(a) && is_smooth(len / a))
        .last()
        .map(|a| [a, len / a])
}

/// True when `n` has no prime factor above 7.
pub fn is_smooth(n: usize) -> bool {
    SmoothFactors::of(n).is_some()
}

/// True when `n` runs as mixed-radix passes: no prime factor above
/// [`MAX_PRIME_RADIX`].
pub fn has_radix_plan(n: usize) -> bool {
    radices(n, 2).is_some()
}

/// The convolution length of Bluestein's algorithm for a length-`n` transform:
/// the smallest 7-smooth length that holds the linear convolution of `n` chirp
/// samples with `2n - 1` kernel samples without wrap-around.
pub fn bluestein_length(n: usize) -> usize {
    (2 * n - 1..)
        .find(|&m| is_smooth(m))
        .expect("7-smooth numbers are unbounded")
}

/// The distinct prime factors of `n`.
fn prime_factors(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut p = 2;
    while p * p <= n {
        if n.is_multiple_of(p) {
            out.push(p);
            while n.is_multiple_of(p) {
                n /= p;
            }
        }
        p += 1;
    }
    if n > 1 {
        out.push(n);
    }
    out
}

/// True for a prime `n` whose `n − 1` is 7-smooth (11, 13, 29, …, 211, 421, …):
/// Rader's algorithm turns its transform into a cyclic convolution of length
/// `n − 1`, which runs on the mixed-radix passes, against Bluestein's of
/// length at least `2n − 1`.
pub fn is_rader_prime(n: usize) -> bool {
    n > 7 && prime_factors(n) == [n] && is_smooth(n - 1)
}

/// Greatest common divisor.
pub(crate) fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// How an in-register DFT of composite length `first · second` runs: `second`
/// DFTs of length `first`, then `first` of length `second`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DftSplit {
    pub first: usize,
    pub second: usize,
    /// Good–Thomas (coprime factors, no twiddles between the layers) rather
    /// than Cooley–Tukey (`(first − 1)(second − 1)` twiddles).
    pub good_thomas: bool,
}

impl DftSplit {
    /// The sample that layer one's DFT `n2` takes as its input `n1`.
    pub fn sample(&self, n1: usize, n2: usize) -> usize {
        let (a, b) = (self.first, self.second);
        if self.good_thomas {
            (b * n1 + a * n2) % (a * b)
        } else {
            n2 + b * n1
        }
    }

    /// The bin of layer two's output `k2` of its DFT `k1`: for Good–Thomas
    /// the `k` with `k ≡ k1 (mod first)` and `k ≡ k2 (mod second)`.
    pub fn bin(&self, k1: usize, k2: usize) -> usize {
        let (a, b) = (self.first, self.second);
        if self.good_thomas {
            (k1 * b * inverse_mod(b % a, a) + k2 * a * inverse_mod(a % b, b)) % (a * b)
        } else {
            k1 + a * k2
        }
    }
}

/// How an in-register DFT of length `r` splits, or `None` for a prime `r`,
/// which runs directly. A direct odd DFT costs about `r²` multiply-adds against
/// `r·(a + b)` split, so odd composites split: coprime factors by Good–Thomas
/// (radix 21 as 3·7: 296 real operations instead of 500), powers of a prime as
/// p·(r/p) by Cooley–Tukey. Even lengths split by Cooley–Tukey, odd part first
/// (6 = 3·2, 20 = 5·4, powers of two 4·(r/4), 4 as 2·2): Good–Thomas there
/// executed fewer instructions but stalled longer on global loads and ran
/// slower (benches/results/2026-11-26_good_thomas_h100.md).
pub(crate) fn dft_split(r: usize) -> Option<DftSplit> {
    let p = (2..=r).find(|p| r.is_multiple_of(*p))?;
    if p == r {
        return None;
    }
    let mut power = p;
    while r.is_multiple_of(power * p) {
        power *= p;
    }
    let (first, good_thomas) = if p == 2 {
        (if power < r { r / power } else { 4.min(r / 2) }, false)
    } else if power < r {
        (power, true)
    } else {
        (p, false)
    };
    Some(DftSplit {
        first,
        second: r / first,
        good_thomas,
    })
}

/// `x⁻¹ mod m` for `x` coprime to `m` (small moduli: a search).
fn inverse_mod(x: usize, m: usize) -> usize {
    (1..=m).find(|y| x * y % m == 1 % m).expect("x is coprime to m")
}

/// The smallest primitive root modulo the prime `p`: its powers run through
/// every non-zero residue.
pub fn primitive_root(p: usize) -> usize {
    let order = p - 1;
    let factors = prime_factors(order);
    let pow_mod = |mut base: u128, mut e: usize| {
        let mut acc = 1u128;
        base %= p as u128;
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base % p as u128;
            }
            base = base * base % p as u128;
            e >>= 1;
        }
        acc
    };
    (2..p)
        .find(|&g| factors.iter().all(|&q| pow_mod(g as u128, order / q) != 1))
        .unwrap_or(1)
}

/// Splits `n` into `(n1, n2)` with `n1 · n2 = n` for a four-step FFT: the most
/// balanced split whose columns (`n1`) and rows (`n2`) each satisfy their
/// predicate, rows no shorter than columns. `None` when no divisor works.
pub fn four_step_split(
    n: usize,
    column_fits: impl Fn(usize) -> bool,
    row_fits: impl Fn(usize) -> bool,
) -> Option<(usize, usize)> {
    (1..=n)
        .filter(|&n2| n.is_multiple_of(n2) && n2 * n2 >= n)
        .find(|&n2| row_fits(n2) && column_fits(n / n2))
        .map(|n2| (n / n2, n2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each multiset of allowed radices once: 6144 = 2^11·3 in three passes
    /// has one radix with the 3 (6, 12 or 24) and powers of two up to the cap.
    #[test]
    fn smooth_plans_list_each_multiset_of_allowed_radices() {
        assert_eq!(
            smooth_plans(6144, 3, 32, 32),
            [vec![32, 32, 6], vec![32, 24, 8], vec![32, 16, 12], vec![24, 16, 16]]
        );
        assert_eq!(smooth_plans(6144, 3, 16, 32), [vec![24, 16, 16]]);
        assert_eq!(smooth_plans(6912, 3, 32, 32)[0], [32, 27, 8]);
        assert!(smooth_plans(6144, 2, 32, 32).is_empty());
        assert!(smooth_plans(11 * 512, 3, 32, 32).is_empty());
    }

    #[test]
    fn balanced_two_passes_take_the_most_even_smooth_split() {
        assert_eq!(balanced_two_passes(420, 24), Some([20, 21]));
        assert_eq!(balanced_two_passes(210, 24), Some([14, 15]));
        assert_eq!(balanced_two_passes(576, 24), Some([24, 24]));
        assert_eq!(balanced_two_passes(280, 24), Some([14, 20]));
        // 540 = 20·27 and 22 = 2·11: no split within the cap, or none smooth.
        assert_eq!(balanced_two_passes(540, 24), None);
        assert_eq!(balanced_two_passes(540, 32), Some([20, 27]));
        assert_eq!(balanced_two_passes(22, 24), None);
        // Against every split a·b = len, 2 ≤ a ≤ b ≤ 24, both 7-smooth: the largest a.
        for len in 2usize..=1024 {
            let most_even = (2..=24)
                .filter(|&b| len.is_multiple_of(b))
                .map(|b| [len / b, b])
                .filter(|&[a, b]| 2 <= a && a <= b && is_smooth(a) && is_smooth(b))
                .max_by_key(|&[a, _]| a);
            assert_eq!(balanced_two_passes(len, 24), most_even, "{len}");
        }
    }

    #[test]
    fn register_dfts_split_coprime_first_and_primes_not_at_all() {
        let split = |first, second, good_thomas| {
            Some(DftSplit {
                first,
                second,
                good_thomas,
            })
        };
        for (r, expected) in [
            (15, split(3, 5, true)),
            (21, split(3, 7, true)),
            (45, split(9, 5, true)),
            (9, split(3, 3, false)),
            (25, split(5, 5, false)),
            (27, split(3, 9, false)),
            (12, split(3, 4, false)),
            (14, split(7, 2, false)),
            (20, split(5, 4, false)),
            (30, split(15, 2, false)),
            (4, split(2, 2, false)),
            (8, split(4, 2, false)),
            (16, split(4, 4, false)),
            (32, split(4, 8, false)),
            (7, None),
            (47, None),
        ] {
            assert_eq!(dft_split(r), expected, "radix {r}");
        }
        for r in 2..=64 {
            match dft_split(r) {
                Some(s) => {
                    assert_eq!(s.first * s.second, r);
                    assert!(s.first > 1 && s.second > 1, "radix {r}: {s:?}");
                    assert!(!s.good_thomas || gcd(s.first, s.second) == 1, "radix {r}: {s:?}");
                }
                None => assert_eq!(prime_factors(r), [r]),
            }
        }
        // The two layers through the index maps (and Cooley–Tukey's
        // twiddles) against a naive DFT, as `stage::composite_dft` runs them.
        use num_complex::Complex;
        let dft = |x: &[Complex<f64>]| -> Vec<Complex<f64>> {
            let n = x.len();
            (0..n)
                .map(|k| {
                    x.iter()
                        .enumerate()
                        .map(|(j, v)| v * Complex::from_polar(1.0, -2.0 * PI * ((j * k) % n) as f64 / n as f64))
                        .sum()
                })
                .collect()
        };
        use std::f64::consts::PI;
        for r in 4..=64 {
            let Some(s) = dft_split(r) else { continue };
            let (a, b) = (s.first, s.second);
            let x: Vec<Complex<f64>> = (0..r)
                .map(|j| Complex::new((j * j % 7) as f64, j as f64 - 3.5))
                .collect();
            let mut t = vec![Complex::new(0.0, 0.0); r];
            for n2 in 0..b {
                let column: Vec<_> = (0..a).map(|n1| x[s.sample(n1, n2)]).collect();
                for (k1, v) in dft(&column).into_iter().enumerate() {
                    let twiddle = if s.good_thomas {
                        0.0
                    } else {
                        -2.0 * PI * (n2 * k1) as f64 / r as f64
                    };
                    t[n2 * a + k1] = v * Complex::from_polar(1.0, twiddle);
                }
            }
            let mut y = vec![Complex::new(0.0, 0.0); r];
            for k1 in 0..a {
                let row: Vec<_> = (0..b).map(|n2| t[n2 * a + k1]).collect();
                for (k2, v) in dft(&row).into_iter().enumerate() {
                    y[s.bin(k1, k2)] = v;
                }
            }
            let expected = dft(&x);
            let err = y.iter().zip(&expected).map(|(u, v)| (u - v).norm()).fold(0.0, f64::max);
            assert!(err < 1e-9, "radix {r} as {s:?}: error {err:.2e}");
        }
        for m in 2..40 {
            for x in (1..m).filter(|&x| gcd(x, m) == 1) {
                assert_eq!(x * inverse_mod(x, m) % m, 1);
            }
        }
    }

    #[test]
    fn rader_primes_and_their_primitive_roots() {
        let rader: Vec<usize> = (2..200).filter(|&n| is_rader_prime(n)).collect();
        // Primes above 7 whose predecessor has no prime factor above 7.
        assert_eq!(
            rader,
            [11, 13, 17, 19, 29, 31, 37, 41, 43, 61, 71, 73, 97, 101, 109, 113, 127, 151, 163, 181, 193, 197]
        );
        assert!(is_rader_prime(211) && is_rader_prime(421) && is_rader_prime(4201));
        assert!(!is_rader_prime(4099) && !is_rader_prime(47) && !is_rader_prime(141));
        for p in rader.into_iter().chain([211, 421, 4201]) {
            let g = primitive_root(p);
            let mut seen = vec![false; p];
            let mut x = 1;
            for _ in 0..p - 1 {
                assert!(!seen[x], "{g} is not a primitive root of {p}");
                seen[x] = true;
                x = x * g % p;
            }
        }
        assert_eq!(primitive_root(211), 2);
        assert_eq!(primitive_root(421), 2);
    }

    /// The fewest passes any plan of allowed radices needs for `n`: powers of
    /// two up to the cap, products of 3, 5, 7, 9 or 15 with a power of two
    /// within [`MAX_COMPOSITE`], and primes from 11 to [`MAX_PRIME_RADIX`].
    fn fewest_passes(n: usize, max_radix: usize) -> usize {
        let allowed = |r: usize| {
            let odd = r >> r.trailing_zeros();
            if odd == 1 {
                r <= max_radix
            } else if matches!(odd, 3 | 5 | 7 | 9 | 15) {
                r <= MAX_COMPOSITE
            } else {
                odd == r && prime_factors(r) == [r] && r <= MAX_PRIME_RADIX
            }
        };
        let mut best = vec![usize::MAX; n + 1];
        best[1] = 0;
        for m in 2..=n {
            if n.is_multiple_of(m) {
                best[m] = (2..=m)
                    .filter(|&r| m.is_multiple_of(r) && allowed(r) && best[m / r] != usize::MAX)
                    .map(|r| best[m / r] + 1)
                    .min()
                    .unwrap_or(usize::MAX);
            }
        }
        best[n]
    }

    #[test]
    fn radices_multiply_to_n_in_the_fewest_passes() {
        for max_radix in [2usize, 4, 8, 16, 32] {
            for n in 1..3000usize {
                match radices(n, max_radix) {
                    Some(r) => {
                        assert_eq!(r.iter().product::<usize>(), n);
                        assert_eq!(r.len(), fewest_passes(n, max_radix), "{n} (cap {max_radix}): {r:?}");
                        if n.is_power_of_two() {
                            // All passes of the cap but the first, which takes the leftover bits.
                            assert!(r.iter().skip(1).all(|&x| x == max_radix), "{n}: {r:?}");
                        }
                    }
                    None => {
                        let largest = *prime_factors(n).last().unwrap();
                        assert!(largest > MAX_PRIME_RADIX, "{n} has a radix plan");
                    }
                }
            }
        }
        assert_eq!(radices(1, 16), Some(vec![]));
        assert_eq!(radices(32, 8), Some(vec![4, 8]));
        assert_eq!(radices(128, 16), Some(vec![8, 16]));
        assert_eq!(radices(256, 16), Some(vec![16, 16]));
        assert_eq!(radices(128, 8), Some(vec![2, 8, 8]));
        assert_eq!(radices(512, 16), Some(vec![2, 16, 16]));
        assert_eq!(radices(1024, 16), Some(vec![4, 16, 16]));
        assert_eq!(radices(1000, 8), Some(vec![10, 10, 10]));
        assert_eq!(radices(500, 8), Some(vec![10, 10, 5]));
        assert_eq!(radices(210, 8), Some(vec![15, 14]));
        assert_eq!(radices(420, 8), Some(vec![12, 5, 7]));
        assert_eq!(radices(864, 8), Some(vec![12, 12, 6]));
        assert_eq!(radices(8232, 16), Some(vec![6, 14, 14, 7]));
        // The spread of the bits with the fewest thread-rounds: 3024 = 12·6·6·7
        // on 252 threads (1764) rather than 6·6·6·14 on 504 (2016).
        assert_eq!(radices(3024, 16), Some(vec![12, 6, 6, 7]));
        assert_eq!(thread_rounds(3024, &[12, 6, 6, 7]), 1764);
        assert_eq!(thread_rounds(3024, &[6, 6, 6, 14]), 2016);
        assert_eq!(radices(504, 8), Some(vec![12, 6, 7]));
        assert_eq!(radices(19683, 16), Some(vec![9, 9, 9, 9, 3]));
        assert_eq!(radices(12, 16), Some(vec![12]));
        assert_eq!(radices(384, 8), Some(vec![6, 8, 8]));
        assert_eq!(radices(768, 8), Some(vec![12, 8, 8]));
        assert_eq!(radices(192, 8), Some(vec![3, 8, 8]));
        assert_eq!(radices(3 << 11, 16), Some(vec![3, 8, 16, 16]));
        assert_eq!(radices(7 * 4, 8), Some(vec![7, 4]));
        assert_eq!(radices(5 * 2, 8), Some(vec![10]));
        // Primes above 7 first, largest first, each a pass of its own.
        assert_eq!(radices(85, 16), Some(vec![17, 5]));
        assert_eq!(radices(141, 16), Some(vec![47, 3]));
        assert_eq!(radices(11 * 11 * 13 * 64, 8), Some(vec![13, 11, 11, 8, 8]));
        assert_eq!(radices(421, 16), None);
        assert_eq!(radices(101 * 2, 16), None);
        assert!(has_radix_plan(1) && has_radix_plan(67 << 6) && !has_radix_plan(71) && !has_radix_plan(0));
    }

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
    fn bit_spreads_give_every_odd_radix_what_it_has_room_for() {
        // 3·3·3·7 with 4 spare bits: each 3 takes up to 2 bits (12), 7 one (14).
        let room = |r| composite_room(r, MAX_COMPOSITE);
        let spreads = bit_spreads(&[3, 3, 3, 7], 4, room);
        assert!(spreads.iter().all(|s| s.iter().product::<usize>() == 27 * 7 * 16));
        assert!(spreads.iter().all(|s| s.iter().all(|&r| r <= MAX_COMPOSITE)));
        assert_eq!(spreads.len(), 13);
        assert!(spreads.contains(&vec![12, 6, 6, 7]) && spreads.contains(&vec![6, 6, 6, 14]));
        assert_eq!(bit_spreads(&[5], 2, room), Vec::<Vec<usize>>::new());
        assert_eq!(bit_spreads(&[], 0, room), vec![Vec::<usize>::new()]);
        // Every fewest-pass plan multiplies to n and keeps each of its bits.
        for n in (2..=16384usize).filter(|&n| is_smooth(n)) {
            let f = SmoothFactors::of(n).unwrap();
            for cap_bits in [3, 4] {
                let plan = fewest_pass_radices(n, &f, cap_bits, MAX_COMPOSITE);
                assert_eq!(plan.iter().product::<usize>(), n);
                let bits = plan.iter().map(|r| r.trailing_zeros() as usize).sum::<usize>();
                assert_eq!(bits, f.bits, "{n}: {plan:?}");
            }
        }
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
    fn wider_composites_save_passes_where_they_can() {
        assert_eq!(radices_within(6144, 16, 32), Some(vec![24, 16, 16]));
        assert_eq!(radices_within(7168, 16, 32), Some(vec![28, 16, 16]));
        assert_eq!(radices_within(6912, 16, 32), Some(vec![24, 24, 12]));
        assert_eq!(radices_within(12288, 32, 32), Some(vec![12, 32, 32]));
        assert_eq!(radices_within(6144, 16, MAX_COMPOSITE), radices(6144, 16));
        for n in (1..=16384usize).filter(|&n| is_smooth(n)) {
            for max_radix in [8, 16, 32] {
                let wide = radices_within(n, max_radix, 32).unwrap();
                let narrow = radices(n, max_radix).unwrap();
                assert_eq!(wide.iter().product::<usize>(), n);
                assert!(wide.len() <= narrow.len(), "{n}: {wide:?} against {narrow:?}");
                assert!(
                    wide.iter()
                        .all(|&r| r <= 32 && (r <= max_radix || !r.is_power_of_two())),
                    "{n}: {wide:?}"
                );
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

    #[test]
    fn bluestein_lengths_are_smooth_and_long_enough() {
        for n in [2usize, 3, 11, 85, 141, 211, 421, 4099, 65537] {
            let m = bluestein_length(n);
            assert!(m >= 2 * n - 1 && is_smooth(m), "{n} -> {m}");
            assert!((2 * n - 1..m).all(|x| !is_smooth(x)));
        }
        assert_eq!(bluestein_length(421), 864);
    }

    #[test]
    fn four_step_split_is_balanced_and_respects_limits() {
        assert_eq!(four_step_split(1 << 14, |_| true, |_| true), Some((128, 128)));
        assert_eq!(four_step_split(1 << 15, |_| true, |_| true), Some((128, 256)));
        assert_eq!(four_step_split(1000, |_| true, |_| true), Some((25, 40)));
        assert_eq!(four_step_split(1 << 14, |c| c <= 64, |_| true), Some((64, 256)));
        assert_eq!(four_step_split(97, |c| c < 97, |r| r < 97), None);
    }
}

//! Radix plans: a length factored into the radices of its Stockham passes,
//! and the 7-smooth lengths those passes cover.

use super::primes::{is_smooth, prime_factors, SmoothFactors};
use super::threads::thread_rounds;

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

/// True when `n` runs as mixed-radix passes: no prime factor above
/// [`MAX_PRIME_RADIX`].
pub fn has_radix_plan(n: usize) -> bool {
    radices(n, 2).is_some()
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
}

//! Factoring a transform length into the radices of its Stockham passes, and
//! choosing the lengths of the algorithms built on top (four-step, Bluestein).

/// The odd radices the butterflies handle, besides the powers of two 2, 4, 8.
const ODD_RADICES: [usize; 3] = [3, 5, 7];

/// Radices whose product is `n`: the odd ones first, then the powers of two with
/// the remainder (2 or 4) before the 8s. `None` when `n` has a prime factor
/// above 7 (such lengths run through Bluestein's algorithm).
pub fn radices(n: usize) -> Option<Vec<usize>> {
    if n == 0 {
        return None;
    }
    let mut rest = n;
    let mut out = Vec::new();
    for p in ODD_RADICES {
        while rest.is_multiple_of(p) {
            out.push(p);
            rest /= p;
        }
    }
    if !rest.is_power_of_two() {
        return None;
    }
    let log2 = rest.trailing_zeros() as usize;
    match log2 % 3 {
        1 => out.push(2),
        2 => out.push(4),
        _ => {}
    }
    out.extend(std::iter::repeat_n(8, log2 / 3));
    Some(out)
}

/// True when `n` has no prime factor above 7.
pub fn is_smooth(n: usize) -> bool {
    radices(n).is_some()
}

/// The convolution length of Bluestein's algorithm for a length-`n` transform:
/// the smallest 7-smooth length that holds the linear convolution of `n` chirp
/// samples with `2n - 1` kernel samples without wrap-around.
pub fn bluestein_length(n: usize) -> usize {
    (2 * n - 1..)
        .find(|&m| is_smooth(m))
        .expect("7-smooth numbers are unbounded")
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

    #[test]
    fn radices_multiply_to_n() {
        for n in 1..5000usize {
            match radices(n) {
                Some(r) => {
                    assert_eq!(r.iter().product::<usize>(), n);
                    assert!(r.iter().all(|&x| matches!(x, 2 | 3 | 4 | 5 | 7 | 8)));
                    // At most one pass of radix 2 or 4.
                    assert!(r.iter().filter(|&&x| x == 2 || x == 4).count() <= 1);
                }
                None => {
                    let mut rest = n;
                    for p in [2, 3, 5, 7] {
                        while rest % p == 0 {
                            rest /= p;
                        }
                    }
                    assert!(rest > 1, "{n} is 7-smooth");
                }
            }
        }
        assert_eq!(radices(1), Some(vec![]));
        assert_eq!(radices(32), Some(vec![4, 8]));
        assert_eq!(radices(1000), Some(vec![5, 5, 5, 8]));
        assert_eq!(radices(12), Some(vec![3, 4]));
        assert_eq!(radices(421), None);
        assert_eq!(radices(85), None);
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

//! Factoring a transform length into the radices of its Stockham passes.

/// Radices whose product is `n`, largest passes last (the first pass needs no
/// twiddles, so the odd-sized remainder goes there). `None` when `n` has a
/// factor no butterfly handles yet.
pub fn radices(n: usize) -> Option<Vec<usize>> {
    if n == 0 || !n.is_power_of_two() {
        return None;
    }
    let log2 = n.trailing_zeros() as usize;
    let mut out = Vec::new();
    match log2 % 3 {
        1 => out.push(2),
        2 => out.push(4),
        _ => {}
    }
    out.extend(std::iter::repeat_n(8, log2 / 3));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::radices;

    #[test]
    fn radices_multiply_to_n() {
        for log2 in 0..24 {
            let n = 1usize << log2;
            let r = radices(n).unwrap();
            assert_eq!(r.iter().product::<usize>(), n);
            assert!(r.iter().all(|&x| matches!(x, 2 | 4 | 8)));
        }
        assert_eq!(radices(1), Some(vec![]));
        assert_eq!(radices(32), Some(vec![4, 8]));
        assert_eq!(radices(12), None);
    }
}

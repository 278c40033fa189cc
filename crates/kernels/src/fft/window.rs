//! Which part of a signal or spectrum an array holds along a transformed axis.
//!
//! Truncation and zero-padding are both described by a [`Window`]: a forward
//! transform writes only the window of its output, an inverse transform reads only
//! the window of its input and treats the rest as zero.

/// A selection of indices `k` of a length-`n` sequence, stored densely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Window {
    /// Indices `[0, len)`; with `len > n` only `[0, n)` exists (numpy's crop / pad at the end).
    Prefix(usize),
    /// neuraloperator's centred window of the `m` lowest |frequencies|, in FFT order:
    /// `[0, m - m/2)` then `[n - m/2, n)`.
    Centered(usize),
    /// The same `m` frequencies in fftshift order, as neuraloperator stores its
    /// weights: position `j` holds frequency `j - m/2`.
    Shifted(usize),
    /// The [`Window::Shifted`] window placed one index lower: position `j` holds
    /// frequency `j - m/2 - 1`. neuraloperator 2.0.0 undoes its forward fftshift
    /// with a second fftshift, which puts its modes there on odd-length axes.
    ShiftedLower(usize),
}

impl Window {
    /// Number of entries the dense array holds, for a sequence of length `n`.
    pub fn stored_len(&self, n: usize) -> usize {
        match *self {
            Window::Prefix(len) => len.min(n),
            Window::Centered(m) | Window::Shifted(m) | Window::ShiftedLower(m) => m,
        }
    }

    /// The dense position of sequence index `k`, if the window holds it.
    pub fn position(&self, k: usize, n: usize) -> Option<usize> {
        match *self {
            Window::Prefix(len) => (k < len.min(n)).then_some(k),
            Window::Centered(m) => {
                let low = m - m / 2;
                if k < low {
                    Some(k)
                } else if k >= n - m / 2 {
                    Some(k + m - n)
                } else {
                    None
                }
            }
            Window::Shifted(m) => {
                if k < m - m / 2 {
                    Some(k + m / 2)
                } else if k >= n - m / 2 {
                    Some(k + m / 2 - n)
                } else {
                    None
                }
            }
            Window::ShiftedLower(m) => {
                let j = (k + m / 2 + 1) % n;
                (j < m).then_some(j)
            }
        }
    }

    /// The sequence index held at dense position `j`.
    pub fn index(&self, j: usize, n: usize) -> usize {
        match *self {
            Window::Prefix(_) => j,
            Window::Centered(m) => {
                if j < m - m / 2 {
                    j
                } else {
                    j + n - m
                }
            }
            Window::Shifted(m) => {
                if j < m / 2 {
                    j + n - m / 2
                } else {
                    j - m / 2
                }
            }
            Window::ShiftedLower(m) => (j + n - m / 2 - 1) % n,
        }
    }

    /// True when the window holds every index of a length-`n` sequence in order.
    pub fn is_full(&self, n: usize) -> bool {
        match *self {
            Window::Prefix(len) => len == n,
            Window::Centered(m) => m == n,
            Window::Shifted(_) | Window::ShiftedLower(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centered_window_matches_neuraloperator_layout() {
        // n = 10, m = 5: low part [0, 3), high part [8, 10).
        let w = Window::Centered(5);
        let idx: Vec<usize> = (0..5).map(|j| w.index(j, 10)).collect();
        assert_eq!(idx, vec![0, 1, 2, 8, 9]);
        for (j, &k) in idx.iter().enumerate() {
            assert_eq!(w.position(k, 10), Some(j));
        }
        assert_eq!(w.position(5, 10), None);
        let w = Window::Centered(4);
        let idx: Vec<usize> = (0..4).map(|j| w.index(j, 8)).collect();
        assert_eq!(idx, vec![0, 1, 6, 7]);
    }

    #[test]
    fn shifted_window_is_fftshift_order() {
        // n = 10, m = 5: frequencies -2, -1, 0, 1, 2 at positions 0..5.
        let w = Window::Shifted(5);
        let idx: Vec<usize> = (0..5).map(|j| w.index(j, 10)).collect();
        assert_eq!(idx, vec![8, 9, 0, 1, 2]);
        for (j, &k) in idx.iter().enumerate() {
            assert_eq!(w.position(k, 10), Some(j));
        }
        assert_eq!(w.position(5, 10), None);
        let idx: Vec<usize> = (0..4).map(|j| Window::Shifted(4).index(j, 8)).collect();
        assert_eq!(idx, vec![6, 7, 0, 1]);
    }

    #[test]
    fn shifted_lower_window_sits_one_index_below() {
        // n = 9, m = 5: frequencies -3, -2, -1, 0, 1 at positions 0..5.
        let w = Window::ShiftedLower(5);
        let idx: Vec<usize> = (0..5).map(|j| w.index(j, 9)).collect();
        assert_eq!(idx, vec![6, 7, 8, 0, 1]);
        for (j, &k) in idx.iter().enumerate() {
            assert_eq!(w.position(k, 9), Some(j));
        }
        assert_eq!(w.position(2, 9), None);
        assert_eq!(w.position(5, 9), None);
    }

    #[test]
    fn prefix_window_crops_and_pads() {
        assert_eq!(Window::Prefix(3).position(2, 8), Some(2));
        assert_eq!(Window::Prefix(3).position(3, 8), None);
        assert_eq!(Window::Prefix(12).stored_len(8), 8);
        assert!(Window::Prefix(8).is_full(8));
        assert!(!Window::Centered(6).is_full(8));
    }
}

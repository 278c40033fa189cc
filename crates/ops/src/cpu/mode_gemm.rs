//! The spectral convolution's per-mode contractions on the CPU: one complex
//! GEMM per retained mode through the `gemm` crate's c32 kernels, the modes
//! over rayon's threads, every operand read in place through its strides.

use gemm::{c32, gemm, Parallelism};
use rayon::prelude::*;

/// Where the matrices of every mode lie in a flat complex buffer (element
/// strides): mode `m`'s element `(r, c)` is at `m·mode + r·row + c·col`.
#[derive(Clone, Copy, Debug)]
pub struct Strides {
    pub mode: usize,
    pub row: usize,
    pub col: usize,
}

/// A GEMM operand: its values, strides, and whether it is conjugated.
pub struct Operand<'a> {
    pub values: &'a [c32],
    pub at: Strides,
    pub conj: bool,
}

/// The destination, shared by the threads: each mode writes its own elements.
struct Dst(*mut c32);
// SAFETY: `per_mode` hands each mode's disjoint elements to one thread.
unsafe impl Sync for Dst {}

/// Panics unless every mode's `rows × cols` matrix at `at` lies in `len` values.
fn check_bounds(len: usize, modes: usize, (rows, cols): (usize, usize), at: Strides, what: &str) {
    let last = (modes - 1) * at.mode + (rows - 1) * at.row + (cols - 1) * at.col;
    assert!(last < len, "{what}: element {last} of {len}");
}

/// For every mode `m < modes`: `dst_m = scale(m) · lhs_m · rhs_m`, with
/// `lhs_m` `rows × inner`, `rhs_m` `inner × cols` and `dst_m` `rows × cols`
/// (overwritten). The destination's modes must not overlap (`dst.1.mode` at
/// least 1, rows and columns spaced as a dense layout spaces them).
pub fn per_mode(
    modes: usize,
    (rows, inner, cols): (usize, usize, usize),
    (dst, dst_at): (&mut [c32], Strides),
    lhs: Operand<'_>,
    rhs: Operand<'_>,
    scale: impl Fn(usize) -> f32 + Sync,
) {
    if modes == 0 || rows == 0 || cols == 0 {
        return;
    }
    if inner == 0 {
        dst.iter_mut().for_each(|v| *v = c32::new(0.0, 0.0));
        return;
    }
    check_bounds(dst.len(), modes, (rows, cols), dst_at, "destination");
    check_bounds(lhs.values.len(), modes, (rows, inner), lhs.at, "left operand");
    check_bounds(rhs.values.len(), modes, (inner, cols), rhs.at, "right operand");
    assert!(dst_at.mode > 0, "the destination's modes overlap");
    let out = Dst(dst.as_mut_ptr());
    (0..modes).into_par_iter().for_each(|m| {
        let out = &out;
        // SAFETY: the bounds were checked above; distinct modes write
        // distinct elements of the destination, which nothing else reads.
        unsafe {
            gemm(
                rows,
                cols,
                inner,
                out.0.add(m * dst_at.mode),
                dst_at.col as isize,
                dst_at.row as isize,
                false,
                lhs.values.as_ptr().add(m * lhs.at.mode),
                lhs.at.col as isize,
                lhs.at.row as isize,
                rhs.values.as_ptr().add(m * rhs.at.mode),
                rhs.at.col as isize,
                rhs.at.row as isize,
                c32::new(0.0, 0.0),
                c32::new(scale(m), 0.0),
                false,
                lhs.conj,
                rhs.conj,
                Parallelism::None,
            )
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use fno_testing::{fresh_seed, uniform};

    /// Every mode's product against the direct sum, with strided, conjugated
    /// and shared (mode stride 0) operands and a per-mode scale.
    #[test]
    fn per_mode_products_match_the_direct_sums() {
        let seed = fresh_seed();
        println!("seed {seed}");
        let (modes, rows, inner, cols) = (5, 3, 4, 6);
        let values = |n: usize, s: u64| -> Vec<c32> {
            uniform(2 * n, s)
                .chunks(2)
                .map(|c| c32::new(c[0] as f32, c[1] as f32))
                .collect()
        };
        // lhs as [rows, inner, modes], rhs shared [inner, cols] read transposed from [cols, inner].
        let (a, b) = (values(rows * inner * modes, seed), values(cols * inner, seed + 1));
        let lhs_at = Strides {
            mode: 1,
            row: inner * modes,
            col: modes,
        };
        let rhs_at = Strides {
            mode: 0,
            row: 1,
            col: inner,
        };
        let dst_at = Strides {
            mode: 1,
            row: cols * modes,
            col: modes,
        };
        let mut got = vec![c32::new(f32::NAN, f32::NAN); rows * cols * modes];
        per_mode(
            modes,
            (rows, inner, cols),
            (&mut got, dst_at),
            Operand {
                values: &a,
                at: lhs_at,
                conj: true,
            },
            Operand {
                values: &b,
                at: rhs_at,
                conj: false,
            },
            |m| 1.0 + m as f32,
        );
        for m in 0..modes {
            for r in 0..rows {
                for c in 0..cols {
                    let want: c32 = (0..inner)
                        .map(|i| a[m + r * lhs_at.row + i * lhs_at.col].conj() * b[i * rhs_at.row + c * rhs_at.col])
                        .sum::<c32>()
                        * (1.0 + m as f32);
                    let v = got[m + r * dst_at.row + c * dst_at.col];
                    assert!(
                        (v - want).norm() <= 1e-5 * (1.0 + want.norm()),
                        "mode {m} ({r}, {c}): {v} vs {want}"
                    );
                }
            }
        }
    }
}

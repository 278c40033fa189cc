//! The problem a batched CGEMM solves: its shape, operand strides,
//! conjugations, per-mode scale and bias, and the precision its operands hold.

use crate::precision::Precision;

/// A per-column constant added to one mode of the output:
/// `C[p, q, mode] += factor · bias[q]`. A constant added to every point of a
/// signal is one value at frequency 0 (`factor` undoes the inverse transform's
/// scale), so the spectral convolution's bias costs no pass of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModeBias {
    pub mode: usize,
    pub factor: f32,
}

/// The precision each operand holds in global memory; products and sums run
/// in f32 whatever the operands hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OperandPrecisions {
    pub a: Precision,
    pub b: Precision,
    pub c: Precision,
}

impl OperandPrecisions {
    /// Every operand in `precision`.
    pub fn all(precision: Precision) -> Self {
        OperandPrecisions {
            a: precision,
            b: precision,
            c: precision,
        }
    }
}

/// Strides of an operand in elements (complex or real): (row, column, mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strides {
    pub row: usize,
    pub col: usize,
    pub mode: usize,
}

/// One batched CGEMM: `P × Q` outputs per mode, `R` terms each, `K` modes.
#[derive(Clone, Debug, PartialEq)]
pub struct CgemmProblem {
    pub p: usize,
    pub q: usize,
    pub r: usize,
    pub k: usize,
    /// A indexed by (p, r, mode), B by (r, q, mode), C by (p, q, mode).
    pub a: Strides,
    pub b: Strides,
    pub c: Strides,
    /// `false`: real operands and output, one float per element (no conjugation).
    pub complex: bool,
    pub conj_a: bool,
    pub conj_b: bool,
    /// Output of mode `k` multiplied by `mode_scale[k % mode_scale.len()]`; empty
    /// (or all ones): no scaling, and nothing uploaded.
    pub mode_scale: Vec<f32>,
    /// Added after the scale; launched by [`CgemmProblem::launch_biased`].
    pub bias: Option<ModeBias>,
    /// What the buffers of A, B and C hold (the scale and bias are f32).
    pub precisions: OperandPrecisions,
}

/// Elements an operand at strides `s` spans (at least one).
pub fn span(s: Strides, rows: usize, cols: usize, modes: usize) -> usize {
    (rows.saturating_sub(1)) * s.row + (cols.saturating_sub(1)) * s.col + (modes.saturating_sub(1)) * s.mode + 1
}

impl CgemmProblem {
    /// Complex elements each operand must hold.
    pub fn extents(&self) -> (usize, usize, usize) {
        (
            span(self.a, self.p, self.r, self.k),
            span(self.b, self.r, self.q, self.k),
            span(self.c, self.p, self.q, self.k),
        )
    }

    pub(super) fn is_scaled(&self) -> bool {
        self.mode_scale.iter().any(|&s| s != 1.0)
    }
}

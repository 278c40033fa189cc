//! Real matrix products `C[b] = A[b]·B[b]` over a stack of matrices, in f32.

use super::{CgemmProblem, OperandPrecisions, Strides};

/// Strides of a stack of matrices in floats; a `batch` stride of 0 repeats
/// one matrix for every product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixStrides {
    pub batch: usize,
    pub row: usize,
    pub col: usize,
}

/// `[batch, m, k]·[batch, k, n]` into a dense `[batch, m, n]`. A left operand
/// repeated over the batch (a 1×1 convolution's weight against `[batch,
/// channels, points]`) makes the output's columns the kernel's mode index,
/// the fastest one, so its loads and stores stay coalesced; otherwise the
/// batch is.
pub fn matmul(batch: usize, m: usize, k: usize, n: usize, lhs: MatrixStrides, rhs: MatrixStrides) -> CgemmProblem {
    let columns_as_modes = lhs.batch == 0 && batch > 1;
    let (q, modes, b, c) = if columns_as_modes {
        (
            batch,
            n,
            Strides {
                row: rhs.row,
                col: rhs.batch,
                mode: rhs.col,
            },
            Strides {
                row: n,
                col: m * n,
                mode: 1,
            },
        )
    } else {
        (
            n,
            batch,
            Strides {
                row: rhs.row,
                col: rhs.col,
                mode: rhs.batch,
            },
            Strides {
                row: n,
                col: 1,
                mode: m * n,
            },
        )
    };
    CgemmProblem {
        p: m,
        q,
        r: k,
        k: modes,
        a: Strides {
            row: lhs.row,
            col: lhs.col,
            mode: lhs.batch,
        },
        b,
        c,
        complex: false,
        conj_a: false,
        conj_b: false,
        mode_scale: Vec::new(),
        bias: None,
        precisions: OperandPrecisions::default(),
    }
}

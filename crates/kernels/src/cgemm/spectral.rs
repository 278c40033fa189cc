//! The three contractions of a spectral convolution over spectra laid out
//! `[batch, channels, modes]` and weights `[Cin, Cout, modes]` (or `[Cin, Cout]`
//! when shared) with the weight's strides given (frameworks may pad its rows).

use super::{CgemmProblem, OperandPrecisions, Strides};

/// Strides of a densely stored weight: `row` walks `Cin`, `col` walks `Cout`,
/// and `mode` is 0 for a weight shared by all modes.
pub fn dense_weight(cout: usize, modes: usize, shared: bool) -> Strides {
    let per_mode = if shared { 1 } else { modes };
    Strides {
        row: cout * per_mode,
        col: per_mode,
        mode: if shared { 0 } else { 1 },
    }
}

fn dense(channels: usize, modes: usize) -> Strides {
    Strides {
        row: channels * modes,
        col: modes,
        mode: 1,
    }
}

/// `Y[b, o, k] = Σ_i X[b, i, k] · W[i, o, k]`.
pub fn forward(batch: usize, cin: usize, cout: usize, modes: usize, weight: Strides) -> CgemmProblem {
    CgemmProblem {
        p: batch,
        q: cout,
        r: cin,
        k: modes,
        a: dense(cin, modes),
        b: weight,
        c: dense(cout, modes),
        complex: true,
        conj_a: false,
        conj_b: false,
        mode_scale: Vec::new(),
        bias: None,
        precisions: OperandPrecisions::default(),
    }
}

/// `GX[b, i, k] = Σ_o G[b, o, k] · conj(W[i, o, k])`.
pub fn grad_input(batch: usize, cin: usize, cout: usize, modes: usize, weight: Strides) -> CgemmProblem {
    CgemmProblem {
        p: batch,
        q: cin,
        r: cout,
        k: modes,
        a: dense(cout, modes),
        // Wᵀ: B's rows walk Cout, its columns Cin.
        b: Strides {
            row: weight.col,
            col: weight.row,
            mode: weight.mode,
        },
        c: dense(cin, modes),
        complex: true,
        conj_a: false,
        conj_b: true,
        mode_scale: Vec::new(),
        bias: None,
        precisions: OperandPrecisions::default(),
    }
}

/// `GW[i, o, k] = Σ_b conj(X[b, i, k]) · G[b, o, k]` (per mode; a shared
/// weight's gradient is its sum over `k`), written densely.
pub fn grad_weight(batch: usize, cin: usize, cout: usize, modes: usize) -> CgemmProblem {
    let x = dense(cin, modes);
    CgemmProblem {
        p: cin,
        q: cout,
        r: batch,
        k: modes,
        // Xᴴ: A's rows walk Cin, its columns the batch.
        a: Strides {
            row: x.col,
            col: x.row,
            mode: 1,
        },
        b: dense(cout, modes),
        c: dense(cout, modes),
        complex: true,
        conj_a: true,
        conj_b: false,
        mode_scale: Vec::new(),
        bias: None,
        precisions: OperandPrecisions::default(),
    }
}

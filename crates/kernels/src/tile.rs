//! The register-tile step of a staged real GEMM (the direct DFT's): for each term of a chunk staged in
//! shared memory, a thread reads its `tm` values of one operand and `tn` of the
//! other and adds their outer product to its `tm × tn` accumulators.

use cubecl::prelude::*;

/// Where a thread's values sit in a staged operand: value `i` of term `k` at
/// `base + k·term + i·step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Walk {
    pub term: usize,
    pub step: usize,
}

/// The compile-time shape of [`accumulate_outer_products`]: `terms` terms of
/// a `tm × tn` outer product, `A` and `B` read along their walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct OuterProducts {
    pub a: Walk,
    pub b: Walk,
    pub terms: usize,
    pub tm: usize,
    pub tn: usize,
}

/// `acc[i·tn + j] += A(k, i) · B(k, j)` over `terms` terms, with `A(k, i)` at
/// `smem_a[a_base + k·a.term + i·a.step]` and `B` likewise; `a` and `b` are
/// the thread's scratch registers (`tm` and `tn` long).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn accumulate_outer_products<F: Float>(
    smem_a: &SharedMemory<F>,
    a_base: usize,
    smem_b: &SharedMemory<F>,
    b_base: usize,
    a: &mut Array<F>,
    b: &mut Array<F>,
    acc: &mut Array<F>,
    #[comptime] shape: OuterProducts,
) {
    let (a_term, a_step) = comptime![(shape.a.term, shape.a.step)];
    let (b_term, b_step) = comptime![(shape.b.term, shape.b.step)];
    let (terms, tm, tn) = comptime![(shape.terms, shape.tm, shape.tn)];
    #[unroll]
    for k in 0..terms {
        #[unroll]
        for i in 0..tm {
            a[i] = smem_a[a_base + k * a_term + i * a_step];
        }
        #[unroll]
        for j in 0..tn {
            b[j] = smem_b[b_base + k * b_term + j * b_step];
        }
        #[unroll]
        for i in 0..tm {
            #[unroll]
            for j in 0..tn {
                acc[i * tn + j] += a[i] * b[j];
            }
        }
    }
}

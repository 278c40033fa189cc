//! The 1×1 convolutions on the CPU for f32 tensors: one GEMM a sample
//! (`W [Cout, Cin] · x_b [Cin, S]`) through the `gemm` crate, the samples over
//! rayon's threads, and the weight gradient's per-sample products summed.
//! Other dtypes run by Burn's ops.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};
use fno_kernels::host_buffers::{par_build, par_build_pair};
use gemm::{gemm, Parallelism};
use rayon::prelude::*;

use super::normal::{cdf, vectorized};
use super::pointwise::lanes_sum;
use super::{device_tensor, host};
use crate::matmul::PreciseMatmulBackend;
use crate::pointwise::{conv_finished_by_ops, MatmulPrecision, PointwiseBackend, Residual};
use crate::reference::pointwise::{pointwise_conv_by_ops, pointwise_param_grads_by_ops};

/// A matrix read in place: element `(r, c)` at `values[r·row + c·col]`.
#[derive(Clone, Copy)]
struct Strided<'a> {
    values: &'a [f32],
    row: usize,
    col: usize,
}

impl<'a> Strided<'a> {
    /// A dense row-major matrix with `cols` columns.
    fn dense(values: &'a [f32], cols: usize) -> Self {
        Self {
            values,
            row: cols,
            col: 1,
        }
    }

    /// Panics unless every element of a `rows × cols` matrix lies in the values.
    fn check(&self, (rows, cols): (usize, usize), what: &str) {
        let last = (rows.max(1) - 1) * self.row + (cols.max(1) - 1) * self.col;
        assert!(
            rows == 0 || cols == 0 || last < self.values.len(),
            "{what}: element {last} of {}",
            self.values.len()
        );
    }
}

/// `dst [m, n] = lhs [m, k] · rhs [k, n]` (dst dense row-major), or `+=` with `accumulate`.
fn matmul(dst: &mut [f32], lhs: Strided<'_>, rhs: Strided<'_>, (m, k, n): (usize, usize, usize), accumulate: bool) {
    assert_eq!(dst.len(), m * n, "matmul destination");
    lhs.check((m, k), "matmul left operand");
    rhs.check((k, n), "matmul right operand");
    // SAFETY: every element the product reads or writes lies in its slice (checked above).
    unsafe {
        gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.values.as_ptr(),
            lhs.col as isize,
            lhs.row as isize,
            rhs.values.as_ptr(),
            rhs.col as isize,
            rhs.row as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

fn all_f32<B: Backend>(tensors: &[&FloatTensor<B>]) -> bool {
    tensors.iter().all(|t| t.dtype() == DType::F32)
}

/// [`crate::PointwiseBackend::pointwise_conv`] on a CPU backend.
pub(crate) fn conv<B: PointwiseBackend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    if !all_f32::<B>(&[&x, &weight]) || bias.as_ref().is_some_and(|b| b.dtype() != DType::F32) {
        return pointwise_conv_by_ops::<B>(x, weight, bias);
    }
    conv_finished::<B>(x, weight, bias, None, false, false).0
}

/// [`crate::PointwiseBackend::pointwise_conv_finished`] on a CPU backend:
/// per sample the GEMM, then the gated residual and GELU while its rows are
/// in cache, on rayon's threads (where Burn's ops would take a pass each on
/// one thread).
pub(crate) fn conv_finished<B: PointwiseBackend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
    residual: Option<Residual<FloatTensor<B>>>,
    gelu: bool,
    keep_pre: bool,
) -> (FloatTensor<B>, Option<FloatTensor<B>>) {
    let mut operands = vec![&x, &weight];
    operands.extend(bias.as_ref());
    operands.extend(
        residual
            .iter()
            .flat_map(|r| std::iter::once(&r.values).chain(r.gate.as_ref())),
    );
    if !all_f32::<B>(&operands) {
        let precision = MatmulPrecision::F32;
        return conv_finished_by_ops::<B>(x, weight, bias, residual, gelu, keep_pre, precision);
    }
    let device = B::float_device(&x);
    let (x, w) = (host::<B>(x), host::<B>(weight));
    let (batch, cin, s, cout) = (x.shape[0], x.shape[1], x.shape[2], w.shape[0]);
    let bias = bias.map(host::<B>);
    let residual = residual.map(|r| (host::<B>(r.values), r.gate.map(host::<B>)));
    let keep_pre = gelu && keep_pre;
    let sample = cout * s;
    let finish = |b: usize, y: &mut [f32], pre: Option<&mut [f32]>| {
        if let Some(bias) = &bias {
            for (row, &v) in y.chunks_exact_mut(s).zip(bias.iter()) {
                row.fill(v);
            }
        }
        let (w, x) = (Strided::dense(&w, cin), Strided::dense(&x[b * cin * s..][..cin * s], s));
        matmul(y, w, x, (cout, cin, s), bias.is_some());
        vectorized(|| {
            if let Some((r, gate)) = &residual {
                let rows = y.chunks_exact_mut(s).zip(r[b * sample..][..sample].chunks_exact(s));
                for (o, (row, r)) in rows.enumerate() {
                    let g = gate.as_ref().map_or(1.0, |g| g[o]);
                    row.iter_mut().zip(r).for_each(|(y, &r)| *y += g * r);
                }
            }
            if let Some(pre) = pre {
                pre.copy_from_slice(y);
            }
            if gelu {
                y.iter_mut().for_each(|v| *v *= cdf(*v));
            }
        })
    };
    let sizes = (batch * sample, sample);
    let (y, pre) = if keep_pre {
        let (y, pre) = par_build_pair(sizes, 0.0, |b, y, pre| finish(b, y, Some(pre)));
        (y, Some(pre))
    } else {
        (par_build(sizes, 0.0, || (), |_, b, y| finish(b, y, None)), None)
    };
    let shape = [batch, cout, s];
    let pre = pre.map(|pre| device_tensor::<B>(pre, &shape, (&device, DType::F32)));
    (device_tensor::<B>(y, &shape, (&device, DType::F32)), pre)
}

/// [`crate::PointwiseBackend::pointwise_param_grads`] on a CPU backend.
pub(crate) fn param_grads<B: PreciseMatmulBackend>(
    grad: FloatTensor<B>,
    x: FloatTensor<B>,
    with_bias: bool,
) -> (FloatTensor<B>, Option<FloatTensor<B>>) {
    if !all_f32::<B>(&[&grad, &x]) {
        return pointwise_param_grads_by_ops::<B>(grad, x, with_bias);
    }
    let device = B::float_device(&x);
    let (g, x) = (host::<B>(grad), host::<B>(x));
    let (batch, cout, s, cin) = (g.shape[0], g.shape[1], g.shape[2], x.shape[1]);
    // gW = Σ_b g_b [Cout, S] · x_bᵀ [S, Cin]; x_bᵀ read through its transpose's
    // strides. The bias gradient's per-sample row sums follow, then both are summed.
    let sample = |b: usize| {
        let mut sums = vec![0.0f32; cout * cin + cout];
        let (gw, gb) = sums.split_at_mut(cout * cin);
        let (g, x) = (&g[b * cout * s..][..cout * s], &x[b * cin * s..][..cin * s]);
        let xt = Strided {
            values: x,
            row: 1,
            col: s,
        };
        matmul(gw, Strided::dense(g, s), xt, (cout, s, cin), false);
        if with_bias {
            gb.iter_mut()
                .zip(g.chunks_exact(s.max(1)))
                .for_each(|(gb, row)| *gb = vectorized(|| lanes_sum(row)));
        }
        sums
    };
    let add = |mut a: Vec<f32>, b: Vec<f32>| {
        a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        a
    };
    let mut gw = (0..batch)
        .into_par_iter()
        .map(sample)
        .reduce(|| vec![0.0; cout * cin + cout], add);
    let gb = gw.split_off(cout * cin);
    let gb = with_bias.then(|| device_tensor::<B>(gb, &[cout], (&device, DType::F32)));
    (device_tensor::<B>(gw, &[cout, cin], (&device, DType::F32)), gb)
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::ops::{FloatTensor, FloatTensorOps};
    use burn::tensor::{Tensor, TensorData, TensorPrimitive};
    use fno_testing::{fresh_seed, relative_l2_f32, uniform_f32};

    use crate::reference::pointwise::{pointwise_conv_by_ops, pointwise_param_grads_by_ops};

    type B = NdArray<f32>;

    fn tensor<const D: usize>(shape: [usize; D], seed: u64) -> FloatTensor<B> {
        let n = shape.iter().product();
        let t = Tensor::<B, D>::from_data(TensorData::new(uniform_f32(n, seed), shape), &Default::default());
        t.into_primitive().tensor()
    }

    /// The relative L2 distance of two tensors' values.
    fn distance(got: FloatTensor<B>, want: FloatTensor<B>) -> f64 {
        let values = |t| {
            let t = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
            t.into_data().to_vec::<f32>().unwrap()
        };
        let flat = |t: FloatTensor<B>| {
            let n = burn::tensor::TensorMetadata::shape(&t).num_elements();
            B::float_reshape(t, [n].into())
        };
        relative_l2_f32(&values(flat(got)), &values(flat(want)))
    }

    /// The GEMMs against Burn's ops: outputs with and without bias, from a
    /// transposed (strided) weight, and both parameter gradients.
    #[test]
    fn one_by_one_convolutions_match_burns_ops() {
        let seed = fresh_seed();
        println!("seed {seed}");
        let (batch, cin, cout, s) = (3, 5, 4, 37);
        let x = || tensor([batch, cin, s], seed);
        let w = || tensor([cout, cin], seed + 1);
        let b = || tensor([cout], seed + 2);
        let wt = || B::float_transpose(tensor([cin, cout], seed + 3));
        for (weight, bias) in [(w(), Some(b())), (w(), None), (wt(), Some(b()))] {
            let with_bias = bias.is_some();
            let want = pointwise_conv_by_ops::<B>(x(), weight.clone(), bias.clone());
            let e = distance(super::conv::<B>(x(), weight, bias), want);
            assert!(e <= 1e-6, "conv (bias {with_bias}): {e:e}");
        }
        let g = || tensor([batch, cout, s], seed + 4);
        let (gw, gb) = super::param_grads::<B>(g(), x(), true);
        let (want_w, want_b) = pointwise_param_grads_by_ops::<B>(g(), x(), true);
        let e = distance(gw, want_w);
        assert!(e <= 1e-6, "weight gradient: {e:e}");
        let e = distance(gb.unwrap(), want_b.unwrap());
        assert!(e <= 1e-6, "bias gradient: {e:e}");
    }
}

//! The per-mode complex products of [`ModeMixBackend`](crate::ModeMixBackend)'s
//! defaults and the spectra's helpers built of Burn's ops on any backend.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorData, TensorMetadata, TensorPrimitive};
use fno_kernels::cgemm::ModeBias;

use crate::rounding::in_dtype;

type Parts<B> = (Tensor<B, 3>, Tensor<B, 3>);

/// `[R, C, K, 2]` → real and imaginary parts `[K, R, C]`: modes lead as the batch of products.
fn modes_leading<B: Backend>(t: FloatTensor<B>) -> Parts<B> {
    let t = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(t));
    let part = |i: usize| t.clone().narrow(3, i, 1).squeeze_dim::<3>(3).permute([2, 0, 1]);
    (part(0), part(1))
}

/// The conjugate transpose of each mode's matrix.
fn adjoint<B: Backend>((re, im): Parts<B>) -> Parts<B> {
    (re.swap_dims(1, 2), -im.swap_dims(1, 2))
}

fn product<B: Backend>((a, b): Parts<B>, (c, d): Parts<B>) -> FloatTensor<B> {
    let re = a.clone().matmul(c.clone()) - b.clone().matmul(d.clone());
    let im = a.matmul(d) + b.matmul(c);
    Tensor::stack::<4>(vec![re.permute([1, 2, 0]), im.permute([1, 2, 0])], 3)
        .into_primitive()
        .tensor()
}

/// Each mode's product `op(a)·op(b)` of spectra `[R, C, K, 2]` by Burn's
/// batched matmuls, `op` the conjugate transpose for the operands `adjoints`
/// names; `b` may hold one mode for all `modes`.
pub(crate) fn complex_products<B: Backend>(
    a: FloatTensor<B>,
    b: FloatTensor<B>,
    modes: usize,
    (adjoint_a, adjoint_b): (bool, bool),
) -> FloatTensor<B> {
    let (a, (b_re, b_im)) = (modes_leading::<B>(a), modes_leading::<B>(b));
    let every_mode = |t: Tensor<B, 3>| {
        let [_, rows, cols] = t.dims();
        t.expand([modes, rows, cols])
    };
    let b = (every_mode(b_re), every_mode(b_im));
    let a = if adjoint_a { adjoint(a) } else { a };
    let b = if adjoint_b { adjoint(b) } else { b };
    product(a, b)
}

/// `[Cin, Cout, K, 2]` summed over the modes to `[Cin, Cout, 1, 2]`.
pub(crate) fn sum_modes<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(t))
        .sum_dim(2)
        .into_primitive()
        .tensor()
}

/// `[.., m_last, 2]` spectra (or anything whose last dim but one repeats
/// `bins.len()` values) times (or over) a weight per bin of the last dim.
pub(crate) fn scale_bins<B: Backend>(s: FloatTensor<B>, bins: Vec<f32>, divide: bool) -> FloatTensor<B> {
    let shape = s.shape().to_vec();
    let m = bins.len();
    let rows = shape.iter().product::<usize>() / (2 * m);
    let s = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(B::float_reshape(s, Shape::new([rows, m, 2]))));
    let w = Tensor::<B, 1>::from_floats(bins.as_slice(), &s.device()).reshape([1, m, 1]);
    let w = in_dtype(w, s.dtype());
    let scaled = if divide { s / w } else { s * w };
    B::float_reshape(scaled.into_primitive().tensor(), Shape::from(shape))
}

/// `y: [B, C, K, 2]` plus `factor·bias[c]` at one mode (a one-hot product).
pub(crate) fn add_at_mode<B: Backend>(y: Tensor<B, 4>, bias: Tensor<B, 1>, at: ModeBias) -> Tensor<B, 4> {
    let [_, channels, modes, _] = y.dims();
    let mut one_hot = vec![0f32; 2 * modes];
    one_hot[2 * at.mode] = at.factor;
    let one_hot = Tensor::<B, 4>::from_data(TensorData::new(one_hot, [1, 1, modes, 2]), &y.device());
    let dtype = y.dtype();
    y + in_dtype(bias.reshape([1, channels, 1, 1]), dtype) * in_dtype(one_hot, dtype)
}

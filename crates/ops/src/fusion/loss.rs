//! The loss norms and their gradient on `Fusion`: one custom op each, run by
//! the inner backend's kernels (Burn fusion does not merge rolls and row
//! sums); values other than f32 run Burn's ops, which it may merge.

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_fusion::{Fusion, FusionBackend};

use super::{meta, register_one};
use crate::pointwise::PointwiseBackend;
use crate::reference::loss::{loss_norms_by_ops, loss_norms_grad_by_ops};

fn f32s<B: FusionBackend>(tensors: &[&FloatTensor<Fusion<B>>]) -> bool {
    tensors.iter().all(|t| t.dtype == DType::F32) && (3..=5).contains(&tensors[0].shape.num_dims())
}

pub(super) fn loss_norms<B: FusionBackend + PointwiseBackend>(
    x: FloatTensor<Fusion<B>>,
    y: FloatTensor<Fusion<B>>,
    derivatives: bool,
) -> FloatTensor<Fusion<B>> {
    if !f32s::<B>(&[&x, &y]) {
        return loss_norms_by_ops::<Fusion<B>>(x, y, derivatives);
    }
    let out = (vec![2, x.shape[0] * x.shape[1]], DType::F32);
    register_one::<B>("fno_loss_norms", vec![x, y], out, move |t| {
        let [x, y] = <[_; 2]>::try_from(t).expect("two operands");
        B::loss_norms(x, y, derivatives)
    })
}

pub(super) fn loss_norms_grad<B: FusionBackend + PointwiseBackend>(
    x: FloatTensor<Fusion<B>>,
    y: Option<FloatTensor<Fusion<B>>>,
    scale: FloatTensor<Fusion<B>>,
    derivatives: bool,
) -> FloatTensor<Fusion<B>> {
    let operands: Vec<_> = [Some(&x), y.as_ref(), Some(&scale)].into_iter().flatten().collect();
    if !f32s::<B>(&operands) {
        return loss_norms_grad_by_ops::<Fusion<B>>(x, y, scale, derivatives);
    }
    let (out, with_y) = (meta(&x), y.is_some());
    let inputs = [Some(x), y, Some(scale)].into_iter().flatten().collect();
    register_one::<B>("fno_loss_norms_grad", inputs, out, move |t| {
        let mut t = t.into_iter();
        let x = t.next().expect("x");
        let y = with_y.then(|| t.next().expect("y"));
        B::loss_norms_grad(x, y, t.next().expect("scale"), derivatives)
    })
}

//! Data-parallel training's gradient exchange: each replica's gradients
//! summed over every peer registered with burn-collective, as one all-reduce
//! a step over all parameters packed in one buffer. Its cost per call is
//! fixed (about 0.15 ms on CUDA whatever the size up to 32 MiB:
//! benches/results/2026-11-29_collective_probe_h200.md), so reducing
//! parameter by parameter would cost a step's time. The losses are sums over
//! samples, so the summed gradients of shards are the whole batch's.

use burn::collective::{all_reduce, CollectiveError, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Shape, Tensor, TensorPrimitive};

/// `grads` of `model`'s parameters summed over every peer of the collective
/// (each peer calls this with its own replica's gradients and `peer`; it
/// returns once all have). Replicas must be the same model, so that their
/// parameters are visited in the same order.
pub fn sum_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    grads: GradientsParams,
    model: &M,
    peer: PeerId,
) -> Result<GradientsParams, CollectiveError> {
    let mut pack = Pack::<B> {
        grads,
        parts: Vec::new(),
        packed: Vec::new(),
    };
    model.visit(&mut pack);
    let Pack { grads, parts, packed } = pack;
    if parts.is_empty() {
        return Ok(grads);
    }
    let flat = Tensor::cat(parts, 0).into_primitive().tensor();
    let summed = all_reduce::<B::InnerBackend>(peer, flat, ReduceOperation::Sum)?;
    let mut unpack = Unpack::<B> {
        grads,
        summed: Tensor::from_primitive(TensorPrimitive::Float(summed)),
        packed,
        next: 0,
        at: 0,
    };
    model.visit(&mut unpack);
    Ok(unpack.grads)
}

/// Flattens every parameter's gradient into `parts`, in visiting order,
/// noting each one's parameter and shape.
struct Pack<B: AutodiffBackend> {
    grads: GradientsParams,
    parts: Vec<Tensor<B::InnerBackend, 1>>,
    packed: Vec<(ParamId, Shape)>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Pack<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = self.grads.get::<B::InnerBackend, D>(param.id) {
            let shape = grad.shape();
            self.parts.push(grad.reshape([shape.num_elements()]));
            self.packed.push((param.id, shape));
        }
    }
}

/// Registers each packed parameter's slice of the summed buffer as its gradient.
struct Unpack<B: AutodiffBackend> {
    grads: GradientsParams,
    summed: Tensor<B::InnerBackend, 1>,
    packed: Vec<(ParamId, Shape)>,
    next: usize,
    at: usize,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Unpack<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some((id, shape)) = self.packed.get(self.next).filter(|(id, _)| *id == param.id) else {
            return;
        };
        let len = shape.num_elements();
        let slice = self.summed.clone().narrow(0, self.at, len).reshape(shape.clone());
        self.grads.register::<B::InnerBackend, D>(*id, slice);
        self.next += 1;
        self.at += len;
    }
}

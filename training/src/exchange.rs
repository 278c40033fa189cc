//! The exchanges between data-parallel replicas over burn-collective: each
//! replica's share of a batch, gradients summed in one all-reduce of a packed
//! buffer, the root's parameters broadcast, and values summed. A leaf module:
//! both the trainer and [`crate::data_parallel`] use it.

use burn::collective::{all_reduce, CollectiveError, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Shape, Tensor, TensorData, TensorPrimitive};

use crate::TrainError;

/// One replica of data-parallel training ([`crate::data_parallel`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Replica {
    pub peer: PeerId,
    /// Its place among all replicas: 0 evaluates and writes the run's files.
    pub rank: usize,
    pub world: usize,
}

pub(crate) fn collective(e: CollectiveError) -> TrainError {
    TrainError::Collective(format!("{e:?}"))
}

/// Replica `rank`'s share of a batch of `len` samples among `world`:
/// contiguous, sizes differing by at most one, earlier ranks the larger.
pub fn shard(len: usize, rank: usize, world: usize) -> std::ops::Range<usize> {
    let (base, extra) = (len / world, len % world);
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}

/// `grads` of `model`'s parameters summed over every peer of the collective,
/// and `values` (per-replica sums such as the loss) summed along in the same
/// call. Each peer calls this with its own replica's gradients and `peer`; it
/// returns once all have. Replicas must be the same model, so that their
/// parameters are visited in the same order.
pub fn sum_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    grads: GradientsParams,
    model: &M,
    peer: PeerId,
    values: Tensor<B::InnerBackend, 1>,
) -> Result<(GradientsParams, Tensor<B::InnerBackend, 1>), CollectiveError> {
    let mut pack = Pack::<B> {
        grads,
        parts: Vec::new(),
        packed: Vec::new(),
    };
    model.visit(&mut pack);
    let Pack {
        grads,
        mut parts,
        packed,
    } = pack;
    let dtype = parts.first().map_or(values.dtype(), Tensor::dtype);
    let riders = values.dims()[0];
    parts.push(values.cast(dtype));
    let flat = Tensor::cat(parts, 0).into_primitive().tensor();
    let summed: Tensor<B::InnerBackend, 1> =
        Tensor::from_primitive(TensorPrimitive::Float(all_reduce::<B::InnerBackend>(
            peer,
            flat,
            ReduceOperation::Sum,
        )?));
    let total = summed.dims()[0];
    let mut unpack = Unpack::<B> {
        grads,
        summed: summed.clone(),
        packed,
        next: 0,
        at: 0,
    };
    model.visit(&mut unpack);
    Ok((unpack.grads, summed.narrow(0, total - riders, riders)))
}

/// Takes every parameter's gradient out of `grads` (freed once packed)
/// into `parts`, flat and in visiting order, noting its parameter and shape.
struct Pack<B: AutodiffBackend> {
    grads: GradientsParams,
    parts: Vec<Tensor<B::InnerBackend, 1>>,
    packed: Vec<(ParamId, Shape)>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Pack<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) {
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

/// `model` with every float parameter set to the root replica's, in one
/// exchange: replicas start equal whatever their devices' random streams.
/// An all-reduce of the root's values and the others' zeros, exact (adding
/// zeros), and the one operation burn-collective 0.21 also runs across nodes.
pub fn broadcast_parameters<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: M,
    peer: PeerId,
    root: bool,
) -> Result<M, CollectiveError> {
    let mut gather = Gather::<B> {
        root,
        parts: Vec::new(),
    };
    model.visit(&mut gather);
    if gather.parts.is_empty() {
        return Ok(model);
    }
    let flat = Tensor::cat(gather.parts, 0).into_primitive().tensor();
    let received = all_reduce::<B::InnerBackend>(peer, flat, ReduceOperation::Sum)?;
    let mut scatter = Scatter::<B> {
        values: Tensor::from_primitive(TensorPrimitive::Float(received)),
        at: 0,
    };
    Ok(model.map(&mut scatter))
}

/// Every float parameter flattened, in visiting order: its values on the
/// root, zeros elsewhere.
struct Gather<B: AutodiffBackend> {
    root: bool,
    parts: Vec<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Gather<B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let value = param.val().inner();
        let len = value.shape().num_elements();
        let flat = value.reshape([len]);
        self.parts.push(match self.root {
            true => flat,
            false => flat.zeros_like(),
        });
    }
}

struct Scatter<B: AutodiffBackend> {
    values: Tensor<B::InnerBackend, 1>,
    at: usize,
}

impl<B: AutodiffBackend> ModuleMapper<B> for Scatter<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let at = &mut self.at;
        let values = &self.values;
        param.map(|old| {
            let shape = old.shape();
            let len = shape.num_elements();
            let value = values.clone().narrow(0, *at, len).reshape(shape);
            *at += len;
            let value = Tensor::from_inner(value);
            match old.is_require_grad() {
                true => value.require_grad(),
                false => value,
            }
        })
    }
}

/// `values` summed over every replica (one all-reduce): each contributes its
/// own, so a value only one replica holds reaches all the others as it is.
pub(crate) fn sum_values<B: Backend>(values: &[f64], peer: PeerId, device: &B::Device) -> Result<Vec<f64>, TrainError> {
    let tensor = Tensor::<B, 1>::from_data(TensorData::new(values.to_vec(), [values.len()]), device);
    let summed = all_reduce::<B>(peer, tensor.into_primitive().tensor(), ReduceOperation::Sum).map_err(collective)?;
    let summed: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(summed));
    Ok(summed.into_data().convert::<f64>().to_vec::<f64>().expect("f64 values"))
}

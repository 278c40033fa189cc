//! Data-parallel training over burn-collective: one model replica per
//! device, each taking a share of every batch, their gradients summed by one
//! all-reduce a step over all parameters packed in one buffer. Its cost per
//! call is fixed (about 0.15 ms on CUDA whatever the size up to 32 MiB:
//! benches/results/2026-11-29_collective_probe_h200.md), so reducing
//! parameter by parameter would cost a step's time. The losses are sums over
//! samples, so the summed gradients of shards are the whole batch's, and the
//! replicas train as one device would on the whole batch (docs/data_parallel.md).

use burn::collective::{
    all_reduce, finish_collective, register, CollectiveConfig, CollectiveError, PeerId, ReduceOperation,
};
use burn::module::{AutodiffModule, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Shape, Tensor, TensorData, TensorPrimitive};
use fno_ops::SpectralConvBackend;

use crate::config::TrainConfig;
use crate::data::PreparedData;
use crate::trainer::{train_replica, Replica, RunOptions, TrainObserver, TrainSummary};
use crate::TrainError;

/// Where data-parallel training's replicas run: one on each device.
#[derive(Clone, Debug)]
pub struct Replicas<D> {
    pub devices: Vec<D>,
}

/// Trains `cfg.model` on `data` with a replica on each of `replicas`'
/// devices, in threads; as [`crate::train`] where there is one. The first
/// replica reports to `observer`, evaluates and writes the run's files; the
/// others train silently.
pub fn train_data_parallel<B>(
    cfg: &TrainConfig,
    data: &PreparedData,
    options: &RunOptions,
    replicas: &Replicas<B::Device>,
    observer: &mut dyn TrainObserver,
) -> Result<TrainSummary, TrainError>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    let world = replicas.devices.len();
    match world {
        0 => return Err(TrainError::Config("data-parallel training needs a device".into())),
        1 => return crate::train::<B>(cfg, data, options, &replicas.devices[0], observer),
        _ => {}
    }
    // Refused before any replica waits on the others.
    crate::check_start(&cfg.run.out_dir, options.start)?;
    let config = CollectiveConfig::default().with_num_devices(world);
    let run = |rank: usize, observer: &mut dyn TrainObserver| {
        let device = &replicas.devices[rank];
        let replica = Replica {
            peer: PeerId::from(rank as u32),
            rank,
            world,
        };
        register::<B::InnerBackend>(replica.peer, device.clone(), config.clone()).map_err(collective)?;
        let trained = train_replica::<B>(cfg, data, options, device, Some(replica), observer);
        let finished = finish_collective::<B::InnerBackend>(replica.peer).map_err(collective);
        trained.and_then(|summary| finished.map(|_| summary))
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..world)
            .map(|rank| scope.spawn(move || run(rank, &mut Silent)))
            .collect();
        let summary = run(0, observer);
        let others: Vec<_> = others
            .into_iter()
            .map(|thread| thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect();
        let summary = summary?;
        others.into_iter().try_for_each(|other| other.map(drop))?;
        Ok(summary)
    })
}

pub(crate) fn collective(e: CollectiveError) -> TrainError {
    TrainError::Collective(format!("{e:?}"))
}

/// The replicas other than the reporting one say nothing.
struct Silent;

impl TrainObserver for Silent {
    fn batch(&mut self, _: usize, _: usize, _: usize, _: usize, _: f64) {}
    fn epoch(&mut self, _: &crate::checkpoint::EpochMetrics) {}
    fn message(&mut self, _: &str) {}
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

//! Data-parallel training over burn-collective: one model replica per
//! device, each taking a share of every batch, their gradients summed by one
//! all-reduce a step over all parameters packed in one buffer: a call's cost
//! hardly depends on its size (benches/results/2026-11-29_collective_probe_h200.md),
//! so reducing parameter by parameter would cost a step's time. The losses are sums over
//! samples, so the summed gradients of shards are the whole batch's, and the
//! replicas train as one device would on the whole batch (docs/data_parallel.md).

use burn::collective::{finish_collective, register, CollectiveConfig, PeerId};
use burn::tensor::backend::AutodiffBackend;
use fno_ops::SpectralConvBackend;

use crate::checkpoint::EpochMetrics;
use crate::config::TrainConfig;
use crate::data::PreparedData;
use crate::exchange::{collective, Replica};
use crate::run::{RunOptions, TrainObserver, TrainSummary};
use crate::trainer::{check_start, train, train_replica};
use crate::TrainError;

// The exchanges, at the paths they had when they lived here.
pub use crate::exchange::{broadcast_parameters, shard, sum_gradients};

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
        1 => return train::<B>(cfg, data, options, &replicas.devices[0], observer),
        _ => {}
    }
    // Refused before any replica waits on the others.
    check_start(&cfg.run.out_dir, options.start)?;
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

/// The replicas other than the reporting one say nothing.
struct Silent;

impl TrainObserver for Silent {
    fn batch(&mut self, _: usize, _: usize, _: usize, _: usize, _: f64) {}
    fn epoch(&mut self, _: &EpochMetrics) {}
    fn message(&mut self, _: &str) {}
}

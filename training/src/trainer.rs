//! The training loop: AdamW on a Burn autodiff backend, one schedule step per
//! epoch, evaluation on every test set, checkpoints and metrics, exact resume.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::data::dataloader::batcher::Batcher;
use burn::module::{AutodiffModule, Module};
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use fno_datasets::batch::{PdeBatch, PdeBatcher, PdeItem};
use fno_datasets::generate::Rng;
use fno_datasets::PdeDataset;
use fno_kernels::pools::MemoryMode;
use fno_models::{BlockPrecision, Fno, ModelSettings};
use fno_ops::{FaultCounts, PointwiseBackend, SpectralConvBackend};

use crate::checkpoint::{self, EpochMetrics, NormalizerState, TestMetrics, TrainingState};
use crate::config::TrainConfig;
use crate::data::PreparedData;
use crate::evaluate::scalar;
use crate::exchange::{broadcast_parameters, collective, shard, sum_gradients, sum_values, Replica};
use crate::faults::Faults;
use crate::memory::{self, Peaks};
use crate::optim::{gradients_poison, FusedAdamW, FusedAdamWOptimizer, LossScaler};
use crate::schedule::Scheduler;
use crate::TrainError;

// Kept at their old paths (`fno_training::trainer::RunOptions`, …).
pub use crate::evaluate::{evaluate, predict, relative_errors};
pub use crate::run::{RunOptions, Start, TrainObserver, TrainSummary};

static INITIALISING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Steps between reads of the training loss (see the training loop).
const LOSS_READS_EVERY: usize = 16;

/// The files a run writes into its directory.
const RUN_FILES: [&str; 6] = [
    "last.state",
    "last.safetensors",
    "best.state",
    "best.safetensors",
    "metrics.jsonl",
    "predictions.png",
];

/// The files a run in `out_dir` may write (or, starting over, remove).
pub fn run_files(out_dir: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    RUN_FILES.iter().map(|name| out_dir.join(name))
}

/// Checks `start` against what `out_dir` holds, before any data are read:
/// a fresh run must not mix its files with an earlier run's, a resumed one
/// needs a state. [`train`] checks again and clears the directory for
/// [`Start::Overwrite`].
pub fn check_start(out_dir: &Path, start: Start) -> Result<(), TrainError> {
    let last = checkpoint::state_path(out_dir, "last");
    match start {
        Start::Resume if !last.exists() => Err(TrainError::OutDir(format!(
            "nothing to resume: {} does not exist (start without `--resume`)",
            last.display()
        ))),
        Start::Fresh if last.exists() => {
            let held = match checkpoint::read_state(&last) {
                Ok((state, _, _)) if state.epoch >= state.config.optim.epochs => {
                    format!("a finished run ({} epochs)", state.epoch)
                }
                Ok((state, _, _)) => format!(
                    "a run stopped after epoch {} of {}",
                    state.epoch, state.config.optim.epochs
                ),
                Err(_) => "an unreadable run state".to_string(),
            };
            Err(TrainError::OutDir(format!(
                "{} holds {held}: continue it with `--resume` or start again with `--overwrite`",
                out_dir.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Trains `cfg.model` on `data`, writing into `cfg.run.out_dir`.
pub fn train<B>(
    cfg: &TrainConfig,
    data: &PreparedData,
    options: &RunOptions,
    device: &B::Device,
    observer: &mut dyn TrainObserver,
) -> Result<TrainSummary, TrainError>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    train_replica::<B>(cfg, data, options, device, None, observer)
}

/// [`train`] as `replica` where given, registered with burn-collective.
pub(crate) fn train_replica<B>(
    cfg: &TrainConfig,
    data: &PreparedData,
    options: &RunOptions,
    device: &B::Device,
    replica: Option<Replica>,
    observer: &mut dyn TrainObserver,
) -> Result<TrainSummary, TrainError>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    match cfg.model.dims() {
        1 => Run::<B>::new(cfg, data, options, device, replica)?.go::<3>(observer),
        2 => Run::<B>::new(cfg, data, options, device, replica)?.go::<4>(observer),
        3 => Run::<B>::new(cfg, data, options, device, replica)?.go::<5>(observer),
        d => Err(TrainError::Config(format!("{d}-D models are not supported"))),
    }
}

struct Run<'a, B: AutodiffBackend> {
    cfg: &'a TrainConfig,
    data: &'a PreparedData,
    options: &'a RunOptions,
    device: &'a B::Device,
    out_dir: &'a Path,
    metrics_path: PathBuf,
    /// The training set's batches, normalised.
    batcher: PdeBatcher,
    replica: Option<Replica>,
    /// Whether this replica evaluates and writes the run's files.
    root: bool,
}

/// What a run changes as it trains: the model, its optimiser, the state its
/// checkpoints keep, and the dynamic loss scale of half-precision blocks.
struct Training<B: AutodiffBackend>
where
    B::InnerBackend: PointwiseBackend,
{
    model: Fno<B>,
    optimizer: FusedAdamWOptimizer<Fno<B>, B>,
    state: TrainingState,
    scaler: Option<LossScaler>,
}

/// Where a batch stands: its epoch, its index and the epoch's batch count.
#[derive(Clone, Copy)]
struct BatchAt {
    epoch: usize,
    index: usize,
    count: usize,
}

impl BatchAt {
    /// Whether the losses are read after this batch: every step with a loss
    /// scaler (it decides on each step's gradients, whose finiteness travels
    /// with the loss), else every `LOSS_READS_EVERY` steps and at the end.
    fn reads(self, scaled: bool) -> bool {
        scaled || (self.index + 1).is_multiple_of(LOSS_READS_EVERY) || self.index + 1 == self.count
    }
}

/// Losses not yet read: their sum on the device, its samples, and the
/// batches it holds before the latest.
type Unread<B> = (Tensor<B, 1>, usize, usize);

/// An epoch's running figures over its batches.
struct EpochTally<B: Backend> {
    /// The losses read so far, summed over samples.
    loss_sum: f64,
    unread: Option<Unread<B>>,
    /// Steps the loss scaler skipped.
    skipped: usize,
    peaks: Peaks,
}

impl<B: Backend> EpochTally<B> {
    /// Adds a step's `loss` (of `samples` samples) to the unread ones, and
    /// takes them all out where `read`. The losses stay on the device until a
    /// read, since a read waits for the device, which then idles while the
    /// next step is launched.
    fn add(&mut self, loss: Tensor<B, 1>, samples: usize, read: bool) -> Option<Unread<B>> {
        let unread = match self.unread.take() {
            Some((sum, before, earlier)) => (sum + loss, before + samples, earlier + 1),
            None => (loss, samples, 0),
        };
        if read {
            return Some(unread);
        }
        self.unread = Some(unread);
        None
    }
}

impl<'a, B> Run<'a, B>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    fn new(
        cfg: &'a TrainConfig,
        data: &'a PreparedData,
        options: &'a RunOptions,
        device: &'a B::Device,
        replica: Option<Replica>,
    ) -> Result<Self, TrainError> {
        cfg.validate().map_err(TrainError::Config)?;
        let out_dir = cfg.run.out_dir.as_path();
        let root = replica.is_none_or(|r| r.rank == 0);
        let run = Run {
            cfg,
            data,
            options,
            device,
            out_dir,
            metrics_path: out_dir.join("metrics.jsonl"),
            batcher: PdeBatcher::new(&data.train)
                .normalized(data.input_normalizer.clone(), data.output_normalizer.clone()),
            replica,
            root,
        };
        if !root {
            return Ok(run);
        }
        check_start(out_dir, options.start)?;
        let io = |e: std::io::Error, path: &Path| TrainError::Io(format!("{}: {e}", path.display()));
        std::fs::create_dir_all(out_dir).map_err(|e| io(e, out_dir))?;
        if options.start == Start::Overwrite {
            for name in RUN_FILES {
                let path = out_dir.join(name);
                if path.exists() {
                    std::fs::remove_file(&path).map_err(|e| io(e, &path))?;
                }
            }
        }
        Ok(run)
    }

    /// Trains epoch after epoch until the last, or until `stop_after`.
    fn go<const D: usize>(self, observer: &mut dyn TrainObserver) -> Result<TrainSummary, TrainError> {
        let mut faults = Faults::start::<B>(self.options.fault_tolerance, self.device);
        let mut t = self.start(observer)?;
        let mut run_epochs = 0;
        while t.state.epoch < self.cfg.optim.epochs && self.options.stop_after.is_none_or(|s| run_epochs < s) {
            t = self.epoch::<D>(t, &mut faults, observer)?;
            run_epochs += 1;
        }
        self.finish(t, &faults)
    }

    /// The model, optimiser and state the run starts from (fresh, or resumed
    /// from `last`), the same on every replica; the metrics file rewritten to
    /// the state's history.
    fn start(&self, observer: &mut dyn TrainObserver) -> Result<Training<B>, TrainError> {
        let o = &self.cfg.optim;
        let mut t = Training {
            model: self.configured(self.initial_model()?),
            optimizer: FusedAdamW::new(o.eps as f32, o.weight_decay as f32)
                .init::<B, Fno<B>>(o.grad_clip_norm.map(|c| GradientClippingConfig::Norm(c as f32))),
            state: TrainingState {
                epoch: 0,
                scheduler: Scheduler::new(o.schedule.clone(), o.lr),
                best: None,
                input_normalizer: self.data.input_normalizer.as_ref().map(NormalizerState::of),
                output_normalizer: self.data.output_normalizer.as_ref().map(NormalizerState::of),
                history: Vec::new(),
                config: self.cfg.clone(),
            },
            // Half blocks take a dynamic loss scale: their f16 output gradients
            // would lose small values (restarted on --resume).
            scaler: (self.cfg.model.fno_block_precision == BlockPrecision::Half).then(LossScaler::new),
        };
        if self.options.start == Start::Resume {
            t = self.resume(t, observer)?;
        }
        if let Some(replica) = self.replica {
            t.model = broadcast_parameters(t.model, replica.peer, self.root).map_err(collective)?;
        }
        t.optimizer = t.optimizer.with_complex_params(t.model.complex_params());
        observer.message(&format!("model: {} parameters", t.model.num_params()));
        if let Some(why) = self.cfg.run.matmul_precision.unavailable_on::<B>(self.device) {
            observer.message(why);
        }
        if self.root {
            self.rewrite_metrics(&t.state.history)?;
        }
        Ok(t)
    }

    /// The weights a fresh run starts from: `init_from`'s, else drawn from
    /// the run's seed.
    fn initial_model(&self) -> Result<Fno<B>, TrainError> {
        // Backends draw from one generator per process: each replica seeds it
        // and draws its weights alone, so that the root's (which all replicas
        // take) are those one device draws.
        let _alone = INITIALISING.lock().unwrap_or_else(|e| e.into_inner());
        B::seed(self.device, self.cfg.run.seed);
        Ok(match &self.options.init_from {
            Some(bytes) => Fno::<B>::load_checkpoint(bytes, Some(&self.cfg.model), self.device)?,
            None => Fno::<B>::new(&self.cfg.model, self.device)?,
        })
    }

    /// `model` with this invocation's kernels and precisions (the block
    /// precision the configuration's model says).
    fn configured(&self, model: Fno<B>) -> Fno<B> {
        model
            .with_spectral_impl(self.options.spectral_impl)
            .with_settings(ModelSettings {
                matmul: self.cfg.run.matmul_precision,
                block: Some(self.cfg.model.fno_block_precision),
                fault_tolerance: self.options.fault_tolerance,
                fft_planning: self.options.fft_planning,
            })
    }

    /// `fresh` continued from the directory's `last` checkpoint, once that is
    /// found to be the same experiment.
    fn resume(&self, fresh: Training<B>, observer: &mut dyn TrainObserver) -> Result<Training<B>, TrainError> {
        let last = checkpoint::state_path(self.out_dir, "last");
        let (saved, model_bytes, optim_bytes) = checkpoint::read_state(&last)?;
        check_resumable(&saved, &fresh.state)?;
        let (model, optimizer) =
            checkpoint::restore(fresh.model, fresh.optimizer, model_bytes, optim_bytes, self.device)?;
        let model = self.configured(model);
        observer.message(&format!("resuming {} after epoch {}", last.display(), saved.epoch));
        Ok(Training {
            model,
            optimizer,
            state: TrainingState {
                config: self.cfg.clone(),
                ..saved
            },
            scaler: fresh.scaler,
        })
    }

    /// One epoch: its batches, then its end (evaluation, schedule,
    /// checkpoints, metrics; exchanged between replicas) and its report.
    fn epoch<const D: usize>(
        &self,
        t: Training<B>,
        faults: &mut Faults,
        observer: &mut dyn TrainObserver,
    ) -> Result<Training<B>, TrainError> {
        let started = Instant::now();
        let lr = t.state.scheduler.lr;
        let (mut t, tally) = self.train_epoch::<D>(t, lr, observer)?;
        memory::release::<B>(self.cfg.run.memory, self.device);
        t.state.epoch += 1;
        let mut metrics = EpochMetrics {
            epoch: t.state.epoch,
            lr,
            train_loss: tally.loss_sum / self.data.train.len() as f64,
            seconds: started.elapsed().as_secs_f64(),
            tests: Vec::new(),
            memory: None,
        };
        let own = faults.own::<B>(self.device);
        let all = match self.replica {
            None => {
                self.close_epoch::<D>(&mut t, &mut metrics, tally.peaks)?;
                own
            }
            Some(replica) => self.close_replicated_epoch::<D>(replica, &mut t, &mut metrics, tally.peaks, own)?,
        };
        faults.record(all, own, t.state.epoch, observer);
        observer.epoch(&metrics);
        Ok(t)
    }

    /// The epoch's batches in its shuffled order, with a message where the
    /// loss scaler skipped steps.
    fn train_epoch<const D: usize>(
        &self,
        mut t: Training<B>,
        lr: f64,
        observer: &mut dyn TrainObserver,
    ) -> Result<(Training<B>, EpochTally<B::InnerBackend>), TrainError> {
        let (n, batch_size) = (self.data.train.len(), self.cfg.optim.batch_size);
        let epoch = t.state.epoch;
        let order = shuffled(n, self.cfg.run.seed, epoch);
        let mut tally = EpochTally {
            loss_sum: 0.0,
            unread: None,
            skipped: 0,
            peaks: Peaks::default(),
        };
        let count = n.div_ceil(batch_size);
        for (index, chunk) in order.chunks(batch_size).enumerate() {
            let at = BatchAt { epoch, index, count };
            t = self.batch::<D>(t, chunk, at, lr, &mut tally, observer)?;
        }
        if tally.skipped > 0 {
            let scale = t.scaler.as_ref().map_or(1.0, LossScaler::scale);
            observer.message(&format!(
                "epoch {}: {} steps skipped for inf/NaN gradients (loss scale now {scale})",
                epoch + 1,
                tally.skipped
            ));
        }
        Ok((t, tally))
    }

    /// One step: this replica's share of `chunk` forward and back, the
    /// gradients summed over replicas, the loss read when due, the update.
    fn batch<const D: usize>(
        &self,
        mut t: Training<B>,
        chunk: &[usize],
        at: BatchAt,
        lr: f64,
        tally: &mut EpochTally<B::InnerBackend>,
        observer: &mut dyn TrainObserver,
    ) -> Result<Training<B>, TrainError> {
        let read = at.reads(t.scaler.is_some());
        let sample = at.index < 2 || read;
        let (mut loss, mut grads) = self.gradients::<D>(&t, chunk, sample, &mut tally.peaks)?;
        if let Some(replica) = self.replica {
            (grads, loss) = sum_gradients(grads, &t.model, replica.peer, loss).map_err(collective)?;
        }
        let finite = match tally.add(loss, chunk.len(), read) {
            Some(unread) => {
                let (sum, finite) = self.read_loss(&t, &grads, unread, at, observer)?;
                tally.loss_sum += sum;
                finite
            }
            None => true,
        };
        let apply = match &mut t.scaler {
            Some(scaler) => {
                t.optimizer.set_loss_scale(scaler.scale());
                scaler.update(finite)
            }
            None => true,
        };
        if apply {
            t.model = t.optimizer.step(lr, t.model, grads);
        } else {
            tally.skipped += 1;
        }
        Ok(t)
    }

    /// This replica's share of `chunk` forward and back: its loss (weighted;
    /// left on the device) and its gradients, memory peaks sampled where
    /// `sample` says.
    fn gradients<const D: usize>(
        &self,
        t: &Training<B>,
        chunk: &[usize],
        sample: bool,
        peaks: &mut Peaks,
    ) -> Result<(Tensor<B::InnerBackend, 1>, GradientsParams), TrainError> {
        let (samples, weight) = self.share(chunk);
        let items: Vec<PdeItem> = samples.iter().map(|&i| item(&self.data.train, i)).collect();
        let batch: PdeBatch<B> = self.batcher.batch(items, self.device);
        let input = batch.unflatten::<D>(batch.inputs.clone());
        let (prediction, recompute) = match self.cfg.run.memory {
            MemoryMode::Small => {
                let (prediction, recompute) = t.model.forward_recomputed(input)?;
                (prediction, Some(recompute))
            }
            _ => (t.model.forward(input)?, None),
        };
        let mut loss = self
            .cfg
            .optim
            .loss
            .compute(prediction, batch.unflatten::<D>(batch.outputs.clone()));
        if weight != 1.0 {
            loss = loss * weight;
        }
        let scaled = match &t.scaler {
            Some(scaler) => loss.clone() * scaler.scale(),
            None => loss.clone(),
        };
        let mut sample_peaks = || {
            if sample {
                peaks.sample::<B>(self.device);
            }
        };
        sample_peaks();
        let backward = scaled.backward();
        let grads = match recompute {
            Some(recompute) => recompute.backward(&t.model, backward, &mut sample_peaks)?,
            None => GradientsParams::from_grads(backward, &t.model),
        };
        sample_peaks();
        Ok((loss.inner(), grads))
    }

    /// Reads `unread` (see [`EpochTally::add`]), with the step's gradients'
    /// finiteness where a loss scaler decides on it, and reports the mean;
    /// fails where the loss is not finite. Returns the sum and the finiteness.
    fn read_loss(
        &self,
        t: &Training<B>,
        grads: &GradientsParams,
        (unread, samples, earlier): Unread<B::InnerBackend>,
        at: BatchAt,
        observer: &mut dyn TrainObserver,
    ) -> Result<(f64, bool), TrainError> {
        let poison = t.scaler.as_ref().and_then(|_| gradients_poison(&t.model, grads));
        let (value, finite) = loss_and_finiteness(unread, poison);
        if !value.is_finite() {
            let which = match earlier {
                0 => format!("batch {}", at.index + 1),
                _ => format!("batches {} to {}", at.index + 1 - earlier, at.index + 1),
            };
            return Err(TrainError::Diverged(format!(
                "loss {value} at epoch {}, {which}",
                at.epoch + 1
            )));
        }
        let epochs = self.cfg.optim.epochs;
        observer.batch(at.epoch + 1, epochs, at.index + 1, at.count, value / samples as f64);
        Ok((value, finite))
    }

    /// The end of an epoch with replicas: the root closes it; one exchange
    /// then gives every replica the scheduler's input and the fault counts,
    /// and stops them all where the root failed. Returns every replica's
    /// fault counts.
    fn close_replicated_epoch<const D: usize>(
        &self,
        replica: Replica,
        t: &mut Training<B>,
        metrics: &mut EpochMetrics,
        peaks: Peaks,
        own_faults: FaultCounts,
    ) -> Result<FaultCounts, TrainError> {
        let closed = match self.root {
            true => self.close_epoch::<D>(t, metrics, peaks),
            false => Ok(0.0),
        };
        let own = [
            f64::from(closed.is_err()),
            *closed.as_ref().unwrap_or(&0.0),
            own_faults.detected as f64,
            own_faults.corrected as f64,
        ];
        let all = sum_values::<B::InnerBackend>(&own, replica.peer, self.device_inner())?;
        closed?;
        if all[0] != 0.0 {
            return Err(TrainError::Collective(
                "the replica that evaluates and writes the run's files failed".into(),
            ));
        }
        if !self.root {
            t.state.scheduler.step(all[1]);
            t.state.history.push(metrics.clone());
        }
        let mut faults = own_faults;
        faults.detected = all[2] as u64;
        faults.corrected = all[3] as u64;
        Ok(faults)
    }

    /// The root's end of an epoch: evaluation on every test set (when due),
    /// the schedule's step, and the epoch's checkpoints and metrics line.
    /// Returns what the schedule stepped on.
    fn close_epoch<const D: usize>(
        &self,
        t: &mut Training<B>,
        metrics: &mut EpochMetrics,
        peaks: Peaks,
    ) -> Result<f64, TrainError> {
        let finished = t.state.epoch == self.cfg.optim.epochs;
        if t.state.epoch.is_multiple_of(self.cfg.run.eval_every) || finished {
            metrics.tests = self.evaluate_tests::<D>(&t.model)?;
        }
        memory::release::<B>(self.cfg.run.memory, self.device);
        metrics.memory = peaks.metrics(B::device_memory(self.device));
        let validation = metrics.tests.first().map(|t| t.l2);
        let mut schedule_on = validation.unwrap_or(metrics.train_loss);
        if self.replica.is_some() {
            // What the other replicas receive, through an f32 exchange.
            schedule_on = schedule_on as f32 as f64;
        }
        t.state.scheduler.step(schedule_on);
        t.state.history.push(metrics.clone());
        self.save_checkpoints(t, validation, finished)?;
        append_line(&self.metrics_path, metrics)?;
        Ok(schedule_on)
    }

    /// The model's errors on every test set.
    fn evaluate_tests<const D: usize>(&self, model: &Fno<B>) -> Result<Vec<TestMetrics>, TrainError> {
        let inner = model.valid();
        self.data
            .tests
            .iter()
            .map(|(name, data)| evaluate::<B::InnerBackend, D>(&inner, name, data, self.data, self.device_inner()))
            .collect()
    }

    /// `best` where the validation error is the lowest yet; `last` every
    /// `checkpoint_every` epochs and after the last.
    fn save_checkpoints(&self, t: &mut Training<B>, validation: Option<f64>, finished: bool) -> Result<(), TrainError> {
        if let Some(v) = validation {
            if t.state.best.is_none_or(|best| v < best) {
                t.state.best = Some(v);
                self.save(t, "best")?;
            }
        }
        if t.state.epoch.is_multiple_of(self.cfg.run.checkpoint_every) || finished {
            self.save(t, "last")?;
        }
        Ok(())
    }

    fn save(&self, t: &Training<B>, name: &str) -> Result<(), TrainError> {
        checkpoint::save(self.out_dir, name, &t.model, &t.optimizer, &t.state)
    }

    /// The run's end: `last` saved where the epochs' checkpoints left it
    /// behind (a stopped run), the prediction plot, and the summary.
    fn finish(&self, t: Training<B>, faults: &Faults) -> Result<TrainSummary, TrainError> {
        if self.root && !t.state.epoch.is_multiple_of(self.cfg.run.checkpoint_every) {
            self.save(&t, "last")?;
        }
        let plot = self.plot(&t.model, t.state.epoch)?;
        Ok(TrainSummary {
            out_dir: self.out_dir.to_path_buf(),
            last_checkpoint: checkpoint::model_path(self.out_dir, "last"),
            best_checkpoint: t.state.best.map(|_| checkpoint::model_path(self.out_dir, "best")),
            metrics: self.metrics_path.clone(),
            plot,
            history: t.state.history,
            faults: faults.total::<B>(self.device),
        })
    }

    /// After the last epoch, the root's plot of predictions on the first
    /// test set's first samples (where the configuration asks for one).
    fn plot(&self, model: &Fno<B>, epoch: usize) -> Result<Option<PathBuf>, TrainError> {
        if !(self.root && epoch == self.cfg.optim.epochs && self.cfg.run.plot_samples > 0) {
            return Ok(None);
        }
        let (_, test) = &self.data.tests[0];
        let path = self.out_dir.join("predictions.png");
        let count = self.cfg.run.plot_samples.min(test.len());
        let shown = test.select(0..count, 1)?;
        let predicted = predict::<B::InnerBackend>(&model.valid(), &shown, self.data, self.device_inner())?;
        crate::plot::predictions(&path, &shown, &predicted)?;
        Ok(Some(path))
    }

    /// This replica's samples of a batch and the weight of their loss: all
    /// of them alone; a share with replicas, and where a last batch is
    /// smaller than the replicas and leaves this one none, the batch's first
    /// sample at weight zero, whose gradients (zeros) the exchange needs.
    fn share<'c>(&self, chunk: &'c [usize]) -> (&'c [usize], f64) {
        let Some(replica) = self.replica else {
            return (chunk, 1.0);
        };
        let own = &chunk[shard(chunk.len(), replica.rank, replica.world)];
        match own.is_empty() {
            true => (&chunk[..1], 0.0),
            false => (own, 1.0),
        }
    }

    fn device_inner(&self) -> &burn::tensor::Device<B::InnerBackend> {
        // Autodiff backends share their inner backend's device type.
        self.device
    }

    fn rewrite_metrics(&self, history: &[EpochMetrics]) -> Result<(), TrainError> {
        let mut text = String::new();
        for m in history {
            text.push_str(&serde_json::to_string(m).expect("metrics serialise"));
            text.push('\n');
        }
        checkpoint::write_atomic(&self.metrics_path, text.as_bytes())
    }
}

/// A resumed run must be the same experiment: only the epoch count may grow.
fn check_resumable(saved: &TrainingState, now: &TrainingState) -> Result<(), TrainError> {
    let mut same = saved.config.clone();
    same.optim.epochs = now.config.optim.epochs;
    same.run.matmul_precision = now.config.run.matmul_precision;
    same.model.fno_block_precision = now.config.model.fno_block_precision;
    same.run.devices = now.config.run.devices;
    same.run.memory = now.config.run.memory;
    if same != now.config {
        return Err(TrainError::Checkpoint(
            "the checkpoint was trained with a different configuration (only optim.epochs, \
             run.matmul_precision, model.fno_block_precision, run.devices and run.memory may change on --resume)"
                .into(),
        ));
    }
    if saved.input_normalizer != now.input_normalizer || saved.output_normalizer != now.output_normalizer {
        return Err(TrainError::Checkpoint(
            "the training data differ from the checkpoint's (normaliser statistics changed)".into(),
        ));
    }
    Ok(())
}

fn item(data: &PdeDataset, i: usize) -> PdeItem {
    let (input, output) = data.sample(i);
    PdeItem {
        input: input.to_vec(),
        output: output.to_vec(),
    }
}

/// The epoch's sample order: a Fisher–Yates shuffle seeded by (seed, epoch),
/// so a resumed run sees the batches the uninterrupted one would have.
fn shuffled(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut rng = Rng::new(seed ^ 0x5348_5546_464c_4521, epoch as u64);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (rng.uniform() * (i + 1) as f64) as usize;
        order.swap(i, j.min(i));
    }
    order
}

/// The loss's value and whether `poison` (see [`gradients_poison`]) is finite, in one read.
fn loss_and_finiteness<B: Backend>(loss: Tensor<B, 1>, poison: Option<Tensor<B, 1>>) -> (f64, bool) {
    let Some(poison) = poison else {
        return (scalar(loss), true);
    };
    let dtype = loss.dtype();
    let values = Tensor::cat(vec![loss, poison.cast(dtype)], 0)
        .into_data()
        .convert::<f64>();
    let values = values.to_vec::<f64>().expect("two scalars");
    (values[0], values[1].is_finite())
}

fn append_line(path: &Path, metrics: &EpochMetrics) -> Result<(), TrainError> {
    let io = |e: std::io::Error| TrainError::Io(format!("{}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    writeln!(f, "{}", serde_json::to_string(metrics).expect("metrics serialise")).map_err(io)
}

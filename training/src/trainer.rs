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
use burn::tensor::{Tensor, TensorData};
use fno_datasets::batch::{PdeBatch, PdeBatcher, PdeItem};
use fno_datasets::generate::Rng;
use fno_datasets::PdeDataset;
use fno_kernels::pools::MemoryMode;
use fno_models::{BlockPrecision, Fno};
use fno_ops::{FaultCounts, FaultTolerance, PointwiseBackend, SpectralConvBackend};

use crate::checkpoint::{self, EpochMetrics, NormalizerState, TestMetrics, TrainingState};
use crate::config::TrainConfig;
use crate::data::PreparedData;
use crate::exchange::{broadcast_parameters, collective, shard, sum_gradients, sum_values, Replica};
use crate::loss::Loss;
use crate::memory::{self, Peaks};
use crate::optim::{gradients_poison, FusedAdamW, LossScaler};
use crate::schedule::Scheduler;
use crate::TrainError;

// Kept at their old paths (`fno_training::trainer::RunOptions`, …).
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
    replica: Option<Replica>,
    /// Whether this replica evaluates and writes the run's files.
    root: bool,
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

    fn go<const D: usize>(self, observer: &mut dyn TrainObserver) -> Result<TrainSummary, TrainError> {
        let (cfg, o) = (self.cfg, &self.cfg.optim);
        let (precision, block_precision) = (cfg.run.matmul_precision, cfg.run.precision);
        let checked = self.options.fault_tolerance != FaultTolerance::Off;
        // Read only where something counts (a read is a device sync).
        let faults_before = match checked {
            true => B::fault_counts(self.device),
            false => FaultCounts::default(),
        };
        let mut model = {
            // Backends draw from one generator per process: each replica
            // seeds it and draws its weights alone, so that the root's (which
            // all replicas take) are those one device draws.
            let _alone = INITIALISING.lock().unwrap_or_else(|e| e.into_inner());
            B::seed(self.device, cfg.run.seed);
            match &self.options.init_from {
                Some(bytes) => Fno::<B>::load_checkpoint(bytes, Some(&cfg.model), self.device)?,
                None => Fno::<B>::new(&cfg.model, self.device)?,
            }
        }
        .with_spectral_impl(self.options.spectral_impl)
        .with_fault_tolerance(self.options.fault_tolerance)
        .with_matmul_precision(precision)
        .with_block_precision(block_precision);
        let mut optimizer = FusedAdamW::new(o.eps as f32, o.weight_decay as f32)
            .init::<B, Fno<B>>(o.grad_clip_norm.map(|c| GradientClippingConfig::Norm(c as f32)));
        let mut state = TrainingState {
            epoch: 0,
            scheduler: Scheduler::new(o.schedule.clone(), o.lr),
            best: None,
            input_normalizer: self.data.input_normalizer.as_ref().map(NormalizerState::of),
            output_normalizer: self.data.output_normalizer.as_ref().map(NormalizerState::of),
            history: Vec::new(),
            config: cfg.clone(),
        };
        let last = checkpoint::state_path(self.out_dir, "last");
        if self.options.start == Start::Resume {
            let (saved, model_bytes, optim_bytes) = checkpoint::read_state(&last)?;
            check_resumable(&saved, &state)?;
            (model, optimizer) = checkpoint::restore(model, optimizer, model_bytes, optim_bytes, self.device)?;
            model = model
                .with_spectral_impl(self.options.spectral_impl)
                .with_fault_tolerance(self.options.fault_tolerance)
                .with_matmul_precision(precision)
                .with_block_precision(block_precision);
            observer.message(&format!("resuming {} after epoch {}", last.display(), saved.epoch));
            state = TrainingState {
                config: cfg.clone(),
                ..saved
            };
        }
        if let Some(replica) = self.replica {
            model = broadcast_parameters(model, replica.peer, self.root).map_err(collective)?;
        }
        let mut optimizer = optimizer.with_complex_params(model.complex_params());
        observer.message(&format!("model: {} parameters", model.num_params()));
        if let Some(why) = precision.unavailable_on::<B>(self.device) {
            observer.message(why);
        }
        let metrics_path = self.out_dir.join("metrics.jsonl");
        if self.root {
            self.rewrite_metrics(&metrics_path, &state.history)?;
        }

        let batcher = PdeBatcher::new(&self.data.train)
            .normalized(self.data.input_normalizer.clone(), self.data.output_normalizer.clone());
        let n = self.data.train.len();
        let batches = n.div_ceil(o.batch_size);
        // Half blocks take a dynamic loss scale: their f16 output gradients
        // would lose small values (restarted on --resume).
        let mut scaler = (block_precision == BlockPrecision::Half).then(LossScaler::new);
        let mut run_epochs = 0;
        // Counted since the start: every replica's, and the others' at the last exchange.
        let mut epoch_faults = FaultCounts::default();
        let mut other_faults = FaultCounts::default();
        while state.epoch < o.epochs && self.options.stop_after.is_none_or(|s| run_epochs < s) {
            let epoch = state.epoch;
            let started = Instant::now();
            let lr = state.scheduler.lr;
            let order = shuffled(n, cfg.run.seed, epoch);
            let mut loss_sum = 0.0;
            let mut pending = None;
            let mut skipped = 0;
            let mut peaks = Peaks::default();
            for (b, chunk) in order.chunks(o.batch_size).enumerate() {
                let read = scaler.is_some() || (b + 1) % LOSS_READS_EVERY == 0 || b + 1 == batches;
                let (samples, weight) = self.share(chunk);
                let items: Vec<PdeItem> = samples.iter().map(|&i| item(&self.data.train, i)).collect();
                let batch: PdeBatch<B> = batcher.batch(items, self.device);
                let input = batch.unflatten::<D>(batch.inputs.clone());
                let (prediction, recompute) = match cfg.run.memory {
                    MemoryMode::Small => {
                        let (prediction, recompute) = model.forward_recomputed(input)?;
                        (prediction, Some(recompute))
                    }
                    _ => (model.forward(input)?, None),
                };
                let mut loss = o.loss.compute(prediction, batch.unflatten::<D>(batch.outputs.clone()));
                if weight != 1.0 {
                    loss = loss * weight;
                }
                let scaled = match &scaler {
                    Some(scaler) => loss.clone() * scaler.scale(),
                    None => loss.clone(),
                };
                let sample = b < 2 || read;
                if sample {
                    peaks.sample::<B>(self.device);
                }
                let mut sample_peaks = || {
                    if sample {
                        peaks.sample::<B>(self.device);
                    }
                };
                let backward = scaled.backward();
                let mut grads = match recompute {
                    Some(recompute) => recompute.backward(&model, backward, &mut sample_peaks)?,
                    None => GradientsParams::from_grads(backward, &model),
                };
                sample_peaks();
                let mut loss = loss.inner();
                if let Some(replica) = self.replica {
                    (grads, loss) = sum_gradients(grads, &model, replica.peer, loss).map_err(collective)?;
                }
                // The losses stay on the device, summed, until a read: every
                // `LOSS_READS_EVERY` steps and at the epoch's end, since a read
                // waits for the device, which then idles while the next step is
                // launched. The loss scaler decides on each step's gradients:
                // their finiteness travels with the loss, read every step.
                let (unread, samples, earlier) = match pending.take() {
                    Some((sum, samples, earlier)) => (sum + loss, samples + chunk.len(), earlier + 1),
                    None => (loss, chunk.len(), 0),
                };
                let finite = if read {
                    let poison = scaler.as_ref().and_then(|_| gradients_poison(&model, &grads));
                    let (value, finite) = loss_and_finiteness(unread, poison);
                    if !value.is_finite() {
                        let which = match earlier {
                            0 => format!("batch {}", b + 1),
                            _ => format!("batches {} to {}", b + 1 - earlier, b + 1),
                        };
                        return Err(TrainError::Diverged(format!(
                            "loss {value} at epoch {}, {which}",
                            epoch + 1
                        )));
                    }
                    loss_sum += value;
                    observer.batch(epoch + 1, o.epochs, b + 1, batches, value / samples as f64);
                    finite
                } else {
                    pending = Some((unread, samples, earlier));
                    true
                };
                let apply = match &mut scaler {
                    Some(scaler) => {
                        optimizer.set_loss_scale(scaler.scale());
                        scaler.update(finite)
                    }
                    None => true,
                };
                if apply {
                    model = optimizer.step(lr, model, grads);
                } else {
                    skipped += 1;
                }
            }
            if skipped > 0 {
                let scale = scaler.as_ref().map_or(1.0, LossScaler::scale);
                observer.message(&format!(
                    "epoch {}: {skipped} steps skipped for inf/NaN gradients (loss scale now {scale})",
                    epoch + 1
                ));
            }
            memory::release::<B>(cfg.run.memory, self.device);
            state.epoch += 1;
            let mut metrics = EpochMetrics {
                epoch: state.epoch,
                lr,
                train_loss: loss_sum / n as f64,
                seconds: started.elapsed().as_secs_f64(),
                tests: Vec::new(),
                memory: None,
            };
            let own_faults = match checked {
                true => B::fault_counts(self.device) - faults_before,
                false => FaultCounts::default(),
            };
            let mut faults = own_faults;
            match self.replica {
                None => {
                    self.close_epoch::<D, _>(&model, &optimizer, &mut state, &mut metrics, peaks, &metrics_path)?;
                }
                Some(replica) => {
                    // The root evaluates and writes; one exchange then gives
                    // every replica the scheduler's input and the fault
                    // counts, and stops them all where the root failed.
                    let closed = match self.root {
                        true => {
                            self.close_epoch::<D, _>(&model, &optimizer, &mut state, &mut metrics, peaks, &metrics_path)
                        }
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
                        state.scheduler.step(all[1]);
                        state.history.push(metrics.clone());
                    }
                    faults.detected = all[2] as u64;
                    faults.corrected = all[3] as u64;
                    other_faults = faults - own_faults;
                }
            }
            if checked {
                if faults.detected > epoch_faults.detected {
                    observer.message(&format!(
                        "epoch {}: {} faults detected by checksums, {} corrected",
                        state.epoch,
                        faults.detected - epoch_faults.detected,
                        faults.corrected - epoch_faults.corrected
                    ));
                }
                epoch_faults = faults;
            }
            observer.epoch(&metrics);
            run_epochs += 1;
        }
        if self.root && !state.epoch.is_multiple_of(cfg.run.checkpoint_every) {
            checkpoint::save(self.out_dir, "last", &model, &optimizer, &state)?;
        }
        let plot = if self.root && state.epoch == o.epochs && cfg.run.plot_samples > 0 {
            let (_, test) = &self.data.tests[0];
            let path = self.out_dir.join("predictions.png");
            let count = cfg.run.plot_samples.min(test.len());
            let shown = test.select(0..count, 1)?;
            let predicted = predict::<B::InnerBackend>(&model.valid(), &shown, self.data, self.device_inner())?;
            crate::plot::predictions(&path, &shown, &predicted)?;
            Some(path)
        } else {
            None
        };
        Ok(TrainSummary {
            out_dir: self.out_dir.to_path_buf(),
            last_checkpoint: checkpoint::model_path(self.out_dir, "last"),
            best_checkpoint: state.best.map(|_| checkpoint::model_path(self.out_dir, "best")),
            metrics: metrics_path,
            plot,
            history: state.history,
            faults: checked.then(|| B::fault_counts(self.device) - faults_before + other_faults),
        })
    }

    /// The root's end of an epoch: evaluation on every test set (when due),
    /// the schedule's step, and the epoch's checkpoints and metrics line.
    /// Returns what the schedule stepped on.
    fn close_epoch<const D: usize, O: Optimizer<Fno<B>, B>>(
        &self,
        model: &Fno<B>,
        optimizer: &O,
        state: &mut TrainingState,
        metrics: &mut EpochMetrics,
        peaks: Peaks,
        metrics_path: &Path,
    ) -> Result<f64, TrainError> {
        let finished = state.epoch == self.cfg.optim.epochs;
        if state.epoch.is_multiple_of(self.cfg.run.eval_every) || finished {
            let inner = model.valid();
            for (name, data) in &self.data.tests {
                metrics.tests.push(evaluate::<B::InnerBackend, D>(
                    &inner,
                    name,
                    data,
                    self.data,
                    self.device_inner(),
                )?);
            }
        }
        memory::release::<B>(self.cfg.run.memory, self.device);
        metrics.memory = peaks.metrics(B::device_memory(self.device));
        let validation = metrics.tests.first().map(|t| t.l2);
        let mut schedule_on = validation.unwrap_or(metrics.train_loss);
        if self.replica.is_some() {
            // What the other replicas receive, through an f32 exchange.
            schedule_on = schedule_on as f32 as f64;
        }
        state.scheduler.step(schedule_on);
        state.history.push(metrics.clone());
        if let Some(v) = validation {
            if state.best.is_none_or(|best| v < best) {
                state.best = Some(v);
                checkpoint::save(self.out_dir, "best", model, optimizer, state)?;
            }
        }
        if state.epoch.is_multiple_of(self.cfg.run.checkpoint_every) || finished {
            checkpoint::save(self.out_dir, "last", model, optimizer, state)?;
        }
        append_line(metrics_path, metrics)?;
        Ok(schedule_on)
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

    fn rewrite_metrics(&self, path: &Path, history: &[EpochMetrics]) -> Result<(), TrainError> {
        let mut text = String::new();
        for m in history {
            text.push_str(&serde_json::to_string(m).expect("metrics serialise"));
            text.push('\n');
        }
        checkpoint::write_atomic(path, text.as_bytes())
    }
}

/// A resumed run must be the same experiment: only the epoch count may grow.
fn check_resumable(saved: &TrainingState, now: &TrainingState) -> Result<(), TrainError> {
    let mut same = saved.config.clone();
    same.optim.epochs = now.config.optim.epochs;
    same.run.matmul_precision = now.config.run.matmul_precision;
    same.run.precision = now.config.run.precision;
    same.run.devices = now.config.run.devices;
    same.run.memory = now.config.run.memory;
    if same != now.config {
        return Err(TrainError::Checkpoint(
            "the checkpoint was trained with a different configuration (only optim.epochs, \
             run.matmul_precision, run.precision, run.devices and run.memory may change on --resume)"
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

fn scalar<B: Backend>(t: Tensor<B, 1>) -> f64 {
    t.into_data().convert::<f64>().to_vec::<f64>().expect("a scalar")[0]
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

/// Predictions for every sample of `data`, de-normalised: `[N, Cout, *grid]`.
pub fn predict<B: SpectralConvBackend>(
    model: &Fno<B>,
    data: &PdeDataset,
    prepared: &PreparedData,
    device: &B::Device,
) -> Result<fno_datasets::Array, TrainError> {
    crate::inference::predict(
        model,
        &data.inputs,
        prepared.input_normalizer.as_ref(),
        prepared.output_normalizer.as_ref(),
        EVAL_BATCH,
        device,
        |_, _| {},
    )
}

/// Samples per forward pass in evaluation.
const EVAL_BATCH: usize = 50;

/// The errors per sample of the model's predictions on `data`.
pub fn evaluate<B: SpectralConvBackend, const D: usize>(
    model: &Fno<B>,
    name: &str,
    data: &PdeDataset,
    prepared: &PreparedData,
    device: &B::Device,
) -> Result<TestMetrics, TrainError> {
    let predicted = predict(model, data, prepared, device)?;
    let (l2, h1) = relative_errors::<B, D>(&predicted, &data.outputs, device);
    let l2_normalized = match &prepared.output_normalizer {
        Some(n) => {
            let (mut p, mut t) = (predicted, data.outputs.clone());
            n.encode(&mut p)?;
            n.encode(&mut t)?;
            relative_errors::<B, D>(&p, &t, device).0
        }
        None => l2,
    };
    Ok(TestMetrics {
        name: name.to_string(),
        l2,
        h1,
        l2_normalized,
    })
}

/// Relative L2 and H1 per sample of `predicted` against `truth`.
pub fn relative_errors<B: PointwiseBackend, const D: usize>(
    predicted: &fno_datasets::Array,
    truth: &fno_datasets::Array,
    device: &B::Device,
) -> (f64, f64) {
    let tensor = |a: &fno_datasets::Array| {
        let shape: [usize; D] = a.shape.clone().try_into().expect("a D-dim array");
        Tensor::<B, D>::from_data(TensorData::new(a.data.clone(), shape), device)
    };
    let n = truth.shape[0] as f64;
    let (p, t) = (tensor(predicted), tensor(truth));
    (
        scalar(Loss::L2.compute(p.clone(), t.clone())) / n,
        scalar(Loss::H1.compute(p, t)) / n,
    )
}

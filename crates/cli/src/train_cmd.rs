//! `fno train` and `fno eval`.

use std::path::{Path, PathBuf};

use burn::backend::Autodiff;
use clap::Args;
use fno_datasets::npy::{self, DType, NpyArray};
use fno_datasets::output::{check_output_path, refuse_same_file};
use fno_kernels::backend::Backend;
use fno_models::ModelSettings;
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_training::checkpoint::EpochMetrics;
use fno_training::config::{DataSource, DeviceCount};
use fno_training::data::{load_source, DataProgress};
use fno_training::inference::training_state;
use fno_training::trainer::relative_errors;
use fno_training::{
    check_start, run_files, train_data_parallel, Predictor, PreparedData, Replicas, RunOptions, Start, TrainConfig,
    TrainObserver, TrainSummary,
};

use crate::args::{report_faults, run_on, with_settings, BackendJob, ModelDevice, Pools, SPECTRAL_UNITS};
use crate::progress::Progress;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct TrainArgs {
    /// Training configuration (TOML; see configs/). Default: neuraloperator's
    /// Darcy settings on Darcy 16² data generated on first use.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    device: ModelDevice,
    /// Data-parallel training: one replica per device, a count or `all`,
    /// the batch split among them (overrides run.devices; on the cpu
    /// backend the replicas share the CPU).
    #[arg(long, value_name = "N|all")]
    devices: Option<DeviceCount>,
    /// Continue the run in OUT (from OUT/last.state) where it stopped.
    #[arg(long, conflicts_with = "overwrite")]
    resume: bool,
    /// Start again in an OUT that holds an earlier run, deleting its files.
    #[arg(long)]
    overwrite: bool,
    /// Fine-tune: start from this checkpoint's weights (anything `fno infer
    /// --checkpoint` reads); its architecture replaces the configuration's
    /// [model], the rest of the configuration stays.
    #[arg(long, value_name = "CHECKPOINT", conflicts_with = "resume")]
    init_from: Option<PathBuf>,
    #[command(flatten)]
    shift: crate::model_files::ShiftArg,
    /// Override the configuration's epoch count.
    #[arg(long)]
    epochs: Option<usize>,
    /// Override the configuration's output directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stop after this many epochs of this invocation (resume later).
    #[arg(long, hide = true)]
    stop_after: Option<usize>,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct EvalArgs {
    /// A checkpoint written by `fno train` (.safetensors).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Data set file (any format `fno data info` reads).
    #[arg(long)]
    data: PathBuf,
    #[arg(long)]
    input_key: Option<String>,
    #[arg(long)]
    output_key: Option<String>,
    /// Evaluate the first N samples.
    #[arg(long)]
    samples: Option<usize>,
    #[command(flatten)]
    device: ModelDevice,
    /// Samples per forward pass.
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
    /// Also write the de-normalised predictions that were scored (.npy, float32).
    #[arg(long)]
    predictions: Option<PathBuf>,
}

/// Progress bars for generation and batches on a terminal; a line for each
/// generated set and each epoch.
struct Console {
    bar: Option<(String, Progress)>,
}

impl Console {
    /// The bar labelled `label`, started anew when the label changes.
    fn bar(&mut self, label: String, unit: &'static str, total: usize) -> &Progress {
        if self.bar.as_ref().is_none_or(|b| b.0 != label) {
            self.bar = Some((label.clone(), Progress::new(label, unit, total)));
        }
        &self.bar.as_ref().expect("set above").1
    }
}

impl DataProgress for Console {
    fn generating(&mut self, label: &str, done: usize, total: usize) {
        self.bar(format!("generating {label}"), "samples", total)
            .update(done, "");
        if done >= total {
            self.bar.take().expect("a bar").1.finish();
        }
    }

    fn message(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

impl TrainObserver for Console {
    fn batch(&mut self, epoch: usize, epochs: usize, done: usize, total: usize, loss: f64) {
        self.bar(format!("epoch {epoch}/{epochs}"), "batches", total)
            .update(done, &format!(", loss {loss:.4}"));
    }

    fn epoch(&mut self, m: &EpochMetrics) {
        let tests: String = m
            .tests
            .iter()
            .map(|t| format!("  {}: L2 {:.4} H1 {:.4}", t.name, t.l2, t.h1))
            .collect();
        let memory = m
            .memory
            .map(|mem| {
                format!(
                    "  GPU MiB peak {:.0}/{:.0}, end {:.0}/{:.0} (in use/held)",
                    mem.peak_in_use_mib.unwrap_or(mem.in_use_mib),
                    mem.peak_reserved_mib.unwrap_or(mem.reserved_mib),
                    mem.in_use_mib,
                    mem.reserved_mib
                )
            })
            .unwrap_or_default();
        let line = format!(
            "epoch {:>3}  train loss {:.4}  lr {:.2e}  {:.1} s{tests}{memory}",
            m.epoch, m.train_loss, m.lr, m.seconds
        );
        match self.bar.take() {
            Some((_, bar)) => bar.finish_with(&line),
            None => eprintln!("{line}"),
        }
    }

    fn message(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

pub fn run_train(args: TrainArgs) -> Result<(), String> {
    let mut cfg = match &args.config {
        Some(path) => TrainConfig::from_file(path).map_err(|e| e.to_string())?,
        None => TrainConfig::darcy_default(),
    };
    if let Some(epochs) = args.epochs {
        cfg.optim.epochs = epochs;
    }
    if let Some(out) = &args.out {
        cfg.run.out_dir = out.clone();
    }
    if let Some(precision) = args.device.matmul_precision {
        cfg.run.matmul_precision = precision;
    }
    if let Some(devices) = args.devices {
        cfg.run.devices = devices;
    }
    if let Some(memory) = args.device.memory {
        cfg.run.memory = memory;
    }
    let init_from = match &args.init_from {
        Some(path) => {
            let file = crate::model_files::read_checkpoint(path, None)?;
            let label = file.path.display().to_string();
            let (model, _) = fno_models::checkpoint::checked_tensors(&file.bytes, file.config.as_ref())
                .map_err(|e| format!("--init-from {label}: {e}"))?;
            eprintln!("starting from the weights of {label}");
            cfg.model = model;
            Some(file.bytes)
        }
        None => None,
    };
    args.shift.apply(&mut cfg.model);
    if let Some(precision) = args.device.precision {
        cfg.model.fno_block_precision = precision;
    }
    cfg.validate().map_err(|e| format!("configuration: {e}"))?;
    let start = match (args.resume, args.overwrite) {
        (true, _) => Start::Resume,
        (false, true) => Start::Overwrite,
        (false, false) => Start::Fresh,
    };
    // Refused before any data are generated.
    check_start(&cfg.run.out_dir, start).map_err(|e| e.to_string())?;
    let data_files = [&cfg.data.train]
        .into_iter()
        .chain(&cfg.data.tests)
        .filter_map(|s| s.file.as_deref());
    let inputs: Vec<(&str, &Path)> = (args.config.iter().map(|c| ("--config", c.as_path())))
        .chain(data_files.map(|f| ("the data file", f)))
        .collect();
    for file in run_files(&cfg.run.out_dir) {
        refuse_same_file("the run's file", &file, &inputs)?;
    }
    let (backend, imp) = args.device.resolve()?;
    if cfg.run.devices != DeviceCount::Count(1) {
        let available = run_on(backend, args.device.burn_fusion, None, CountDevices(backend))?;
        replica_count(cfg.run.devices, backend, available)?;
    }
    let cache = cfg
        .run
        .out_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("cache");
    let mut console = Console { bar: None };
    let data = PreparedData::prepare(&cfg, &cache, &mut console).map_err(|e| e.to_string())?;
    let points = data.train.grid().iter().product();
    let batch = cfg.optim.batch_size.min(data.train.len());
    if backend == Backend::Cpu {
        let need = crate::memory::activation_bytes(&cfg.model, batch, points, true);
        crate::memory::check_fits(&format!("training in batches of {batch}"), need)?;
    }
    let pools = Pools {
        mode: cfg.run.memory,
        widest: crate::memory::widest_activation_bytes(&cfg.model, batch, points),
    };
    eprintln!(
        "training a {}-D FNO on {} samples {:?} ({}, {imp:?}, {:?} 1×1 products, {} spectral blocks); {} epochs, batch {}, {} loss",
        cfg.model.dims(),
        data.train.len(),
        data.train.grid(),
        crate::args::backend_label(backend),
        cfg.run.matmul_precision,
        cfg.model.fno_block_precision,
        cfg.optim.epochs,
        cfg.optim.batch_size,
        cfg.optim.loss.name()
    );
    let job = TrainJob {
        cfg: &cfg,
        data: &data,
        options: RunOptions {
            spectral_impl: imp,
            fault_tolerance: args.device.fault_tolerance,
            fft_planning: args.device.fft_planning,
            start,
            stop_after: args.stop_after,
            init_from,
        },
        backend,
        console,
    };
    let summary = run_on(backend, args.device.burn_fusion, Some(pools), job)?;
    if let Some(counts) = summary.faults {
        report_faults(args.device.fault_tolerance, counts, SPECTRAL_UNITS)
            .map_err(|e| format!("{e}; the checkpoints may carry their effect"))?;
    }
    println!("checkpoint: {}", summary.last_checkpoint.display());
    if let Some(best) = &summary.best_checkpoint {
        println!("best checkpoint: {}", best.display());
    }
    println!("metrics: {}", summary.metrics.display());
    if let Some(plot) = &summary.plot {
        println!("predictions plot: {}", plot.display());
    }
    Ok(())
}

struct TrainJob<'a> {
    cfg: &'a TrainConfig,
    data: &'a PreparedData,
    options: RunOptions,
    backend: Backend,
    console: Console,
}

impl BackendJob for TrainJob<'_> {
    type Output = TrainSummary;

    fn run<B: SpectralConvBackend>(mut self, device: &B::Device) -> Result<TrainSummary, String> {
        let devices = replica_devices::<B>(device, self.cfg.run.devices, self.backend)?;
        if devices.len() > 1 {
            eprintln!(
                "data-parallel: {} replicas, each taking up to {} samples of every batch of {}",
                devices.len(),
                self.cfg.optim.batch_size.div_ceil(devices.len()),
                self.cfg.optim.batch_size
            );
        }
        let replicas = Replicas { devices };
        train_data_parallel::<Autodiff<B>>(self.cfg, self.data, &self.options, &replicas, &mut self.console)
            .map_err(|e| e.to_string())
    }
}

/// Replicas a core of the cpu backend may share (more only add copies of the model).
const CPU_REPLICAS_PER_CORE: usize = 4;

/// How many replicas `count` asks for, where the backend has `available`
/// devices (the CPU backend: its cores, which its replicas share).
fn replica_count(count: DeviceCount, backend: Backend, available: usize) -> Result<usize, String> {
    let n = match count {
        DeviceCount::Count(n) => n,
        DeviceCount::All => available.max(1),
    };
    match backend {
        _ if n <= 1 => Ok(1),
        Backend::Cpu if n > CPU_REPLICAS_PER_CORE * available => Err(format!(
            "--devices {n}: the cpu backend's replicas share this machine's {available} cores; use at most {}",
            CPU_REPLICAS_PER_CORE * available
        )),
        Backend::Cpu => Ok(n),
        _ if n > available => Err(format!(
            "--devices {n}: this backend has {available} device(s) to train on"
        )),
        Backend::Cuda if !fno_kernels::backend::nccl_available() => Err(format!(
            "--devices {n}: tensors move between CUDA devices through NCCL, and libnccl.so was not found \
             (install NCCL, or link libnccl.so to its libnccl.so.2 in a directory on LD_LIBRARY_PATH)"
        )),
        _ => Ok(n),
    }
}

/// The devices a backend has to train on: the CPU's cores, or the GPUs of its first kind.
struct CountDevices(Backend);

impl BackendJob for CountDevices {
    type Output = usize;

    fn run<B: SpectralConvBackend>(self, _device: &B::Device) -> Result<usize, String> {
        Ok(devices_of::<B>(self.0))
    }
}

/// The devices `backend` (whose Burn type is `B`) has to train on.
fn devices_of<B: burn::tensor::backend::Backend>(backend: Backend) -> usize {
    match backend {
        Backend::Cpu => std::thread::available_parallelism().map_or(1, |n| n.get()),
        _ => B::device_count(0),
    }
}

/// The devices of `count` replicas on the backend of `device` (its default):
/// one replica on it, or devices 0 to n-1 of the backend's first kind
/// (CUDA's devices, wgpu's discrete GPUs); the CPU backend's replicas share it.
fn replica_devices<B: burn::tensor::backend::Backend>(
    device: &B::Device,
    count: DeviceCount,
    backend: Backend,
) -> Result<Vec<B::Device>, String> {
    use burn::tensor::backend::{Device, DeviceId};
    Ok(match replica_count(count, backend, devices_of::<B>(backend))? {
        1 => vec![device.clone()],
        n if backend == Backend::Cpu => vec![device.clone(); n],
        n => (0..n).map(|i| B::Device::from_id(DeviceId::new(0, i as u16))).collect(),
    })
}

pub fn run_eval(args: EvalArgs) -> Result<(), String> {
    if args.batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    if let Some(path) = &args.predictions {
        check_output_path("--predictions", path, &["npy"])?;
        let inputs = [
            ("--checkpoint", args.checkpoint.as_path()),
            ("--data", args.data.as_path()),
        ];
        refuse_same_file("--predictions", path, &inputs)?;
    }
    let bytes = std::fs::read(&args.checkpoint).map_err(|e| format!("{}: {e}", args.checkpoint.display()))?;
    let label = args.checkpoint.display().to_string();
    if training_state(&bytes).map_err(|e| format!("{label}: {e}"))?.is_none() {
        return Err(format!(
            "{label}: not a checkpoint of `fno train` (no training metadata)"
        ));
    }
    let source = DataSource {
        name: None,
        file: Some(args.data.clone()),
        generate: None,
        samples: args.samples,
        stride: None,
        input_key: args.input_key.clone(),
        output_key: args.output_key.clone(),
    };
    let mut console = Console { bar: None };
    let data = load_source(&source, Path::new("."), &mut console).map_err(|e| e.to_string())?;
    let (backend, imp) = args.device.resolve()?;
    let job = EvalJob {
        bytes: &bytes,
        data: &data,
        imp,
        settings: args.device.settings(),
        batch_size: args.batch_size,
        label: &label,
    };
    let (predicted, l2, h1) = run_on(backend, args.device.burn_fusion, Some(args.device.memory.into()), job)?;
    if let Some(path) = &args.predictions {
        npy::write(path, &NpyArray::new(predicted.shape, DType::F32, predicted.data)).map_err(|e| e.to_string())?;
    }
    println!(
        "{} on {} ({} samples, grid {:?}): relative L2 {l2:.5}, relative H1 {h1:.5}",
        label,
        args.data.display(),
        data.len(),
        data.grid()
    );
    Ok(())
}

struct EvalJob<'a> {
    bytes: &'a [u8],
    data: &'a fno_datasets::PdeDataset,
    imp: SpectralImpl,
    settings: ModelSettings,
    batch_size: usize,
    label: &'a str,
}

impl BackendJob for EvalJob<'_> {
    /// The de-normalised predictions and their relative L2 and H1 errors.
    type Output = (fno_datasets::Array, f64, f64);

    fn run<B: SpectralConvBackend>(self, device: &B::Device) -> Result<Self::Output, String> {
        let mut predictor =
            Predictor::<B>::load(self.bytes, None, device).map_err(|e| format!("{}: {e}", self.label))?;
        predictor.model = with_settings::<B>(predictor.model.with_spectral_impl(self.imp), self.settings, device);
        let cfg = predictor.model.config();
        if self.data.inputs.shape[1] != cfg.in_channels || self.data.grid().len() != cfg.dims() {
            return Err(format!(
                "the data's inputs {:?} do not fit the checkpoint's {}-D model with {} input channels",
                self.data.inputs.shape,
                cfg.dims(),
                cfg.in_channels
            ));
        }
        let predicted = predictor
            .predict(&self.data.inputs, self.batch_size, device, |_, _| {})
            .map_err(|e| e.to_string())?;
        report_faults(self.settings.fault_tolerance, B::fault_counts(device), SPECTRAL_UNITS)
            .map_err(|e| format!("{e}; no errors reported"))?;
        let (l2, h1) = match cfg.dims() {
            1 => relative_errors::<B, 3>(&predicted, &self.data.outputs, device),
            2 => relative_errors::<B, 4>(&predicted, &self.data.outputs, device),
            _ => relative_errors::<B, 5>(&predicted, &self.data.outputs, device),
        };
        Ok((predicted, l2, h1))
    }
}

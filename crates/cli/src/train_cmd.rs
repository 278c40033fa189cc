//! `fno train` and `fno eval`.

use std::path::{Path, PathBuf};

use burn::backend::{Autodiff, NdArray};
use clap::Args;
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fft::Planning;
use fno_models::Fno;
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_training::checkpoint::{EpochMetrics, TrainingState};
use fno_training::config::DataSource;
use fno_training::data::{load_source, DataProgress};
use fno_training::trainer::{predict_with, relative_errors};
use fno_training::{train, PreparedData, RunOptions, TrainConfig, TrainObserver};

use crate::progress::Progress;

#[cfg(feature = "cuda")]
type Cuda = burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>;
#[cfg(feature = "wgpu")]
type Wgpu = burn_cubecl::CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>;

#[derive(Args, Debug)]
pub struct TrainArgs {
    /// Training configuration (TOML; see configs/). Default: neuraloperator's
    /// Darcy settings on Darcy 16² data generated on first use.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Spectral convolution: reference, unfused or fused. Default: unfused on
    /// a GPU, reference on the CPU.
    #[arg(long = "impl")]
    imp: Option<String>,
    /// auto (CUDA, then a real wgpu GPU, then the CPU), cuda, wgpu or cpu.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// How the unfused kernel path lowers its FFT plans: rules, or measured
    /// (times each plan's candidate lowerings on the device once per shape
    /// and keeps the fastest; same results).
    #[arg(long, default_value = "rules")]
    fft_planning: String,
    /// Continue from OUT/last.state where a run stopped.
    #[arg(long)]
    resume: bool,
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
    #[arg(long = "impl")]
    imp: Option<String>,
    #[arg(long, default_value = "auto")]
    backend: String,
}

fn parse_impl(name: Option<&str>, backend: Backend) -> Result<SpectralImpl, String> {
    match name {
        None if backend == Backend::Cpu => Ok(SpectralImpl::Reference),
        None => Ok(SpectralImpl::Unfused),
        Some(n) => n.parse::<SpectralImpl>().map_err(|e| format!("--impl: {e}")),
    }
}

pub(crate) fn parse_planning(name: &str) -> Result<Planning, String> {
    name.parse::<Planning>().map_err(|e| format!("--fft-planning: {e}"))
}

/// Progress bars for generation and batches, one summary line per epoch.
struct Console {
    bar: Option<(String, Progress)>,
}

impl DataProgress for Console {
    fn generating(&mut self, label: &str, done: usize, total: usize) {
        let bar = self
            .bar
            .get_or_insert_with(|| (label.into(), Progress::new(format!("generating {label}"), "samples")));
        if bar.0 != label {
            *bar = (label.into(), Progress::new(format!("generating {label}"), "samples"));
        }
        bar.1.update(done, total, "");
    }

    fn message(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

impl TrainObserver for Console {
    fn batch(&mut self, epoch: usize, epochs: usize, done: usize, total: usize, loss: f64) {
        let label = format!("epoch {epoch}/{epochs}");
        if self.bar.as_ref().is_none_or(|b| b.0 != label) {
            self.bar = Some((label.clone(), Progress::new(label.clone(), "batches")));
        }
        let bar = &mut self.bar.as_mut().expect("set above").1;
        // The bar's own newline comes with the epoch line instead.
        if done < total {
            bar.update(done, total, &format!(", loss {loss:.4}"));
        }
    }

    fn epoch(&mut self, m: &EpochMetrics) {
        let tests: String = m
            .tests
            .iter()
            .map(|t| format!("  {}: L2 {:.4} H1 {:.4}", t.name, t.l2, t.h1))
            .collect();
        eprintln!(
            "\repoch {:>3}  train loss {:.4}  lr {:.2e}  {:.1} s{tests}{}",
            m.epoch,
            m.train_loss,
            m.lr,
            m.seconds,
            " ".repeat(30)
        );
        self.bar = None;
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
    cfg.validate().map_err(|e| format!("configuration: {e}"))?;
    let backend = args.backend.parse::<BackendChoice>()?.resolve()?;
    let imp = parse_impl(args.imp.as_deref(), backend)?;
    fno_ops::set_fft_planning(parse_planning(&args.fft_planning)?);
    let cache = cfg
        .run
        .out_dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("cache");
    let mut console = Console { bar: None };
    let data = PreparedData::prepare(&cfg, &cache, &mut console).map_err(|e| e.to_string())?;
    eprintln!(
        "training a {}-D FNO on {} samples {:?} ({backend}, {imp:?}); {} epochs, batch {}, {} loss",
        cfg.model.dims(),
        data.train.len(),
        data.train.grid(),
        cfg.optim.epochs,
        cfg.optim.batch_size,
        cfg.optim.loss.name()
    );
    let options = RunOptions {
        spectral_impl: imp,
        resume: args.resume,
        stop_after: args.stop_after,
    };
    let summary = match backend {
        Backend::Cpu => train::<Autodiff<NdArray>>(&cfg, &data, &options, &Default::default(), &mut console),
        #[cfg(feature = "cuda")]
        Backend::Cuda => train::<Autodiff<Cuda>>(&cfg, &data, &options, &Default::default(), &mut console),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => train::<Autodiff<Wgpu>>(&cfg, &data, &options, &Default::default(), &mut console),
        #[allow(unreachable_patterns)]
        other => return Err(format!("this build has no {other} backend")),
    }
    .map_err(|e| e.to_string())?;
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

pub fn run_eval(args: EvalArgs) -> Result<(), String> {
    let bytes = std::fs::read(&args.checkpoint).map_err(|e| format!("{}: {e}", args.checkpoint.display()))?;
    let label = args.checkpoint.display().to_string();
    let file = fno_models::checkpoint::SafeTensorsFile::parse(&bytes).map_err(|e| format!("{label}: {e}"))?;
    let state: TrainingState = file
        .metadata
        .get("training")
        .ok_or_else(|| format!("{label}: not a checkpoint of `fno train` (no training metadata)"))
        .and_then(|json| serde_json::from_str(json).map_err(|e| format!("{label}: training metadata: {e}")))?;
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
    let backend = args.backend.parse::<BackendChoice>()?.resolve()?;
    let imp = parse_impl(args.imp.as_deref(), backend)?;
    let job = EvalJob {
        bytes: &bytes,
        state: &state,
        data: &data,
        imp,
        label: &label,
    };
    let (l2, h1) = match backend {
        Backend::Cpu => job.run::<NdArray>(&Default::default()),
        #[cfg(feature = "cuda")]
        Backend::Cuda => job.run::<Cuda>(&Default::default()),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => job.run::<Wgpu>(&Default::default()),
        #[allow(unreachable_patterns)]
        other => return Err(format!("this build has no {other} backend")),
    }?;
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
    state: &'a TrainingState,
    data: &'a fno_datasets::PdeDataset,
    imp: SpectralImpl,
    label: &'a str,
}

impl EvalJob<'_> {
    fn run<B: SpectralConvBackend>(&self, device: &B::Device) -> Result<(f64, f64), String> {
        let model = Fno::<B>::load_safetensors(self.bytes, None, device)
            .map_err(|e| format!("{}: {e}", self.label))?
            .with_spectral_impl(self.imp);
        let cfg = model.config();
        if self.data.inputs.shape[1] != cfg.in_channels || self.data.grid().len() != cfg.dims() {
            return Err(format!(
                "the data's inputs {:?} do not fit the checkpoint's {}-D model with {} input channels",
                self.data.inputs.shape,
                cfg.dims(),
                cfg.in_channels
            ));
        }
        let normalizer = |n: &Option<fno_training::checkpoint::NormalizerState>| {
            n.as_ref()
                .map(|n| n.normalizer())
                .transpose()
                .map_err(|e| e.to_string())
        };
        let (input, output) = (
            normalizer(&self.state.input_normalizer)?,
            normalizer(&self.state.output_normalizer)?,
        );
        let predicted =
            predict_with(&model, self.data, input.as_ref(), output.as_ref(), device).map_err(|e| e.to_string())?;
        Ok(match cfg.dims() {
            1 => relative_errors::<B, 3>(&predicted, &self.data.outputs, device),
            2 => relative_errors::<B, 4>(&predicted, &self.data.outputs, device),
            _ => relative_errors::<B, 5>(&predicted, &self.data.outputs, device),
        })
    }
}

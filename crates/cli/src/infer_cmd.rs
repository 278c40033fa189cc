//! `fno infer`: an FNO checkpoint (ours or neuraloperator's) applied to
//! the inputs of a data file. Checkpoints of `fno train` predict in the data's
//! units (their normalisers applied), the values `fno eval` scores.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use fno_datasets::npy::{self, DType, NpyArray};
use fno_datasets::output::{check_output_path, refuse_same_file};
use fno_datasets::Array;
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fault::FaultTolerance;
use fno_models::{FnoConfig, ModelError, ModelSettings};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_training::{checkpoint_normalizers, predict_with, Predictor, TrainError};

use crate::args::{report_faults, run_on, with_settings, BackendJob, BurnFusionArg, ModelDevice, SPECTRAL_UNITS};
use crate::model_files::ShiftArg;
use crate::progress::Progress;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct InferArgs {
    /// Checkpoint: ours (.safetensors), a neuraloperator state_dict export
    /// (.safetensors), neuraloperator's own NAME_state_dict.pt, or a
    /// neuraloperator Trainer's save directory (its best_model, else model).
    #[arg(long)]
    checkpoint: PathBuf,
    /// FNO configuration (JSON, neuraloperator's argument names); overrides
    /// the checkpoint's own (ours, NAME_metadata.pkl beside a state dict, or
    /// the state dict's _metadata); needed for safetensors exports.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    shift: ShiftArg,
    /// Inputs [samples, in_channels, *grid] (or [samples, *grid] for one
    /// channel), any grid size, float32 or float64: .npy, or any file `fno
    /// data info` reads.
    #[arg(long)]
    input: PathBuf,
    /// The input's key in files holding several arrays [default: the only
    /// one, else the first of x, a, coeff, input, inputs].
    #[arg(long)]
    input_key: Option<String>,
    /// Output (.npy, float32): [samples, out_channels, *grid]; written only on success.
    #[arg(long)]
    output: PathBuf,
    #[command(flatten)]
    device: ModelDevice,
    /// Samples per forward pass.
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
    /// The model's engine: Burn (every backend and implementation) or Candle
    /// (the fno-candle model, on the CPU or, in builds with the candle-cuda
    /// feature, CUDA).
    #[arg(long, value_enum, default_value_t = Engine::Burn)]
    engine: Engine,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    Burn,
    Candle,
}

pub fn run(args: InferArgs) -> Result<(), String> {
    if args.batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    check_output_path("--output", &args.output, &["npy"])?;
    let mut inputs = vec![
        ("--checkpoint", args.checkpoint.as_path()),
        ("--input", args.input.as_path()),
    ];
    inputs.extend(args.config.as_deref().map(|c| ("--config", c)));
    refuse_same_file("--output", &args.output, &inputs)?;
    let file = crate::model_files::read_checkpoint(&args.checkpoint, args.config.as_deref())?;
    let config = file.config_with(&args.shift)?;
    let checkpoint = file.bytes;
    let label = file.path.display().to_string();
    let (key, input) = fno_datasets::read_input(&args.input, args.input_key.as_deref()).map_err(|e| e.to_string())?;
    if args.engine == Engine::Candle {
        return run_candle(&args, &checkpoint, &label, config.as_ref(), input.array, &key);
    }
    let (backend, imp) = args.device.resolve()?;
    let job = InferJob {
        checkpoint: &checkpoint,
        config: config.as_ref(),
        input: input.array,
        input_label: format!("{} ('{key}')", args.input.display()),
        imp,
        settings: args.device.settings(),
        batch_size: args.batch_size,
        label,
        on_cpu: backend == Backend::Cpu,
    };
    let (output, denormalised) = run_on(backend, args.device.burn_fusion, Some(args.device.memory.into()), job)?;
    write_output(
        &args.output,
        output,
        denormalised,
        &format!("{}, {imp:?}", crate::args::backend_label(backend)),
    )
}

fn write_output(path: &PathBuf, output: Array, denormalised: bool, ran_on: &str) -> Result<(), String> {
    npy::write(path, &NpyArray::new(output.shape, DType::F32, output.data)).map_err(|e| e.to_string())?;
    let units = if denormalised {
        ", de-normalised with the training data's statistics"
    } else {
        ""
    };
    eprintln!("wrote {} ({ran_on}{units})", path.display());
    Ok(())
}

/// A single-channel model takes `[samples, *grid]` too, as neuraloperator's
/// files store it; anything else must be `[samples, in_channels, *grid]`.
fn model_input(mut input: Array, cfg: &FnoConfig, label: &str) -> Result<Array, String> {
    if input.shape.len() == cfg.dims() + 1 && cfg.in_channels == 1 {
        input.shape.insert(1, 1);
    }
    if input.shape.len() != cfg.dims() + 2 || input.shape[1] != cfg.in_channels {
        return Err(format!(
            "{label}: shape {:?}, but the {}-D model takes [samples, {} input channels, {} grid dims]",
            input.shape,
            cfg.dims(),
            cfg.in_channels,
            cfg.dims()
        ));
    }
    Ok(input)
}

/// A Candle error's message without the backtrace Candle attaches under
/// `RUST_BACKTRACE` (the CLI's errors are one line).
fn one_line(e: candle_core::Error) -> String {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => one_line(*inner),
        other => other.to_string(),
    }
}

/// `fno infer --engine candle`: the fno-candle model on Candle's CPU or CUDA device.
fn run_candle(
    args: &InferArgs,
    checkpoint: &[u8],
    label: &str,
    config: Option<&FnoConfig>,
    input: Array,
    key: &str,
) -> Result<(), String> {
    let device = &args.device;
    let burn_only = [
        (
            !matches!(
                device.backend,
                BackendChoice::Auto | BackendChoice::Cpu | BackendChoice::Cuda
            ),
            "--backend",
        ),
        (device.imp.is_some(), "--impl"),
        (device.matmul_precision.is_some(), "--matmul-precision"),
        (device.precision.is_some(), "--precision"),
        (device.fault_tolerance != FaultTolerance::Off, "--fault-tolerance"),
        (device.burn_fusion != BurnFusionArg::Off, "--burn-fusion"),
    ];
    if let Some((_, flag)) = burn_only.iter().find(|(given, _)| *given) {
        return Err(format!(
            "{flag} sets the Burn engine; --engine candle runs the Candle model in f32 on the CPU or CUDA"
        ));
    }
    crate::args::set_threads(device.threads)?;
    let (candle_device, device_name) = candle_device(device.backend)?;
    let model = fno_candle::Fno::load(checkpoint, config, candle_core::DType::F32, &candle_device)
        .map_err(|e| format!("{label}: {}", one_line(e)))?;
    let (input_normalizer, output_normalizer) =
        checkpoint_normalizers(checkpoint).map_err(|e| format!("{label}: {e}"))?;
    let cfg = model.config();
    let input = model_input(input, cfg, &format!("{} ('{key}')", args.input.display()))?;
    let bar = Progress::new("inference", "samples", input.shape[0]);
    let normalizers = (input_normalizer.as_ref(), output_normalizer.as_ref());
    let output = predict_with(&input, normalizers, cfg.out_channels, |x, shape| {
        let on = (candle_core::DType::F32, &candle_device);
        fno_candle::infer(&model, x, shape, args.batch_size, on, |done, _| bar.update(done, ""))
            .map_err(|e| TrainError::Model(ModelError::Input(format!("the Candle model: {}", one_line(e)))))
    })
    .map_err(|e| e.to_string())?;
    bar.finish_with_rate();
    let denormalised = input_normalizer.is_some() || output_normalizer.is_some();
    let threads = match device_name {
        "cpu" => format!(", {}", crate::args::threads_label()),
        _ => String::new(),
    };
    write_output(
        &args.output,
        output,
        denormalised,
        &format!("Candle, {device_name}{threads}"),
    )
}

/// Candle's device for `--backend`: CUDA when asked (or, for `auto`, when
/// this build has Candle's CUDA device and a GPU answers), else the CPU.
fn candle_device(backend: BackendChoice) -> Result<(candle_core::Device, &'static str), String> {
    let cuda = if cfg!(feature = "candle-cuda") {
        candle_core::Device::new_cuda(0).map_err(one_line)
    } else {
        Err("this fno was built without the candle-cuda feature (docs/candle.md)".into())
    };
    match (backend, cuda) {
        (BackendChoice::Cuda, Err(e)) => Err(format!("--engine candle --backend cuda: {e}")),
        (BackendChoice::Cuda | BackendChoice::Auto, Ok(gpu)) => Ok((gpu, "cuda")),
        _ => Ok((candle_core::Device::Cpu, "cpu")),
    }
}

struct InferJob<'a> {
    checkpoint: &'a [u8],
    config: Option<&'a FnoConfig>,
    input: Array,
    input_label: String,
    imp: SpectralImpl,
    settings: ModelSettings,
    batch_size: usize,
    label: String,
    /// Checked against the CPU's free memory first.
    on_cpu: bool,
}

impl BackendJob for InferJob<'_> {
    /// The predictions, and whether the checkpoint's normalisers were applied.
    type Output = (Array, bool);

    fn run<B: SpectralConvBackend>(self, device: &B::Device) -> Result<(Array, bool), String> {
        let mut predictor =
            Predictor::<B>::load(self.checkpoint, self.config, device).map_err(|e| format!("{}: {e}", self.label))?;
        predictor.model = with_settings::<B>(predictor.model.with_spectral_impl(self.imp), self.settings, device);
        let input = model_input(self.input, predictor.model.config(), &self.input_label)?;
        if self.on_cpu {
            let batch = self.batch_size.min(input.shape[0]);
            let points = input.shape[2..].iter().product();
            let need = crate::memory::activation_bytes(predictor.model.config(), batch, points, false);
            crate::memory::check_fits(&format!("inference in batches of {batch}"), need)?;
        }
        let bar = Progress::new("inference", "samples", input.shape[0]);
        let output = predictor
            .predict(&input, self.batch_size, device, |done, _| bar.update(done, ""))
            .map_err(|e| e.to_string())?;
        bar.finish_with_rate();
        report_faults(self.settings.fault_tolerance, B::fault_counts(device), SPECTRAL_UNITS)
            .map_err(|e| format!("{e}; no output written"))?;
        Ok((
            output,
            predictor.output_normalizer.is_some() || predictor.input_normalizer.is_some(),
        ))
    }
}

//! `fno infer`: an FNO checkpoint (ours or a neuraloperator export) applied to
//! the inputs of a data file. Checkpoints of `fno train` predict in the data's
//! units (their normalisers applied), the values `fno eval` scores.

use std::path::PathBuf;

use clap::Args;
use fno_datasets::npy::{self, DType, NpyArray};
use fno_datasets::Array;
use fno_models::FnoConfig;
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_training::Predictor;

use crate::args::{report_faults, run_on, with_settings, BackendJob, ModelDevice, ModelSettings, SPECTRAL_UNITS};
use crate::progress::Progress;

#[derive(Args, Debug)]
pub struct InferArgs {
    /// Checkpoint (.safetensors): ours, or a neuraloperator state_dict export.
    #[arg(long)]
    checkpoint: PathBuf,
    /// neuraloperator FNO configuration (JSON); our checkpoints carry their own.
    #[arg(long)]
    config: Option<PathBuf>,
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
}

pub fn run(args: InferArgs) -> Result<(), String> {
    if args.batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let config = match &args.config {
        Some(path) => {
            let text = String::from_utf8(read(path)?).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
            Some(FnoConfig::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?)
        }
        None => None,
    };
    let checkpoint = read(&args.checkpoint)?;
    let (key, input) = fno_datasets::read_input(&args.input, args.input_key.as_deref()).map_err(|e| e.to_string())?;
    let (backend, imp) = args.device.resolve()?;
    let job = InferJob {
        checkpoint: &checkpoint,
        config: config.as_ref(),
        input: input.array,
        input_label: format!("{} ('{key}')", args.input.display()),
        imp,
        settings: args.device.settings(),
        batch_size: args.batch_size,
        label: args.checkpoint.display().to_string(),
    };
    let (output, denormalised) = run_on(backend, job)?;
    npy::write(&args.output, &NpyArray::new(output.shape, DType::F32, output.data)).map_err(|e| e.to_string())?;
    let units = if denormalised {
        ", de-normalised with the training data's statistics"
    } else {
        ""
    };
    eprintln!("wrote {} ({backend}, {imp:?}{units})", args.output.display());
    Ok(())
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
}

impl BackendJob for InferJob<'_> {
    /// The predictions, and whether the checkpoint's normalisers were applied.
    type Output = (Array, bool);

    fn run<B: SpectralConvBackend>(self, device: &B::Device) -> Result<(Array, bool), String> {
        let mut predictor =
            Predictor::<B>::load(self.checkpoint, self.config, device).map_err(|e| format!("{}: {e}", self.label))?;
        predictor.model = with_settings::<B>(predictor.model.with_spectral_impl(self.imp), self.settings, device);
        let cfg = predictor.model.config();
        let mut input = self.input;
        // A single-channel model takes [samples, *grid] too, as neuraloperator's files store it.
        if input.shape.len() == cfg.dims() + 1 && cfg.in_channels == 1 {
            input.shape.insert(1, 1);
        }
        if input.shape.len() != cfg.dims() + 2 || input.shape[1] != cfg.in_channels {
            return Err(format!(
                "{}: shape {:?}, but the {}-D model takes [samples, {} input channels, {} grid dims]",
                self.input_label,
                input.shape,
                cfg.dims(),
                cfg.in_channels,
                cfg.dims()
            ));
        }
        let bar = Progress::new("inference", "samples", input.shape[0]);
        let output = predictor
            .predict(&input, self.batch_size, device, |done, _| bar.update(done, ""))
            .map_err(|e| e.to_string())?;
        bar.finish();
        report_faults(self.settings.fault_tolerance, B::fault_counts(device), SPECTRAL_UNITS)
            .map_err(|e| format!("{e}; no output written"))?;
        Ok((
            output,
            predictor.output_normalizer.is_some() || predictor.input_normalizer.is_some(),
        ))
    }
}

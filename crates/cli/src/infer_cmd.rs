//! `fno infer`: an FNO checkpoint (ours or a neuraloperator export) applied to a .npy file.

use std::path::PathBuf;

use burn::backend::NdArray;
use clap::Args;
use fno_datasets::npy::{self, DType, NpyArray};
use fno_kernels::backend::{Backend, BackendChoice};
use fno_models::{infer, Fno, FnoConfig};
use fno_ops::{SpectralConvBackend, SpectralImpl};

#[derive(Args, Debug)]
pub struct InferArgs {
    /// Checkpoint (.safetensors): ours, or a neuraloperator state_dict export.
    #[arg(long)]
    checkpoint: PathBuf,
    /// neuraloperator FNO configuration (JSON); our checkpoints carry their own.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Input (.npy, float32): [samples, in_channels, *grid], any grid size.
    #[arg(long)]
    input: PathBuf,
    /// Output (.npy, float32): [samples, out_channels, *grid]; written only on success.
    #[arg(long)]
    output: PathBuf,
    /// Spectral convolution: reference (Burn ops, any backend), unfused (our
    /// kernels, GPU backends) or fused. Default: unfused on a GPU, reference on the CPU.
    #[arg(long = "impl")]
    imp: Option<String>,
    /// Where to run: auto (CUDA, then a real wgpu GPU, then CPU), cuda, wgpu or cpu.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// How the unfused kernel path lowers its FFT plans: rules, or measured
    /// (times each plan's candidate lowerings on the device once per shape
    /// and keeps the fastest; same results).
    #[arg(long, default_value = "rules")]
    fft_planning: String,
    /// Samples per forward pass.
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
}

fn parse_impl(name: &str) -> Result<SpectralImpl, String> {
    match name {
        "reference" => Ok(SpectralImpl::Reference),
        "unfused" => Ok(SpectralImpl::Unfused),
        "fused" => Ok(SpectralImpl::Fused),
        other => Err(format!(
            "unknown --impl '{other}' (expected reference, unfused or fused)"
        )),
    }
}

pub fn run(args: InferArgs) -> Result<(), String> {
    let imp = args.imp.as_deref().map(parse_impl).transpose()?;
    fno_ops::set_fft_planning(crate::train_cmd::parse_planning(&args.fft_planning)?);
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
    let input = npy::read(&args.input).map_err(|e| e.to_string())?;
    if input.dtype != DType::F32 {
        return Err(format!("{}: the FNO takes float32 input", args.input.display()));
    }
    let backend = args.backend.parse::<BackendChoice>()?.resolve()?;
    let imp = imp.unwrap_or(if backend == Backend::Cpu {
        SpectralImpl::Reference
    } else {
        SpectralImpl::Unfused
    });
    let job = Job {
        checkpoint: &checkpoint,
        config: config.as_ref(),
        input: &input,
        imp,
        batch_size: args.batch_size,
        label: args.checkpoint.display().to_string(),
    };
    let (shape, data) = match backend {
        Backend::Cpu => job.run::<NdArray>(&Default::default())?,
        #[cfg(feature = "cuda")]
        Backend::Cuda => {
            job.run::<burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>>(&Default::default())?
        }
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => {
            job.run::<burn_cubecl::CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>>(&Default::default())?
        }
        #[allow(unreachable_patterns)]
        other => return Err(format!("this build has no {other} backend")),
    };
    npy::write(&args.output, &NpyArray::new(shape, DType::F32, data)).map_err(|e| e.to_string())?;
    eprintln!("wrote {} ({backend}, {imp:?})", args.output.display());
    Ok(())
}

struct Job<'a> {
    checkpoint: &'a [u8],
    config: Option<&'a FnoConfig>,
    input: &'a NpyArray,
    imp: SpectralImpl,
    batch_size: usize,
    label: String,
}

impl Job<'_> {
    fn run<B: SpectralConvBackend>(&self, device: &B::Device) -> Result<(Vec<usize>, Vec<f32>), String> {
        let model = Fno::<B>::load_safetensors(self.checkpoint, self.config, device)
            .map_err(|e| format!("{}: {e}", self.label))?
            .with_spectral_impl(self.imp);
        let shape = &self.input.shape;
        let y = infer(
            &model,
            &self.input.data,
            shape,
            self.batch_size,
            device,
            |done, total| {
                if total > self.batch_size {
                    eprintln!("{done}/{total} samples");
                }
            },
        )
        .map_err(|e| e.to_string())?;
        let mut out_shape = shape.clone();
        out_shape[1] = model.config().out_channels;
        Ok((out_shape, y))
    }
}

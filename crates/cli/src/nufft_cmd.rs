//! `fno nufft`: FINUFFT's type 1 and type 2 transforms of .npy files on any
//! backend (docs/nufft.md).

use std::path::PathBuf;

use crate::memory::{check_fits, product};
use clap::{Args, ValueEnum};
use cubecl::prelude::*;
use fno_datasets::npy::{self, DType, NpyArray};
use fno_datasets::output::{check_output_path, refuse_same_file};
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fft::ModeOrder;
use fno_kernels::nufft::{NufftDesc, NufftType};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TypeArg {
    /// Points to modes: f_k = Σ_j c_j e^{isign·i k·x_j}.
    #[value(name = "1")]
    One,
    /// Modes to points: c_j = Σ_k f_k e^{isign·i k·x_j}.
    #[value(name = "2")]
    Two,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ModeOrderArg {
    /// −N/2 … N/2−1 on every dimension (FINUFFT's modeord = 0).
    Centered,
    /// 0 … N/2−1, then −N/2 … −1 (FINUFFT's modeord = 1, numpy's FFT order).
    Fft,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct NufftArgs {
    /// Transform type.
    #[arg(long = "type", value_enum)]
    kind: TypeArg,
    /// Points (.npy, float32 or float64, [M, d] or [M] for d = 1), radians;
    /// any finite values, taken modulo 2π. float64 points are rounded to
    /// float32's precision (the transform is single precision).
    #[arg(long)]
    points: PathBuf,
    /// Values (.npy, complex64, or real promoted to complex). Type 1: [M] or
    /// [B, M] at the points. Type 2: [N1, …] or [B, N1, …] modes.
    #[arg(long)]
    values: PathBuf,
    /// Modes per dimension, comma-separated (d of them).
    #[arg(long)]
    modes: String,
    /// Relative tolerance, 1e-6 to 1e-1.
    #[arg(long, default_value_t = 1e-6)]
    eps: f64,
    /// Sign of the exponent (+1 or −1); default +1 for type 1, −1 for type 2.
    #[arg(long, allow_hyphen_values = true)]
    isign: Option<i32>,
    /// Fine grid size over modes: 2 or 1.25.
    #[arg(long, default_value_t = 2.0)]
    upsampling: f64,
    /// Order of the modes in the values (type 2) or output (type 1).
    #[arg(long, value_enum, default_value_t = ModeOrderArg::Centered)]
    mode_order: ModeOrderArg,
    /// Output (.npy, complex64): type 1 [B?, N1, …], type 2 [B?, M]; written
    /// only when the transform succeeds.
    #[arg(long)]
    output: PathBuf,
    /// Where to run (cpu: the same algorithm in f64).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
}

pub fn run(args: NufftArgs) -> Result<(), String> {
    check_output_path("--output", &args.output, &["npy"])?;
    let inputs = [("--points", args.points.as_path()), ("--values", args.values.as_path())];
    refuse_same_file("--output", &args.output, &inputs)?;
    let modes: Vec<usize> = crate::fft_cmd::parse_list("modes", &args.modes)?;
    let kind = match args.kind {
        TypeArg::One => NufftType::One,
        TypeArg::Two => NufftType::Two,
    };
    let d = modes.len();
    let points = npy::read(&args.points).map_err(|e| e.to_string())?;
    let shown = |p: &PathBuf| p.display().to_string();
    let m = match (points.dtype, points.shape.as_slice()) {
        (DType::C64, _) => return Err(format!("{}: points must be real, got complex64", shown(&args.points))),
        (_, &[m]) if d == 1 => m,
        (_, &[m, dims]) if dims == d => m,
        (_, shape) => {
            return Err(format!(
                "{}: points of shape {shape:?}, expected [M, {d}] for {d} mode dimensions",
                shown(&args.points)
            ))
        }
    };
    let values = npy::read(&args.values).map_err(|e| e.to_string())?;
    // What one vector spans: M points (type 1) or the modes (type 2).
    let vector: &[usize] = match kind {
        NufftType::One => &[m],
        NufftType::Two => &modes,
    };
    let rank = values.shape.len();
    let batched = rank == vector.len() + 1;
    if !(rank == vector.len() || batched) || values.shape[rank - vector.len()..] != *vector {
        let what = match kind {
            NufftType::One => format!("[{m}] or [B, {m}] (one value a point)"),
            NufftType::Two => format!("{modes:?} or [B, {}] (the modes)", list(&modes)),
        };
        return Err(format!(
            "{}: values of shape {:?}, expected {what}",
            shown(&args.values),
            values.shape
        ));
    }
    let batch = if batched { values.shape[0] } else { 1 };
    let input: Vec<f32> = match values.dtype {
        DType::C64 => values.data,
        DType::F32 | DType::F16 => values.data.iter().flat_map(|&v| [v, 0.0]).collect(),
    };
    check_fits_nufft(&modes, args.upsampling, batch)?;
    let mut desc = NufftDesc::new(kind, &modes, args.eps)
        .upsampling(args.upsampling)
        .batch(batch)
        .mode_order(match args.mode_order {
            ModeOrderArg::Centered => ModeOrder::Shifted,
            ModeOrderArg::Fft => ModeOrder::Fft,
        });
    if let Some(isign) = args.isign {
        desc = desc.isign(isign);
    }
    desc.layout().map_err(|e| e.to_string())?;
    let x: Vec<f64> = points.data.iter().map(|&v| v as f64).collect();
    let backend = args.backend.resolve()?;
    let result: Vec<f32> = match backend {
        Backend::Cpu => {
            let wide: Vec<f64> = input.iter().map(|&v| v as f64).collect();
            let out = desc.execute_cpu(&x, &wide).map_err(|e| e.to_string())?;
            out.into_iter().map(|v| v as f32).collect()
        }
        #[cfg(feature = "cuda")]
        Backend::Cuda => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            run_on_device(&CudaRuntime::client(&CudaDevice { index: 0 }), &desc, &x, &input)?
        }
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            run_on_device(&WgpuRuntime::client(&WgpuDevice::default()), &desc, &x, &input)?
        }
        #[allow(unreachable_patterns)]
        other => return Err(format!("backend {other} is not compiled into this build")),
    };
    let out_vector: &[usize] = match kind {
        NufftType::One => &modes,
        NufftType::Two => &[m],
    };
    let shape: Vec<usize> = batched
        .then_some(batch)
        .into_iter()
        .chain(out_vector.iter().copied())
        .collect();
    npy::write(&args.output, &NpyArray::new(shape, DType::C64, result)).map_err(|e| e.to_string())
}

/// Refuses modes whose fine grid (`σ·m` cells a dimension, complex f64 on the
/// CPU), output and per-mode corrections would not fit, before the plan
/// allocates them.
fn check_fits_nufft(modes: &[usize], upsampling: f64, batch: usize) -> Result<(), String> {
    let wide = |v: usize| v as u128;
    let fine = modes.iter().map(|&m| (upsampling * m as f64).ceil() as u128);
    let grid = product(fine.chain([wide(batch), 16]));
    let output = product(modes.iter().copied().map(wide).chain([wide(batch), 16]));
    let corrections = Some(modes.iter().map(|&m| 8 * wide(m)).sum::<u128>());
    let bytes = [grid, output, corrections]
        .into_iter()
        .try_fold(0u128, |acc, b| acc.checked_add(b?));
    check_fits(&format!("--modes {}", list(modes)), bytes)
}

fn list(values: &[usize]) -> String {
    values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

fn run_on_device<R: Runtime>(
    client: &ComputeClient<R>,
    desc: &NufftDesc,
    points: &[f64],
    input: &[f32],
) -> Result<Vec<f32>, String> {
    let plan = desc.on_device(client, points).map_err(|e| e.to_string())?;
    let input = client.create_from_slice(f32::as_bytes(input));
    let output = client.empty(plan.output_floats() * 4);
    plan.execute(&input, &output).map_err(|e| e.to_string())?;
    let bytes = client
        .read_one(output)
        .map_err(|e| format!("reading the result back failed: {e:?}"))?;
    Ok(f32::from_bytes(&bytes).to_vec())
}

//! `fno fft`: numpy.fft semantics over .npy files on any backend.

use std::path::PathBuf;

use clap::Args;
use cubecl::prelude::*;
use fno_datasets::npy::{self, DType, NpyArray};
use fno_datasets::output::{check_output_path, refuse_same_file};
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fft::{Direction, FaultInjection, FaultSite, FaultTolerance, FftDesc, FftKind, FftPlan, Norm};
use fno_kernels::precision::Precision;

use crate::args::report_faults;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct FftArgs {
    /// Input array (.npy: any real dtype, complex64 or complex128; with
    /// `--precision f16`, a float16 array's last axis of length 2 holds the
    /// (re, im) pairs of a complex input).
    #[arg(long)]
    input: PathBuf,
    /// Output array (.npy); written only when the transform succeeds.
    #[arg(long)]
    output: PathBuf,
    /// Inverse transform (ifftn, or irfftn with --real).
    #[arg(long)]
    inverse: bool,
    /// Real transform: rfftn forward (float32 in), irfftn inverse (float32 out).
    /// The last listed axis is the real one.
    #[arg(long)]
    real: bool,
    /// Axes to transform, comma-separated; negative values count from the end.
    #[arg(long, default_value = "-1", allow_hyphen_values = true)]
    axes: String,
    /// Retained modes per axis. Forward: output only these (the real axis keeps
    /// its first m bins, other axes the centred window of the m lowest
    /// |frequencies|). Inverse: the input holds only these, the rest is zero.
    #[arg(long)]
    modes: Option<String>,
    /// Transform length per axis (numpy's n / s): forward inputs are cropped or
    /// zero-padded at the end; inverse outputs have this length.
    #[arg(long)]
    n: Option<String>,
    /// Normalisation, as numpy's `norm`.
    #[arg(long, value_enum, default_value_t = Norm::Backward)]
    norm: Norm,
    /// What the transform's buffers hold; it computes in f32 (f64 on the
    /// CPU). f16: float16 in and out (complex output as float16 with a last
    /// axis of 2, numpy having no complex float16); bf16: float32/complex64
    /// files, values rounded to bfloat16 on load and on output.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Checksums in the device kernels (algorithm-based fault tolerance):
    /// detect silent faults, or detect and correct them; counts go to stderr.
    #[arg(long, value_enum, default_value_t = FaultTolerance::Off)]
    fault_tolerance: FaultTolerance,
    /// Flip one random bit, drawn from SEED, inside the transform's kernels
    /// (needs --fault-tolerance detect or correct): to watch the checks work.
    #[arg(long, value_name = "SEED")]
    inject_fault: Option<u64>,
}

pub(crate) fn parse_list<T: std::str::FromStr>(what: &str, text: &str) -> Result<Vec<T>, String> {
    text.split(',')
        .map(|s| {
            s.trim().parse::<T>().map_err(|_| match s.trim().strip_prefix('-') {
                Some(rest) if rest.parse::<f64>().is_ok() => {
                    format!("--{what}: {} is negative, where a count or size is expected", s.trim())
                }
                _ => format!("--{what}: '{s}' is not a valid number"),
            })
        })
        .collect()
}

/// Refuses a transform whose padded signals (`--n`) would not fit: the
/// widened input, the output, the plan's scratch and the f32 result, about
/// 64 bytes a complex value, before the planner allocates.
fn check_fits_transform(shape: &[usize], axes: &[isize], lengths: Option<&[usize]>) -> Result<(), String> {
    let rank = shape.len() as isize;
    let mut padded: Vec<u128> = shape.iter().map(|&v| v as u128).collect();
    for (&axis, &n) in axes.iter().zip(lengths.unwrap_or_default()) {
        let at = if axis < 0 { axis + rank } else { axis };
        if (0..rank).contains(&at) {
            padded[at as usize] = padded[at as usize].max(n as u128);
        }
    }
    crate::memory::check_fits("this transform", crate::memory::product(padded.into_iter().chain([64])))
}

pub fn run(args: FftArgs) -> Result<(), String> {
    check_output_path("--output", &args.output, &["npy"])?;
    refuse_same_file("--output", &args.output, &[("--input", &args.input)])?;
    let axes: Vec<isize> = parse_list("axes", &args.axes)?;
    let modes = args
        .modes
        .as_deref()
        .map(|m| parse_list::<usize>("modes", m))
        .transpose()?;
    let lengths = args.n.as_deref().map(|n| parse_list::<usize>("n", n)).transpose()?;
    let norm = args.norm;
    let precision = args.precision;

    let mut input = npy::read(&args.input).map_err(|e| e.to_string())?;
    if let Some(warning) = integer_warning(input.stored, precision) {
        eprintln!("warning: {}: {warning}", args.input.display());
    }
    let (kind, direction) = match (args.real, args.inverse) {
        (false, false) => (FftKind::C2C, Direction::Forward),
        (false, true) => (FftKind::C2C, Direction::Inverse),
        (true, false) => (FftKind::R2C, Direction::Forward),
        (true, true) => (FftKind::C2R, Direction::Inverse),
    };
    if precision == Precision::F16 && input.dtype == DType::F16 && kind != FftKind::R2C {
        input = complex_from_pairs(input).map_err(|e| format!("{}: {e}", args.input.display()))?;
    }
    let data = match (kind, input.dtype) {
        (FftKind::R2C, DType::C64) => {
            return Err(format!(
                "{}: a real forward transform needs float32 input, got complex64",
                args.input.display()
            ))
        }
        // numpy promotes real input of complex transforms to complex.
        (FftKind::C2C | FftKind::C2R, DType::F32 | DType::F16) => input.data.iter().flat_map(|&v| [v, 0.0]).collect(),
        _ => input.data,
    };
    if input.shape.is_empty() {
        return Err(format!(
            "{}: a 0-dimensional array has no axis to transform",
            args.input.display()
        ));
    }
    check_fits_transform(&input.shape, &axes, lengths.as_deref())?;
    let data = precision.round(data);
    let mut desc = FftDesc::new(&input.shape, &axes, kind, direction)
        .norm(norm)
        .precision(precision);
    desc.modes = modes;
    desc.lengths = lengths;
    desc.fault_tolerance = args.fault_tolerance;
    if args.inject_fault.is_some() && desc.fault_tolerance == FaultTolerance::Off {
        return Err(
            "--inject-fault needs --fault-tolerance detect or correct (unchecked, a fault would go unseen)".into(),
        );
    }
    let plan = FftPlan::new(desc).map_err(|e| e.to_string())?;
    // Probe devices only once the request is known to be valid.
    let backend = args.backend.resolve()?;
    if backend == Backend::Cpu && plan.desc().fault_tolerance != FaultTolerance::Off {
        return Err("--fault-tolerance checks the device kernels; the cpu backend has none (pick cuda or wgpu)".into());
    }

    let result = match backend {
        Backend::Cpu => {
            let wide: Vec<f64> = data.iter().map(|&v| v as f64).collect();
            let out = plan.execute_cpu(&wide).map_err(|e| e.to_string())?;
            let out: Vec<f32> = out.into_iter().map(|v| v as f32).collect();
            precision.round(out)
        }
        #[cfg(feature = "cuda")]
        Backend::Cuda => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            run_on_device(
                &CudaRuntime::client(&CudaDevice { index: 0 }),
                &plan,
                &data,
                args.inject_fault,
            )?
        }
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            run_on_device(
                &WgpuRuntime::client(&WgpuDevice::default()),
                &plan,
                &data,
                args.inject_fault,
            )?
        }
        #[allow(unreachable_patterns)]
        other => return Err(format!("backend {other} is not compiled into this build")),
    };
    let mut shape = plan.output_shape().to_vec();
    let dtype = match (precision, plan.output_is_complex()) {
        (Precision::F16, true) => {
            shape.push(2);
            DType::F16
        }
        (Precision::F16, false) => DType::F16,
        (_, true) => DType::C64,
        (_, false) => DType::F32,
    };
    npy::write(&args.output, &NpyArray::new(shape, dtype, result)).map_err(|e| e.to_string())
}

/// A float16 array whose last axis holds (re, im) pairs, as the complex array
/// it stands for (numpy has no complex float16).
/// What a user should hear when integers or booleans are transformed as
/// floats of `precision`: values past its exact integers round.
fn integer_warning(stored: &str, precision: Precision) -> Option<String> {
    if stored.starts_with("float") || stored.starts_with("complex") {
        return None;
    }
    let (name, exact) = match precision {
        Precision::F16 => ("float16", "2048"),
        Precision::BF16 => ("bfloat16", "256"),
        Precision::F32 => ("float32", "16777216"),
    };
    Some(format!(
        "{stored} values transformed as {name}: integers beyond ±{exact} are rounded"
    ))
}

fn complex_from_pairs(array: NpyArray) -> Result<NpyArray, String> {
    let mut shape = array.shape;
    if shape.last() != Some(&2) {
        return Err(format!(
            "a float16 input of a complex transform holds (re, im) pairs on a last axis of length 2, got shape {shape:?} (or pass complex64)"
        ));
    }
    shape.pop();
    Ok(NpyArray::new(shape, DType::C64, array.data))
}

fn run_on_device<R: Runtime>(
    client: &ComputeClient<R>,
    plan: &FftPlan,
    data: &[f32],
    inject_fault: Option<u64>,
) -> Result<Vec<f32>, String> {
    let device = plan.on_device(client).map_err(|e| e.to_string())?;
    let input = client.create_from_slice(&device.input_stored().encode(data));
    let output = client.empty(plan.output_floats() * device.output_stored().bytes());
    let fault = inject_fault.and_then(|seed| FaultInjection::drawn(&device.fault_targets(), seed));
    match &fault {
        Some(fault) => device.execute_with_fault(&input, &output, fault),
        None => device.execute(&input, &output),
    }
    .map_err(|e| e.to_string())?;
    let bytes = client
        .read_one(output)
        .map_err(|e| format!("reading the result back failed: {e:?}"))?;
    let tolerance = plan.desc().fault_tolerance;
    if tolerance != FaultTolerance::Off {
        let counts = device.fault_counts();
        if let Some(f) = fault {
            let site = match f.site {
                FaultSite::Register => "a register",
                FaultSite::Shared => "shared memory",
            };
            let landed = if counts.injected > 0 {
                "injected"
            } else {
                "found no value there (a thread without work in that pass); nothing injected"
            };
            eprintln!(
                "fault: bit {} of {site}, stage launch {} pass {} tile {} unit {}: {landed}",
                f.bit, f.launch, f.pass, f.tile, f.unit
            );
        }
        report_faults(tolerance, counts, "signal(s)").map_err(|e| format!("{e}; no output written"))?;
    }
    Ok(device.output_stored().decode(&bytes))
}

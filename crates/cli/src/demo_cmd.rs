//! `fno demo`: the FFT pipeline of a spectral layer on an embedded signal, on the
//! chosen backend, checked against the CPU oracle. Needs no files.

use std::time::Instant;

use clap::Args;
use cubecl::prelude::*;
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct DemoArgs {
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Grid size of the embedded 2D field (a power of two).
    #[arg(long, default_value_t = 128)]
    size: usize,
    /// Retained modes per axis.
    #[arg(long, default_value_t = 16)]
    modes: usize,
}

/// A smooth 2D field with a little high-frequency content, per batch entry.
fn field(batch: usize, n: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(batch * n * n);
    for b in 0..batch {
        for i in 0..n {
            for j in 0..n {
                let (x, y) = (i as f64 / n as f64, j as f64 / n as f64);
                let tau = std::f64::consts::TAU;
                let smooth = (tau * (x + 0.1 * b as f64)).sin() * (2.0 * tau * y).cos() + 0.5 * (tau * (x - y)).cos();
                let rough = 0.05 * ((n as f64 / 3.0) * tau * x).sin() * ((n as f64 / 3.0) * tau * y).sin();
                out.push((smooth + rough) as f32);
            }
        }
    }
    out
}

pub fn run(args: DemoArgs) -> Result<(), String> {
    let (n, m, batch) = (args.size, args.modes, 32);
    if !n.is_power_of_two() || n < 4 {
        return Err(format!("--size {n}: use a power of two of at least 4"));
    }
    if m > n / 2 + 1 {
        return Err(format!("--modes {m} exceed the {} bins of a size-{n} grid", n / 2 + 1));
    }
    // The field, its f64 copy, the CPU reference through both plans, the result: ~40 bytes a value.
    crate::memory::check_fits(
        &format!("fno demo --size {n}"),
        crate::memory::product([batch, n, n, 40].map(|v| v as u128)),
    )?;
    let backend = args.backend.resolve()?;
    println!("fno demo: low-pass a batch of {batch} fields of {n}x{n} through {m}x{m} retained modes on {backend}");

    // Forward keeps the centred m rows and first m bins; the inverse zero-pads back.
    let forward =
        FftPlan::new(FftDesc::new(&[batch, n, n], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[m, m]))
            .map_err(|e| e.to_string())?;
    let inverse = FftPlan::new(
        FftDesc::new(forward.output_shape(), &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[m, m])
            .lengths(&[n, n]),
    )
    .map_err(|e| e.to_string())?;
    let x = field(batch, n);

    let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let reference = inverse
        .execute_cpu(&forward.execute_cpu(&wide).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let result = match backend {
        // The CPU backend runs the same plans in f32.
        Backend::Cpu => inverse
            .execute_cpu(&forward.execute_cpu(&x).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?,
        #[cfg(feature = "cuda")]
        Backend::Cuda => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            low_pass(&CudaRuntime::client(&CudaDevice { index: 0 }), &forward, &inverse, &x)?
        }
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            low_pass(&WgpuRuntime::client(&WgpuDevice::default()), &forward, &inverse, &x)?
        }
        #[allow(unreachable_patterns)]
        other => return Err(format!("backend {other} is not compiled into this build")),
    };
    let elapsed = start.elapsed();

    let energy = |v: &[f32]| v.iter().map(|a| (*a as f64).powi(2)).sum::<f64>();
    let diff: f64 = result
        .iter()
        .zip(&reference)
        .map(|(a, b)| (*a as f64 - b).powi(2))
        .sum();
    let ref_energy: f64 = reference.iter().map(|a| a * a).sum();
    println!(
        "kept {:.2}% of the field's energy in {} of {} spectral coefficients",
        100.0 * energy(&result) / energy(&x),
        m * m,
        n * (n / 2 + 1)
    );
    println!(
        "{backend} vs f64 CPU oracle: relative L2 error {:.2e}; forward + inverse took {:.1} ms (first run, compilation included)",
        (diff / ref_energy).sqrt(),
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}

fn low_pass<R: Runtime>(
    client: &ComputeClient<R>,
    forward: &FftPlan,
    inverse: &FftPlan,
    x: &[f32],
) -> Result<Vec<f32>, String> {
    let f = forward.on_device(client).map_err(|e| e.to_string())?;
    let i = inverse.on_device(client).map_err(|e| e.to_string())?;
    let input = client.create_from_slice(f32::as_bytes(x));
    let spectrum = client.empty(forward.output_floats() * 4);
    let output = client.empty(inverse.output_floats() * 4);
    f.execute(&input, &spectrum).map_err(|e| e.to_string())?;
    i.execute(&spectrum, &output).map_err(|e| e.to_string())?;
    let bytes = client
        .read_one(output)
        .map_err(|e| format!("reading the result back failed: {e:?}"))?;
    Ok(f32::from_bytes(&bytes).to_vec())
}

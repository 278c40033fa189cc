//! The FFT plan API in a spectral layer's shape: keep the low modes of a batch of
//! 2D fields, zero-pad them back, and compare the device with the CPU oracle.
//!
//! cargo run --release -p fno-examples --example truncated_fft [-- cuda|wgpu]

use cubecl::prelude::*;
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};

fn main() {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "wgpu".into());
    match backend.as_str() {
        "cuda" => run(&cubecl::cuda::CudaRuntime::client(&cubecl::cuda::CudaDevice {
            index: 0,
        })),
        "wgpu" => run(&cubecl::wgpu::WgpuRuntime::client(&Default::default())),
        other => eprintln!("unknown backend {other}: use cuda or wgpu"),
    }
}

fn run<R: Runtime>(client: &ComputeClient<R>) {
    let (batch, channels, n, modes) = (4, 8, 64, [12, 7]);
    // rfftn over the last two axes, keeping the centred 12 rows and the first 7 bins:
    // exactly the modes neuraloperator's SpectralConv multiplies by its weights.
    let forward =
        FftPlan::new(FftDesc::new(&[batch, channels, n, n], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&modes))
            .unwrap();
    // irfftn from those modes only, back to n x n (the rest is zero).
    let inverse = FftPlan::new(
        FftDesc::new(forward.output_shape(), &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&modes)
            .lengths(&[n, n]),
    )
    .unwrap();
    println!(
        "input {:?} -> modes {:?} -> output {:?}",
        forward.input_shape(),
        forward.output_shape(),
        inverse.output_shape()
    );

    let x: Vec<f32> = (0..forward.input_floats())
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let input = client.create_from_slice(f32::as_bytes(&x));
    let spectrum = client.empty(forward.output_floats() * 4);
    let output = client.empty(inverse.output_floats() * 4);
    forward.on_device(client).unwrap().execute(&input, &spectrum).unwrap();
    inverse.on_device(client).unwrap().execute(&spectrum, &output).unwrap();
    let y = f32::from_bytes(&client.read_one(output).unwrap()).to_vec();

    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = inverse.execute_cpu(&forward.execute_cpu(&x64).unwrap()).unwrap();
    let err = (y.iter().zip(&want).map(|(a, b)| (*a as f64 - b).powi(2)).sum::<f64>()
        / want.iter().map(|b| b * b).sum::<f64>())
    .sqrt();
    println!("device vs f64 oracle: relative L2 error {err:.2e}");
}

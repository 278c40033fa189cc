//! Loads neuraloperator's FNO export ../shared/fixtures/neuralop/fno2d_small (or
//! a checkpoint directory given as the argument: model.safetensors,
//! config.json, x.npy, y.npy), runs it on each spectral path this machine has
//! (Reference, Unfused, Fused), and prints the relative L2 error against
//! PyTorch's output and the inference time (after a warm-up run that compiles
//! the kernels).
//!
//! cargo run --release -p fno-examples --example neuralop_checkpoint [-- DIR]

use std::path::PathBuf;

use burn::backend::NdArray;
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_models::{infer, Fno, FnoConfig};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_testing::relative_l2_f32;

fn main() {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/neuralop/fno2d_small")
    });
    if let Err(e) = run(&dir) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run(dir: &std::path::Path) -> Result<(), String> {
    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()));
    let config = FnoConfig::from_json(&String::from_utf8_lossy(&read("config.json")?)).map_err(|e| e.to_string())?;
    let checkpoint = read("model.safetensors")?;
    let x = fno_datasets::npy::read(dir.join("x.npy")).map_err(|e| e.to_string())?;
    let y = fno_datasets::npy::read(dir.join("y.npy")).map_err(|e| e.to_string())?;
    println!(
        "{} with n_modes {:?}, input {:?}",
        dir.display(),
        config.n_modes,
        x.shape
    );
    let error = |got: &[f32]| relative_l2_f32(got, &y.data);
    let run_on = |label: &str, got: Result<(Vec<f32>, f64), String>| match got {
        Ok((v, ms)) => println!(
            "  {label:<20} relative L2 error vs PyTorch {:.2e}, {ms:8.2} ms",
            error(&v)
        ),
        Err(e) => println!("  {label:<20} not run: {e}"),
    };
    run_on(
        "ndarray, Reference",
        forward::<NdArray>(&checkpoint, &config, &x, SpectralImpl::Reference),
    );
    type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
    for imp in [SpectralImpl::Reference, SpectralImpl::Unfused, SpectralImpl::Fused] {
        run_on(
            &format!("wgpu, {imp:?}"),
            forward::<Wgpu>(&checkpoint, &config, &x, imp),
        );
    }
    Ok(())
}

fn forward<B: SpectralConvBackend>(
    checkpoint: &[u8],
    config: &FnoConfig,
    x: &fno_datasets::npy::NpyArray,
    imp: SpectralImpl,
) -> Result<(Vec<f32>, f64), String> {
    let device = B::Device::default();
    let model = Fno::<B>::load_checkpoint(checkpoint, Some(config), &device)
        .map_err(|e| e.to_string())?
        .with_spectral_impl(imp);
    let run = || infer(&model, &x.data, &x.shape, 16, &device, |_, _| {}).map_err(|e| e.to_string());
    run()?;
    let start = std::time::Instant::now();
    let y = run()?;
    Ok((y, start.elapsed().as_secs_f64() * 1e3))
}

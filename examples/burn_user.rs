//! A Burn user's crate: the spectral convolution as a differentiable op, an
//! FNO on the user's own backend, and a neuraloperator checkpoint loaded.
//! `cargo run --release -p fno-examples --example burn_user [-- wgpu|cuda] [CHECKPOINT_DIR]`
use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::tensor::{Distribution, ElementConversion, Tensor};
use fno_models::{Fno, FnoConfig};
use fno_ops::{spectral_conv, SpectralConvBackend, SpectralConvSpec, SpectralImpl};

type Error = Box<dyn std::error::Error>;

fn run<B: SpectralConvBackend>(device: &B::Device, imp: SpectralImpl, checkpoint: Option<&str>) -> Result<(), Error> {
    // neuraloperator's SpectralConv: x [batch, in, 64, 64], weight [in, out, 16, 9, (re, im)]
    // keeps 16 centred frequencies on the first axis and 9 rfft bins on the last.
    let x = Tensor::<Autodiff<B>, 4>::random([4, 3, 64, 64], Distribution::Normal(0.0, 1.0), device);
    let weight =
        Tensor::<Autodiff<B>, 5>::random([3, 8, 16, 9, 2], Distribution::Normal(0.0, 0.1), device).require_grad();
    let spec = SpectralConvSpec::new(&[16, 9]);
    let y = spectral_conv(x.clone(), weight.clone(), None, &spec, imp)?;
    let grads = y.clone().powi_scalar(2).sum().backward();
    let weight_grad = weight.grad(&grads).expect("the weight takes part");
    let reference = spectral_conv(x, weight, None, &spec, SpectralImpl::Reference)?;
    let gap: f32 = (y - reference.clone()).abs().max().into_scalar().elem();
    let largest: f32 = reference.clone().abs().max().into_scalar().elem();
    println!(
        "spectral_conv {imp:?}: out {:?}, weight grad {:?}, max |{imp:?} - Reference| {gap:e}",
        reference.dims(),
        weight_grad.dims()
    );
    if gap > 1e-5 * largest {
        return Err(format!("{imp:?} is off the reference path by {gap:e} (largest value {largest:e})").into());
    }

    // The FNO under neuraloperator's argument names, on the same backend.
    let mut config = FnoConfig::new(&[16, 16], 1, 1, 32);
    config.n_layers = 4;
    let model = Fno::<B>::new(&config, device)?.with_spectral_impl(imp);
    let field = Tensor::<B, 4>::random([2, 1, 64, 64], Distribution::Uniform(0.0, 1.0), device);
    println!(
        "FNO with {} parameters: {:?} -> {:?}",
        model.num_params(),
        field.dims(),
        model.forward(field)?.dims()
    );

    // A neuraloperator export: model.safetensors (a state_dict) and its config.json.
    if let Some(dir) = checkpoint {
        let config = FnoConfig::from_json(&std::fs::read_to_string(format!("{dir}/config.json"))?)?;
        let bytes = std::fs::read(format!("{dir}/model.safetensors"))?;
        let model = Fno::<B>::load_checkpoint(&bytes, Some(&config), device)?.with_spectral_impl(imp);
        let x = Tensor::<B, 4>::zeros([1, config.in_channels, 32, 32], device);
        println!("loaded {dir}: output {:?}", model.forward(x)?.dims());
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let checkpoint = args
        .iter()
        .find(|a| !["wgpu", "cuda"].contains(&a.as_str()))
        .map(String::as_str);
    match args.first().map(String::as_str) {
        // The kernel paths run on Burn's GPU backends (Burn fusion merges the ops around them).
        Some("wgpu") => run::<burn::backend::Wgpu>(&Default::default(), SpectralImpl::Unfused, checkpoint),
        Some("cuda") => run::<burn::backend::Cuda>(&Default::default(), SpectralImpl::Unfused, checkpoint),
        // Any backend runs the reference path (truncated DFTs as Burn matmuls).
        _ => run::<NdArray>(&Default::default(), SpectralImpl::Reference, checkpoint),
    }
}

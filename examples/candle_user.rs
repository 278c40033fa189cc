//! A Candle user's crate: neuraloperator's spectral convolution as a
//! differentiable Candle op, its FNO as a candle-nn model trained with AdamW
//! and saved as a checkpoint `fno infer` reads, and a neuraloperator export
//! loaded. `cargo run --release -p fno-examples --example candle_user [-- CHECKPOINT_DIR]`;
//! with `--features candle-cuda` it runs on the first CUDA GPU when there is one.
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use fno_candle::{spectral_conv, Fno, FnoConfig, SpectralConvSpec};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let device = Device::cuda_if_available(0)?;
    println!("device: {device:?}");
    // neuraloperator's SpectralConv: x [batch, in, 64, 64], weight [in, out, 16, 9, (re, im)]
    // keeps 16 centred frequencies on the first axis and 9 rfft bins on the last.
    let x = Tensor::randn(0f32, 1.0, (4, 3, 64, 64), &device)?;
    let weight = Var::randn(0f32, 0.1, (3, 8, 16, 9, 2), &device)?;
    let y = spectral_conv(&x, &weight, None, &SpectralConvSpec::new(&[16, 9]))?;
    let grads = y.sqr()?.sum_all()?.backward()?;
    let weight_grad = grads.get(&weight).expect("the weight takes part");
    println!(
        "spectral_conv: out {:?}, weight grad {:?}",
        y.dims(),
        weight_grad.dims()
    );

    // An FNO learning a periodic moving average in 1D (every mode kept: the
    // average is a convolution), trained by candle-nn's AdamW.
    let u = Tensor::randn(0f32, 1.0, (64, 1, 128), &device)?;
    let target = ((u.roll(1, 2)? + &u)? + u.roll(-1, 2)?)?.affine(1.0 / 3.0, 0.0)?;
    let mut config = FnoConfig::new(&[128], 1, 1, 16);
    config.n_layers = 2;
    let varmap = VarMap::new();
    let model = Fno::new(&config, VarBuilder::from_varmap(&varmap, DType::F32, &device))?;
    let params = ParamsAdamW {
        lr: 3e-3,
        weight_decay: 1e-4,
        ..Default::default()
    };
    let mut optimizer = AdamW::new(varmap.all_vars(), params)?;
    for step in 0..=200 {
        let loss = (model.forward(&u, true)? - &target)?.sqr()?.mean_all()?;
        optimizer.backward_step(&loss)?;
        if step % 50 == 0 {
            println!("step {step}: mse {:.3e}", loss.to_scalar::<f32>()?);
        }
    }

    // Our checkpoint format: `fno infer --checkpoint … [--engine candle]` reads it too.
    let path = std::env::temp_dir().join("candle_fno.safetensors");
    std::fs::write(&path, model.save_safetensors()?)?;
    let reloaded = Fno::load(&std::fs::read(&path)?, None, DType::F32, &device)?;
    let gap = (reloaded.forward(&u, false)? - model.forward(&u, false)?)?
        .abs()?
        .max_all()?;
    println!(
        "saved {}: max |reloaded - trained| {:e}",
        path.display(),
        gap.to_scalar::<f32>()?
    );

    // A neuraloperator export: model.safetensors (a state_dict) and its config.json.
    if let Some(dir) = std::env::args().nth(1) {
        let config = FnoConfig::from_json(&std::fs::read_to_string(format!("{dir}/config.json"))?)?;
        let bytes = std::fs::read(format!("{dir}/model.safetensors"))?;
        let model = Fno::load(&bytes, Some(&config), DType::F32, &device)?;
        let x = Tensor::zeros((1, config.in_channels, 32, 32), DType::F32, &device)?;
        println!("loaded {dir}: output {:?}", model.forward(&x, false)?.dims());
    }
    Ok(())
}

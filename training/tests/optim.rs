//! `FusedAdamW` against Burn's `AdamW` on the same model, data and
//! hyper-parameters: equal parameters after several steps (its first step
//! initialises the moments, later ones update them), with weight decay and a
//! learning rate that changes between steps.

use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::{Tensor, TensorData};
use fno_training::optim::FusedAdamW;

// f32, as the other tests of this binary: NdArray backends of both precisions share
// one device, whose default float type the first to run decides.
type B = Autodiff<NdArray>;

fn values(model: &Linear<B>) -> Vec<f64> {
    let mut values: Vec<f64> = model.weight.val().into_data().convert::<f64>().to_vec().unwrap();
    let bias = model.bias.as_ref().expect("a bias").val();
    values.extend(bias.into_data().convert::<f64>().to_vec::<f64>().unwrap());
    values
}

/// The weights and bias of `model` (a 6→4 linear layer) after four steps of
/// `optim` on a fixed regression problem.
fn trained<O: Optimizer<Linear<B>, B>>(mut model: Linear<B>, mut optim: O) -> Vec<f64> {
    let device = Default::default();
    let x = Tensor::<B, 2>::from_data(
        TensorData::new((0..48).map(|i| (i as f64 * 0.37).sin()).collect(), [8, 6]),
        &device,
    );
    let y = Tensor::<B, 2>::from_data(
        TensorData::new((0..32).map(|i| (i as f64 * 0.11).cos()).collect(), [8, 4]),
        &device,
    );
    for step in 0..4 {
        let loss = (model.forward(x.clone()) - y.clone()).powi_scalar(2).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-2 / (1 + step) as f64, model, grads);
    }
    values(&model)
}

#[test]
fn fused_adamw_steps_as_burns_adamw() {
    // Fixed weights: Burn initialises a parameter lazily, on each clone's first use.
    let device = Default::default();
    let fixed = |n: usize, f: f64| (0..n).map(|i| (i as f64 * f).sin() * 0.4).collect::<Vec<_>>();
    let mut model = LinearConfig::new(6, 4).init::<B>(&device);
    model.weight = Param::from_tensor(Tensor::from_data(TensorData::new(fixed(24, 0.7), [6, 4]), &device));
    model.bias = Some(Param::from_tensor(Tensor::from_data(
        TensorData::new(fixed(4, 1.3), [4]),
        &device,
    )));
    let ours = trained(model.clone(), FusedAdamW::new(1e-6, 1e-2).init::<B, Linear<B>>(None));
    let burns = trained(
        model.clone(),
        AdamWConfig::new()
            .with_epsilon(1e-6)
            .with_weight_decay(1e-2)
            .init::<B, Linear<B>>(),
    );
    let untrained = values(&model);
    assert!(
        ours.iter().zip(&untrained).any(|(a, b)| (a - b).abs() > 1e-3),
        "the steps moved nothing"
    );
    for (i, (a, b)) in ours.iter().zip(&burns).enumerate() {
        assert!(
            (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
            "parameter {i}: {a} vs Burn's {b}"
        );
    }
}

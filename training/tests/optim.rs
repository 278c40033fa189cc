//! `FusedAdamW` against neuraloperator's AdamW written out in f64 (the kernel
//! crate's oracle) on the same model and data: equal parameters after several
//! steps (the first initialises the moments, later ones update them), with
//! weight decay, a learning rate that changes between steps, and a complex
//! parameter whose (re, im) pairs share their second moment.

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use fno_kernels::adamw::{adamw_cpu, AdamWStep};
use fno_training::optim::{gradients_finite, FusedAdamW, LossScaler};

// f32, as the other tests of this binary: NdArray backends of both precisions share
// one device, whose default float type the first to run decides.
type B = Autodiff<NdArray>;

const EPSILON: f32 = 1e-6;
const DECAY: f32 = 1e-2;

/// A linear layer plus `x · spectral`, `spectral` `[6, 4]` read as 6 × 2 complex values.
#[derive(Module, Debug)]
struct Toy<B: Backend> {
    linear: Linear<B>,
    spectral: Param<Tensor<B, 2>>,
}

fn fixed(n: usize, f: f64) -> Vec<f64> {
    (0..n).map(|i| (i as f64 * f).sin() * 0.4).collect()
}

fn param<const D: usize>(v: &[f64], shape: [usize; D]) -> Param<Tensor<B, D>> {
    Param::from_tensor(Tensor::from_data(
        TensorData::new(v.to_vec(), shape),
        &Default::default(),
    ))
}

fn toy() -> Toy<B> {
    // Fixed weights: Burn initialises a parameter lazily, on each clone's first use.
    let mut linear = LinearConfig::new(6, 4).init::<B>(&Default::default());
    linear.weight = param(&fixed(24, 0.7), [6, 4]);
    linear.bias = Some(param(&fixed(4, 1.3), [4]));
    Toy {
        linear,
        spectral: param(&fixed(24, 0.9), [6, 4]),
    }
}

fn loss(model: &Toy<B>) -> Tensor<B, 1> {
    let device = Default::default();
    let x = Tensor::<B, 2>::from_data(
        TensorData::new((0..48).map(|i| (i as f64 * 0.37).sin()).collect(), [8, 6]),
        &device,
    );
    let y = Tensor::<B, 2>::from_data(
        TensorData::new((0..32).map(|i| (i as f64 * 0.11).cos()).collect(), [8, 4]),
        &device,
    );
    let prediction = model.linear.forward(x.clone()) + x.matmul(model.spectral.val());
    (prediction - y).powi_scalar(2).mean()
}

fn values<K: Backend, const D: usize>(t: Tensor<K, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

/// The learning rate of step `step` (from 0).
fn lr(step: usize) -> f64 {
    1e-2 / (1 + step) as f64
}

/// The parameters: weight, bias, spectral.
fn flat(model: &Toy<B>) -> Vec<Vec<f64>> {
    vec![
        values(model.linear.weight.val()),
        values(model.linear.bias.as_ref().unwrap().val()),
        values(model.spectral.val()),
    ]
}

/// Four steps of the oracle: gradients by autodiff, each parameter stepped in f64.
fn reference(pairs: bool) -> Vec<Vec<f64>> {
    let mut model = toy();
    let mut params = flat(&model);
    let mut moments: Vec<Option<(Vec<f64>, Vec<f64>)>> = vec![None; 3];
    for step in 0..4 {
        let mut grads = loss(&model).backward();
        let grad = |p: &Param<Tensor<B, 2>>, grads: &mut _| values(p.grad_remove(grads).unwrap());
        let bias_grad = values(model.linear.bias.as_ref().unwrap().grad_remove(&mut grads).unwrap());
        let g = [
            grad(&model.linear.weight, &mut grads),
            bias_grad,
            grad(&model.spectral, &mut grads),
        ];
        for (k, g) in g.iter().enumerate() {
            let adam = AdamWStep {
                lr: lr(step),
                beta_1: 0.9,
                beta_2: 0.999,
                epsilon: EPSILON,
                weight_decay: DECAY,
                time: step + 1,
                pairs: pairs && k == 2,
                grad_scale: 1.0,
            };
            let m = moments[k].as_ref().map(|(m, v)| (&m[..], &v[..]));
            let (p, m, v) = adamw_cpu(&adam, &params[k], g, m);
            params[k] = p;
            moments[k] = Some((m, v));
        }
        model.linear.weight = param(&params[0], [6, 4]);
        model.linear.bias = Some(param(&params[1], [4]));
        model.spectral = param(&params[2], [6, 4]);
    }
    params
}

fn fused(complex: bool) -> Vec<Vec<f64>> {
    let mut model = toy();
    let ids = complex.then_some(model.spectral.id);
    let mut optim = FusedAdamW::new(EPSILON, DECAY)
        .init::<B, Toy<B>>(None)
        .with_complex_params(ids);
    for step in 0..4 {
        let grads = GradientsParams::from_grads(loss(&model).backward(), &model);
        model = optim.step(lr(step), model, grads);
    }
    flat(&model)
}

fn assert_close(ours: &[Vec<f64>], want: &[Vec<f64>], what: &str) {
    for (k, (a, b)) in ours.iter().zip(want).enumerate() {
        for (i, (a, b)) in a.iter().zip(b).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                "{what}: parameter {k} value {i}: {a} vs {b}"
            );
        }
    }
}

#[test]
fn fused_adamw_steps_as_neuraloperators_adamw() {
    let untrained = flat(&toy());
    let (real, complex) = (fused(false), fused(true));
    assert!(
        real[0].iter().zip(&untrained[0]).any(|(a, b)| (a - b).abs() > 1e-3),
        "the steps moved nothing"
    );
    assert_close(&real, &reference(false), "every parameter real");
    assert_close(&complex, &reference(true), "a complex parameter");
    // The pairs' shared second moment changes the complex parameter's steps.
    let moved = complex[2]
        .iter()
        .zip(&real[2])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        moved > 1e-5,
        "complex pairs stepped as real values (max difference {moved:e})"
    );
}

/// A loss multiplied by a scale, with the optimizer told the scale, steps as
/// the unscaled loss does; a non-finite gradient is seen, skipped and halves
/// the scale, and finite steps double it after the growth interval.
#[test]
fn loss_scaling_steps_as_unscaled_and_skips_non_finite_gradients() {
    let mut model = toy();
    let mut optim = FusedAdamW::new(EPSILON, DECAY).init::<B, Toy<B>>(None);
    let scale = 1024.0;
    for step in 0..4 {
        let grads = GradientsParams::from_grads((loss(&model) * scale).backward(), &model);
        assert!(gradients_finite(&model, &grads));
        optim.set_loss_scale(scale);
        model = optim.step(lr(step), model, grads);
    }
    assert_close(&flat(&model), &fused(false), "a scaled loss");

    let model = toy();
    let grads = GradientsParams::from_grads((loss(&model) * f32::INFINITY).backward(), &model);
    assert!(!gradients_finite(&model, &grads), "an infinite gradient passed");
    let mut scaler = LossScaler::new();
    let start = scaler.scale();
    assert!(!scaler.update(false));
    assert_eq!(scaler.scale(), start / 2.0);
    for _ in 0..1999 {
        assert!(scaler.update(true));
    }
    assert_eq!(scaler.scale(), start / 2.0, "grew before 2000 finite steps");
    assert!(scaler.update(true));
    assert_eq!(scaler.scale(), start);
}

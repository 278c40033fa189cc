//! The point-cloud FNO on wgpu: its output follows the points when they are
//! reordered (a point's prediction depends on where it is, not on its index,
//! which exercises the NUFFTs' sorting and scattering back), and training
//! steps lower its loss on a fixed batch.

use burn::backend::Autodiff;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_models::{PointFno, PointFnoConfig};
use fno_ops::PointCloud;
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;

fn config() -> PointFnoConfig {
    PointFnoConfig {
        modes: vec![6, 8],
        in_channels: 2,
        out_channels: 1,
        hidden_channels: 8,
        n_layers: 2,
        eps: 1e-6,
    }
}

fn values(t: Tensor<Wgpu, 3>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

#[test]
fn predictions_follow_reordered_points() {
    let seed = fresh_seed();
    let device = Default::default();
    let model = PointFno::<Wgpu>::new(&config(), &device);
    let m = 90;
    let coords: Vec<f64> = uniform(m * 2, seed).iter().map(|v| v * 3.0).collect();
    let x: Vec<f32> = uniform(2 * 2 * m, seed + 1).iter().map(|&v| v as f32).collect();
    // Reversed order: point j becomes point m − 1 − j.
    let reversed_coords: Vec<f64> = (0..m).rev().flat_map(|j| [coords[2 * j], coords[2 * j + 1]]).collect();
    let reversed_x: Vec<f32> = (0..4)
        .flat_map(|row| (0..m).rev().map(move |j| (row, j)))
        .map(|(row, j)| x[row * m + j])
        .collect();
    let run = |coords: Vec<f64>, x: Vec<f32>| {
        let points = PointCloud::new(coords, 2).unwrap();
        values(model.forward(Tensor::from_data(TensorData::new(x, [2, 2, m]), &device), &points))
    };
    let y = run(coords, x);
    let y_reversed = run(reversed_coords, reversed_x);
    let back: Vec<f64> = (0..2)
        .flat_map(|b| (0..m).rev().map(move |j| (b, j)))
        .map(|(b, j)| y_reversed[b * m + j])
        .collect();
    let e = relative_l2(&back, &y);
    assert!(
        e < 1e-5,
        "reordering the points changed the predictions by {e:e} (seed {seed})"
    );
    assert!(
        y.iter().all(|v| v.is_finite()) && y.iter().any(|&v| v.abs() > 1e-3),
        "degenerate output"
    );
}

#[test]
fn training_steps_lower_the_loss() {
    type B = Autodiff<Wgpu>;
    // Enough for every seed tried to halve the loss (15 left one in ~20 short of it).
    const STEPS: usize = 25;
    let seed = fresh_seed();
    let device = Default::default();
    // The initial weights from the printed seed too, so that a failure repeats.
    <B as burn::tensor::backend::Backend>::seed(&device, seed);
    let mut model = PointFno::<B>::new(&config(), &device);
    let m = 120;
    let coords: Vec<f64> = uniform(m * 2, seed).iter().map(|v| v * 3.0).collect();
    let points = PointCloud::new(coords.clone(), 2).unwrap();
    let x = Tensor::<B, 3>::from_data(
        TensorData::new(
            uniform(4 * 2 * m, seed + 1)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>(),
            [4, 2, m],
        ),
        &device,
    );
    // A smooth target of the coordinates and the first input channel.
    let target: Vec<f32> = (0..4)
        .flat_map(|b| (0..m).map(move |j| (b, j)))
        .map(|(b, j)| ((coords[2 * j]).sin() * (coords[2 * j + 1]).cos() * (1.0 + 0.1 * b as f64)) as f32)
        .collect();
    let target = Tensor::<B, 3>::from_data(TensorData::new(target, [4, 1, m]), &device);
    let mut optim = AdamConfig::new().init::<B, PointFno<B>>();
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let loss = (model.forward(x.clone(), &points) - target.clone())
            .powi_scalar(2)
            .mean();
        losses.push(loss.clone().into_scalar());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(3e-3, model, grads);
    }
    println!("losses {losses:?} (seed {seed})");
    assert!(
        losses[losses.len() - 1] < 0.5 * losses[0],
        "{STEPS} Adam steps took the loss from {} to {} (seed {seed})",
        losses[0],
        losses[losses.len() - 1]
    );
}

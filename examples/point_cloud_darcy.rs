//! Darcy flow seen only at scattered sensors: a point-cloud FNO (non-uniform
//! spectral convolutions, `fno_models::PointFno`) trained on the values at a
//! fixed random third of the nodes, beside the grid FNO trained on the full
//! grids of the same samples; both judged by the relative L2 error of their
//! test predictions at the sensors.
//! `cargo run --release -p fno-examples --example point_cloud_darcy [-- wgpu|cuda] [--epochs E]`

use std::time::Instant;

use burn::backend::Autodiff;
use burn::module::{AutodiffModule, Module};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Tensor, TensorData};
use fno_datasets::generate::darcy::{generate, DarcyConfig};
use fno_models::{Fno, FnoConfig, PointFno, PointFnoConfig};
use fno_ops::{NufftBackend, PointCloud, SpectralConvBackend, SpectralImpl};

type Error = Box<dyn std::error::Error>;

const RES: usize = 29;
const TRAIN: usize = 250;
const TEST: usize = 50;
const BATCH: usize = 10;

/// Standardised fields `[N, R·R]` and the sensors' node indices.
struct Data {
    a: Vec<f32>,
    u: Vec<f32>,
    sensors: Vec<usize>,
}

impl Data {
    fn field<B: Backend>(&self, values: &[f32], samples: std::ops::Range<usize>, device: &B::Device) -> Tensor<B, 4> {
        let n = samples.len();
        let data = values[samples.start * RES * RES..samples.end * RES * RES].to_vec();
        Tensor::from_data(TensorData::new(data, [n, 1, RES, RES]), device)
    }

    fn at_sensors<B: Backend>(
        &self,
        values: &[f32],
        samples: std::ops::Range<usize>,
        device: &B::Device,
    ) -> Tensor<B, 3> {
        let n = samples.len();
        let data = samples
            .flat_map(|s| self.sensors.iter().map(move |&i| values[s * RES * RES + i]))
            .collect();
        Tensor::from_data(TensorData::new(data, [n, 1, self.sensors.len()]), device)
    }
}

/// Σ over samples of ‖p − t‖ / ‖t‖ (over the last dims).
fn relative_l2<B: Backend, const D: usize>(p: Tensor<B, D>, t: Tensor<B, D>) -> Tensor<B, 1> {
    let n = p.dims()[0];
    let (p, t) = (p.reshape([n as i32, -1]), t.reshape([n as i32, -1]));
    let num = (p - t.clone()).powi_scalar(2).sum_dim(1).sqrt();
    let den = t.powi_scalar(2).sum_dim(1).sqrt();
    (num / den).sum()
}

fn scalar<B: Backend>(t: Tensor<B, 1>) -> f64 {
    t.into_scalar().elem::<f64>()
}

/// Trains `forward` for `epochs`; returns (seconds an epoch, test error at the sensors).
fn train<B, M>(
    mut model: M,
    epochs: usize,
    forward: impl Fn(&M, std::ops::Range<usize>) -> (Tensor<B, 3>, Tensor<B, 3>),
    test: impl Fn(&M::InnerModule, std::ops::Range<usize>) -> (Tensor<B::InnerBackend, 3>, Tensor<B::InnerBackend, 3>),
) -> (f64, f64)
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
{
    let mut optim = AdamConfig::new().init::<B, M>();
    let mut seconds = 0.0;
    for epoch in 0..epochs {
        let start = Instant::now();
        let mut total = 0.0;
        for b in (0..TRAIN).step_by(BATCH) {
            let (p, t) = forward(&model, b..b + BATCH);
            let loss = relative_l2(p, t) / BATCH as f64;
            total += scalar(loss.clone().inner());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        }
        seconds = start.elapsed().as_secs_f64();
        println!(
            "  epoch {:>2}: train loss {:.4} ({seconds:.1} s)",
            epoch + 1,
            total / (TRAIN / BATCH) as f64
        );
    }
    let valid = model.valid();
    let mut error = 0.0;
    for b in (TRAIN..TRAIN + TEST).step_by(BATCH) {
        let (p, t) = test(&valid, b..b + BATCH);
        error += scalar(relative_l2(p, t));
    }
    (seconds, error / TEST as f64)
}

fn run<B: SpectralConvBackend + NufftBackend>(device: &B::Device, epochs: usize) -> Result<(), Error> {
    println!("generating {} Darcy samples on {RES}² nodes", TRAIN + TEST);
    let set = generate(
        &DarcyConfig {
            n: TRAIN + TEST,
            resolution: RES,
            fine_resolution: 2 * RES - 1,
            ..Default::default()
        },
        &mut |_, _| {},
    )?;
    let standardise = |v: &[f32]| {
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let std = (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        v.iter().map(|&x| ((x as f64 - mean) / std) as f32).collect::<Vec<_>>()
    };
    // A third of the nodes as sensors (a fixed random draw).
    let mut state = 12345u64;
    let mut sensors: Vec<usize> = (0..RES * RES)
        .filter(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.is_multiple_of(3)
        })
        .collect();
    sensors.sort_unstable();
    let data = Data {
        a: standardise(&set.inputs.data),
        u: standardise(&set.outputs.data),
        sensors,
    };
    // Node (i, j) of [0, 1]² at 1.5π·(i, j)/(R − 1): the domain fills three
    // quarters of the transforms' period, so values do not wrap onto each other.
    let scale = 1.5 * std::f64::consts::PI / (RES - 1) as f64;
    let coords = data
        .sensors
        .iter()
        .flat_map(|&i| [(i / RES) as f64 * scale, (i % RES) as f64 * scale])
        .collect();
    let points = PointCloud::new(coords, 2)?;
    println!("{} sensors of {} nodes", points.len(), RES * RES);

    let modes = [12, 12];
    let point_config = PointFnoConfig {
        modes: modes.to_vec(),
        in_channels: 1,
        out_channels: 1,
        hidden_channels: 32,
        n_layers: 4,
        eps: 1e-5,
    };
    type A<B> = Autodiff<B>;
    let point_model = PointFno::<A<B>>::new(&point_config, device);
    println!(
        "point-cloud FNO ({} parameters), at the sensors:",
        point_model.num_params()
    );
    let (point_s, point_err) = train::<A<B>, _>(
        point_model,
        epochs,
        |m, s| {
            (
                m.forward(data.at_sensors(&data.a, s.clone(), device), &points),
                data.at_sensors(&data.u, s, device),
            )
        },
        |m, s| {
            (
                m.forward(data.at_sensors(&data.a, s.clone(), device), &points),
                data.at_sensors(&data.u, s, device),
            )
        },
    );

    let mut grid_config = FnoConfig::new(&modes, 1, 1, 32);
    grid_config.n_layers = 4;
    let grid_model = Fno::<A<B>>::new(&grid_config, device)?.with_spectral_impl(SpectralImpl::Unfused);
    println!("grid FNO ({} parameters), on the full grids:", grid_model.num_params());
    let sensors_of = |y: Tensor<B, 4>| {
        let n = y.dims()[0];
        let idx = Tensor::<B, 1, burn::tensor::Int>::from_data(
            TensorData::new(data.sensors.iter().map(|&i| i as i32).collect(), [data.sensors.len()]),
            device,
        );
        y.reshape([n, 1, RES * RES]).select(2, idx)
    };
    let (grid_s, grid_err) = train::<A<B>, _>(
        grid_model,
        epochs,
        |m, s| {
            let y = m.forward(data.field(&data.a, s.clone(), device)).expect("valid input");
            let n = y.dims()[0];
            (
                y.reshape([n, 1, RES * RES]),
                data.field::<A<B>>(&data.u, s, device).reshape([n, 1, RES * RES]),
            )
        },
        |m, s| {
            let y = m.forward(data.field(&data.a, s.clone(), device)).expect("valid input");
            (sensors_of(y), data.at_sensors(&data.u, s, device))
        },
    );
    println!("\ntest relative L2 at the sensors after {epochs} epochs:");
    println!(
        "  point-cloud FNO (sees {} sensors): {point_err:.4}  ({point_s:.1} s an epoch)",
        points.len()
    );
    println!(
        "  grid FNO (sees all {} nodes):     {grid_err:.4}  ({grid_s:.1} s an epoch)",
        RES * RES
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let epochs = args
        .iter()
        .position(|a| a == "--epochs")
        .and_then(|i| args.get(i + 1))
        .map(|e| e.parse())
        .transpose()?
        .unwrap_or(10);
    match args.first().map(String::as_str) {
        Some("cuda") => run::<fno_ops::Cuda>(&Default::default(), epochs),
        _ => run::<fno_ops::Wgpu>(&Default::default(), epochs),
    }
}

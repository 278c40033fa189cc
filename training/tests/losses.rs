//! The losses against direct f64 transcriptions of their definitions, and the
//! schedules against PyTorch's formulas.

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use fno_datasets::generate::Rng;
use fno_training::loss::{relative_h1, relative_l2};
use fno_training::schedule::{Schedule, Scheduler};

fn random(shape: [usize; 4], rng: &mut Rng) -> Vec<f64> {
    (0..shape.iter().product()).map(|_| rng.normal()).collect()
}

fn tensor(values: &[f64], shape: [usize; 4]) -> Tensor<NdArray, 4> {
    let data: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    Tensor::from_data(TensorData::new(data, shape), &Default::default())
}

/// Σ_{b,c} sqrt(Σ terms(x − y)²) / (sqrt(Σ terms(y)²) + 1e-8), with `terms` the values and,
/// for H1, the periodic central differences along both axes.
fn direct(x: &[f64], y: &[f64], [b, c, n, m]: [usize; 4], h1: bool) -> f64 {
    let mut total = 0.0;
    for s in 0..b * c {
        let at = |f: &[f64], i: usize, j: usize| f[s * n * m + (i % n) * m + (j % m)];
        let (mut num, mut den) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..m {
                let d = |f: &[f64]| at(f, i, j);
                let diff: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
                num += d(&diff).powi(2);
                den += d(y).powi(2);
                if h1 {
                    let dx = |f: &[f64]| (at(f, i + 1, j) - at(f, i + n - 1, j)) * n as f64 / 2.0;
                    let dy = |f: &[f64]| (at(f, i, j + 1) - at(f, i, j + m - 1)) * m as f64 / 2.0;
                    num += dx(&diff).powi(2) + dy(&diff).powi(2);
                    den += dx(y).powi(2) + dy(y).powi(2);
                }
            }
        }
        total += num.sqrt() / (den.sqrt() + 1e-8);
    }
    total
}

#[test]
fn losses_match_their_definitions() {
    let mut rng = Rng::new(11, 0);
    let shape = [3, 2, 5, 7];
    let (x, y) = (random(shape, &mut rng), random(shape, &mut rng));
    let value = |t: Tensor<NdArray, 1>| t.into_data().to_vec::<f32>().unwrap()[0] as f64;
    let l2 = value(relative_l2(tensor(&x, shape), tensor(&y, shape)));
    let h1 = value(relative_h1(tensor(&x, shape), tensor(&y, shape)));
    let (want_l2, want_h1) = (direct(&x, &y, shape, false), direct(&x, &y, shape, true));
    assert!((l2 / want_l2 - 1.0).abs() < 1e-5, "L2 {l2} vs {want_l2}");
    assert!((h1 / want_h1 - 1.0).abs() < 1e-5, "H1 {h1} vs {want_h1}");
    // A perfect prediction costs nothing; a zero one costs 1 per sample and channel.
    assert_eq!(value(relative_l2(tensor(&y, shape), tensor(&y, shape))), 0.0);
    let zero = vec![0.0; y.len()];
    assert!((value(relative_h1(tensor(&zero, shape), tensor(&y, shape))) - 6.0).abs() < 1e-5);
}

#[test]
fn schedules_follow_pytorch() {
    let rates = |schedule: Schedule, metrics: &[f64]| {
        let mut s = Scheduler::new(schedule, 1.0);
        metrics
            .iter()
            .map(|&m| {
                let lr = s.lr;
                s.step(m);
                lr
            })
            .collect::<Vec<f64>>()
    };
    let flat = [1.0; 7];
    assert_eq!(
        rates(
            Schedule::Step {
                step_size: 2,
                gamma: 0.5
            },
            &flat
        ),
        [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
    );
    let cosine = rates(Schedule::Cosine { t_max: 4, eta_min: 0.0 }, &flat[..5]);
    let want = [1.0, 0.853_553_390_593_273_8, 0.5, 0.146_446_609_406_726_24, 0.0];
    assert!(
        cosine.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
        "{cosine:?}"
    );
    // Improves twice, then stalls: the rate drops after `patience` + 1 bad epochs.
    let plateau = Schedule::Plateau {
        factor: 0.1,
        patience: 2,
        threshold: 1e-4,
        min_lr: 0.0,
    };
    let lrs = rates(plateau, &[1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4]);
    assert_eq!(lrs[..5], [1.0, 1.0, 1.0, 1.0, 1.0]);
    assert!((lrs[5] - 0.1).abs() < 1e-15 && (lrs[6] - 0.1).abs() < 1e-15, "{lrs:?}");
    assert!(Schedule::Step {
        step_size: 0,
        gamma: 0.5
    }
    .validate()
    .is_err());
}

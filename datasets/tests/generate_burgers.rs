//! The Burgers generator: an exact Cole–Hopf solution, energy decay, agreement
//! with an independent finer run, and the data set's shape and validation.

use std::f64::consts::TAU;

use fno_datasets::generate::burgers::{self, BurgersSolver};
use fno_datasets::generate::{BurgersConfig, GaussianRandomField, Rng};
use fno_datasets::DataError;

fn relative_l2(a: &[f32], b: &[f32]) -> f64 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum();
    (diff / b.iter().map(|y| (*y as f64).powi(2)).sum::<f64>()).sqrt()
}

#[test]
fn cole_hopf_solution_is_reproduced() {
    // φ = 1 + a e^{−ν(2π)²t} cos 2πx solves the heat equation, so
    // u = −2ν φ_x / φ solves Burgers; a = 0.8 gives a steep front.
    let (points, viscosity, amplitude) = (256, 0.1, 0.8);
    let exact = |t: f64| -> Vec<f64> {
        let a = amplitude * (-viscosity * TAU * TAU * t).exp();
        (0..points)
            .map(|j| {
                let x = TAU * j as f64 / points as f64;
                2.0 * viscosity * TAU * a * x.sin() / (1.0 + a * x.cos())
            })
            .collect()
    };
    let solver = BurgersSolver::new(points, viscosity, 1e-3).unwrap();
    let times = [0.1, 0.5];
    for (u, t) in solver.solve(&exact(0.0), &times).unwrap().iter().zip(times) {
        let want = exact(t);
        let error = u.iter().zip(&want).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt()
            / want.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(error < 1e-8, "t = {t}: relative L2 {error}");
    }
}

#[test]
fn energy_decays() {
    let solver = BurgersSolver::new(512, 0.1, 1e-4).unwrap();
    let u0 = GaussianRandomField::new(&[512], 2.0, 5.0, 25.0)
        .unwrap()
        .sample(&mut Rng::new(4, 0))
        .unwrap();
    let times: Vec<f64> = (1..=10).map(|k| 0.1 * k as f64).collect();
    let energy = |u: &[f64]| u.iter().map(|v| v * v).sum::<f64>();
    let mut previous = energy(&u0);
    assert!(previous > 1.0);
    for u in solver.solve(&u0, &times).unwrap() {
        assert!(energy(&u) < previous);
        previous = energy(&u);
    }
}

#[test]
fn a_finer_run_with_a_smaller_step_agrees() {
    // The random field draws the same low modes on every grid, so both runs start
    // from the same smooth initial condition up to the fine run's modes above 256
    // (each below 1e-5), which viscosity removes long before t = 1.
    let coarse = BurgersConfig {
        n: 2,
        resolution: 128,
        fine_resolution: 512,
        dt: 2e-4,
        ..BurgersConfig::default()
    };
    let fine = BurgersConfig {
        fine_resolution: 2048,
        dt: 1e-4,
        ..coarse.clone()
    };
    let a = burgers::generate(&coarse, &mut |_, _| {}).unwrap();
    let b = burgers::generate(&fine, &mut |_, _| {}).unwrap();
    assert_eq!(a.outputs.shape, [2, 1, 128]);
    let start = relative_l2(&a.inputs.data, &b.inputs.data);
    assert!(start < 1e-3, "initial conditions differ by {start}");
    let error = relative_l2(&a.outputs.data, &b.outputs.data);
    eprintln!("coarse vs fine run at t = 1: relative L2 {error:.2e}");
    assert!(error < 1e-5, "relative L2 {error}");
    assert!(relative_l2(&a.inputs.data, &a.outputs.data) > 0.1, "the solution moves");
}

#[test]
fn invalid_configs_are_rejected() {
    let base = BurgersConfig {
        n: 1,
        resolution: 64,
        fine_resolution: 128,
        ..BurgersConfig::default()
    };
    let invalid = [
        BurgersConfig { n: 0, ..base.clone() },
        BurgersConfig {
            resolution: 96,
            ..base.clone()
        },
        BurgersConfig {
            viscosity: -0.1,
            ..base.clone()
        },
        BurgersConfig {
            dt: 0.3,
            ..base.clone()
        },
        BurgersConfig {
            sigma: f64::NAN,
            ..base.clone()
        },
    ];
    for cfg in invalid {
        let result = burgers::generate(&cfg, &mut |_, _| {});
        assert!(matches!(result, Err(DataError::Invalid(_))), "{cfg:?} was accepted");
    }
}

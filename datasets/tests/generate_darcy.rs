//! The Darcy generator: the discrete equation holds, subsampling, determinism,
//! config validation, and the random field's spectrum.

use fno_datasets::generate::{darcy, DarcyConfig, GaussianRandomField, Rng};
use fno_datasets::DataError;

fn small_config() -> DarcyConfig {
    DarcyConfig {
        n: 3,
        resolution: 9,
        fine_resolution: 33,
        seed: 7,
        ..DarcyConfig::default()
    }
}

fn relative_residual(a: &[f64], u: &[f64], r: usize) -> f64 {
    let applied = darcy::apply_operator(a, u, r);
    let mut squared = 0.0;
    for i in 1..r - 1 {
        for j in 1..r - 1 {
            squared += (applied[i * r + j] - 1.0).powi(2);
        }
    }
    squared.sqrt() / (r - 2) as f64
}

#[test]
fn solver_satisfies_the_discrete_equation() {
    let cfg = small_config();
    let r = 41;
    let field = GaussianRandomField::new(&[r, r], cfg.alpha, cfg.tau, 1.0).unwrap();
    let a = darcy::coefficient(&field, &mut Rng::new(1, 0), &cfg).unwrap();
    assert!(
        a.contains(&12.0) && a.contains(&3.0),
        "the coefficient should take both values"
    );
    let u = darcy::solve(&a, r, 1e-10).unwrap();
    assert!(relative_residual(&a, &u, r) < 1e-9);
    assert!(u.iter().all(|&v| v >= 0.0), "the maximum principle gives u ≥ 0");
    assert!(u[..r].iter().all(|&v| v == 0.0), "boundary values are zero");
}

#[test]
fn generated_fine_grid_solves_the_equation() {
    let cfg = DarcyConfig {
        resolution: 33,
        ..small_config()
    };
    let data = darcy::generate(&cfg, &mut |_, _| {}).unwrap();
    assert_eq!(data.inputs.shape, [3, 1, 33, 33]);
    assert_eq!(data.outputs.shape, [3, 1, 33, 33]);
    for i in 0..3 {
        let (a, u) = data.sample(i);
        let a: Vec<f64> = a.iter().map(|&v| v as f64).collect();
        let u: Vec<f64> = u.iter().map(|&v| v as f64).collect();
        // f32 storage of u limits the residual to about 1e-4.
        assert!(relative_residual(&a, &u, 33) < 1e-3);
    }
}

#[test]
fn coarse_data_subsample_the_fine_solve_and_are_deterministic() {
    let mut reports = Vec::new();
    let coarse = darcy::generate(&small_config(), &mut |done, total| reports.push((done, total))).unwrap();
    assert_eq!(reports.last(), Some(&(3, 3)));
    assert_eq!(reports.len(), 3);
    assert_eq!(coarse.inputs.shape, [3, 1, 9, 9]);
    assert_eq!(coarse.metadata["pde"], "darcy");
    assert_eq!(coarse.metadata["seed"], "7");
    let fine = darcy::generate(
        &DarcyConfig {
            resolution: 33,
            ..small_config()
        },
        &mut |_, _| {},
    )
    .unwrap();
    let subsampled = fine.select(0..3, 4).unwrap();
    assert_eq!(subsampled.inputs, coarse.inputs);
    assert_eq!(subsampled.outputs, coarse.outputs);

    let again = darcy::generate(&small_config(), &mut |_, _| {}).unwrap();
    assert_eq!(again.outputs, coarse.outputs);
    let other_seed = darcy::generate(
        &DarcyConfig {
            seed: 8,
            ..small_config()
        },
        &mut |_, _| {},
    )
    .unwrap();
    assert_ne!(other_seed.inputs, coarse.inputs);
}

#[test]
fn invalid_configs_are_rejected() {
    let invalid = [
        DarcyConfig { n: 0, ..small_config() },
        DarcyConfig {
            resolution: 10,
            ..small_config()
        },
        DarcyConfig {
            resolution: 1,
            ..small_config()
        },
        DarcyConfig {
            tau: 0.0,
            ..small_config()
        },
        DarcyConfig {
            coefficient_low: -1.0,
            ..small_config()
        },
        DarcyConfig {
            tolerance: f64::NAN,
            ..small_config()
        },
    ];
    for cfg in invalid {
        let result = darcy::generate(&cfg, &mut |_, _| {});
        assert!(matches!(result, Err(DataError::Invalid(_))), "{cfg:?} was accepted");
    }
}

/// The pointwise variance of the field is the sum of its spectrum:
/// Σ_{k≠0} 2σ² ((2π|k|)² + τ²)^(−α) (the √2 of the FNO convention squared).
#[test]
fn random_field_has_the_stated_spectrum() {
    let (n, alpha, tau) = (16, 2.0, 3.0);
    let sigma = GaussianRandomField::default_sigma(alpha, tau, 2);
    assert!((sigma - 3.0f64.powf(1.0)).abs() < 1e-12);
    let field = GaussianRandomField::new(&[n, n], alpha, tau, sigma).unwrap();
    let mut expected = 0.0;
    for kx in -(n as i64 / 2)..n as i64 / 2 {
        for ky in -(n as i64 / 2)..n as i64 / 2 {
            if (kx, ky) != (0, 0) {
                let eigen = 4.0 * std::f64::consts::PI.powi(2) * (kx * kx + ky * ky) as f64 + tau * tau;
                expected += 2.0 * sigma * sigma * eigen.powf(-alpha);
            }
        }
    }
    let mut rng = Rng::new(3, 0);
    let (samples, mut sum_squares) = (2000, 0.0);
    for _ in 0..samples {
        let u = field.sample(&mut rng).unwrap();
        assert!(u.iter().sum::<f64>().abs() < 1e-9, "zero mean mode");
        sum_squares += u.iter().map(|v| v * v).sum::<f64>() / u.len() as f64;
    }
    let variance = sum_squares / samples as f64;
    assert!(
        (variance / expected - 1.0).abs() < 0.05,
        "variance {variance}, expected {expected}"
    );
}

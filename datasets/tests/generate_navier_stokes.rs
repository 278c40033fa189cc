//! The Navier–Stokes generator: exact solutions (a decaying Taylor–Green
//! vortex, the forced single-shell flow), a divergence-free velocity whose curl
//! is the vorticity, enstrophy decay when unforced, and the data set's shape,
//! determinism and validation.

use std::f64::consts::TAU;

use fno_datasets::generate::navier_stokes::{self, NavierStokesSolver};
use fno_datasets::generate::{NavierStokesConfig, Rng};
use fno_datasets::DataError;

/// `f` on `n²` points, `x = i/n` along axis 0 and `y = j/n` along axis 1.
fn grid_field(n: usize, f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    (0..n * n)
        .map(|at| f((at / n) as f64 / n as f64, (at % n) as f64 / n as f64))
        .collect()
}

fn relative_l2(a: &[f64], b: &[f64]) -> f64 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    (diff / b.iter().map(|y| y * y).sum::<f64>()).sqrt()
}

/// The derivative along `axis` by a naive DFT (independent of the FFT plans);
/// the Nyquist mode, which has no odd derivative on a real grid, is dropped.
fn spectral_derivative(f: &[f64], n: usize, axis: usize) -> Vec<f64> {
    let signed = |k: usize| if 2 * k < n { k as f64 } else { k as f64 - n as f64 };
    let mut out = vec![0.0; n * n];
    for k1 in 0..n {
        for k2 in 0..n {
            let k = [k1, k2][axis];
            if 2 * k == n {
                continue;
            }
            let (mut re, mut im) = (0.0, 0.0);
            for (at, &v) in f.iter().enumerate() {
                let phase = -TAU * ((k1 * (at / n)) as f64 + (k2 * (at % n)) as f64) / n as f64;
                re += v * phase.cos();
                im += v * phase.sin();
            }
            // Multiply by 2πik and scatter e^{2πi k·x} / n² back.
            let (dre, dim) = (-TAU * signed(k) * im, TAU * signed(k) * re);
            for (at, o) in out.iter_mut().enumerate() {
                let phase = TAU * ((k1 * (at / n)) as f64 + (k2 * (at % n)) as f64) / n as f64;
                *o += (dre * phase.cos() - dim * phase.sin()) / (n * n) as f64;
            }
        }
    }
    out
}

#[test]
fn taylor_green_vortex_decays_at_the_exact_rate() {
    // sin 2πx sin 2πy is a steady Euler flow (ψ ∝ w, so u·∇w = 0): only viscosity acts.
    let (n, viscosity, dt) = (32, 1e-2, 1e-3);
    let solver = NavierStokesSolver::new(n, viscosity, dt, 0.0).unwrap();
    let w0 = grid_field(n, |x, y| 10.0 * (TAU * x).sin() * (TAU * y).sin());
    let times = [0.5, 1.0];
    for (w, t) in solver.solve(&w0, &times).unwrap().iter().zip(times) {
        let decay = (-2.0 * TAU * TAU * viscosity * t).exp();
        let exact: Vec<f64> = w0.iter().map(|v| v * decay).collect();
        assert!(relative_l2(w, &exact) < 1e-7, "t = {t}: {}", relative_l2(w, &exact));
    }
}

#[test]
fn forced_shell_approaches_its_steady_state_exactly() {
    // The forcing's modes (±1, ±1) form one shell, again with no advection:
    // w(t) = f (1 − e^{−ν λ t}) / (ν λ), λ = 2 (2π)².
    let (n, viscosity, dt, scale) = (16, 5e-2, 1e-3, 0.1);
    let solver = NavierStokesSolver::new(n, viscosity, dt, scale).unwrap();
    let lambda = 2.0 * TAU * TAU;
    let t = 0.5;
    let w = solver.solve(&vec![0.0; n * n], &[t]).unwrap().remove(0);
    let growth = (1.0 - (-viscosity * lambda * t).exp()) / (viscosity * lambda);
    let exact = grid_field(n, |x, y| {
        scale * growth * ((TAU * (x + y)).sin() + (TAU * (x + y)).cos())
    });
    assert!(relative_l2(&w, &exact) < 1e-5, "{}", relative_l2(&w, &exact));
}

#[test]
fn velocity_is_divergence_free_and_its_curl_is_the_vorticity() {
    // Random zero-mean modes below the Nyquist frequency, where the naive
    // spectral derivatives are exact.
    let n = 16;
    let mut rng = Rng::new(5, 0);
    let modes: Vec<(f64, f64, f64, f64)> = (0..12)
        .map(|_| {
            let k = |rng: &mut Rng| (rng.uniform() * 11.0).floor() - 5.0;
            let (kx, ky) = (k(&mut rng), k(&mut rng));
            let (kx, ky) = if (kx, ky) == (0.0, 0.0) { (1.0, 2.0) } else { (kx, ky) };
            (kx, ky, rng.normal(), rng.normal())
        })
        .collect();
    let w = grid_field(n, |x, y| {
        modes
            .iter()
            .map(|&(kx, ky, a, b)| {
                let phase = TAU * (kx * x + ky * y);
                a * phase.cos() + b * phase.sin()
            })
            .sum()
    });
    let solver = NavierStokesSolver::new(n, 1e-3, 1e-4, 0.0).unwrap();
    let (u, v) = solver.velocity(&w).unwrap();
    let (ux, vy) = (spectral_derivative(&u, n, 0), spectral_derivative(&v, n, 1));
    let scale = ux.iter().map(|a| a * a).sum::<f64>().sqrt();
    let divergence: f64 = ux.iter().zip(&vy).map(|(a, b)| (a + b).powi(2)).sum::<f64>().sqrt();
    assert!(
        scale > 1e-3 && divergence < 1e-10 * scale,
        "divergence {divergence} vs {scale}"
    );
    let (vx, uy) = (spectral_derivative(&v, n, 0), spectral_derivative(&u, n, 1));
    let curl: Vec<f64> = vx.iter().zip(&uy).map(|(a, b)| a - b).collect();
    assert!(
        relative_l2(&curl, &w) < 1e-10,
        "curl vs vorticity {}",
        relative_l2(&curl, &w)
    );
}

#[test]
fn unforced_enstrophy_and_energy_decay() {
    let cfg = NavierStokesConfig {
        n: 1,
        resolution: 32,
        fine_resolution: 32,
        viscosity: 1e-3,
        final_time: 1.0,
        snapshot_interval: 0.125,
        dt: 1e-3,
        forcing: 0.0,
        ..NavierStokesConfig::default()
    };
    let data = navier_stokes::generate(&cfg, &mut |_, _| {}).unwrap();
    let (w0, snapshots) = data.sample(0);
    let solver = NavierStokesSolver::new(32, cfg.viscosity, cfg.dt, 0.0).unwrap();
    let measures = |w: &[f32]| {
        let w: Vec<f64> = w.iter().map(|&v| v as f64).collect();
        let (u, v) = solver.velocity(&w).unwrap();
        let enstrophy: f64 = w.iter().map(|v| v * v).sum();
        let energy: f64 = u.iter().zip(&v).map(|(a, b)| a * a + b * b).sum();
        (enstrophy, energy)
    };
    let mut previous = measures(w0);
    for snapshot in snapshots.chunks_exact(32 * 32) {
        let now = measures(snapshot);
        assert!(now.0 < previous.0 && now.1 < previous.1, "{now:?} after {previous:?}");
        previous = now;
    }
}

fn small_config() -> NavierStokesConfig {
    NavierStokesConfig {
        n: 2,
        resolution: 8,
        fine_resolution: 16,
        seed: 3,
        final_time: 0.02,
        snapshot_interval: 0.01,
        dt: 1e-3,
        ..NavierStokesConfig::default()
    }
}

#[test]
fn data_sets_are_snapshots_subsampled_and_deterministic() {
    let data = navier_stokes::generate(&small_config(), &mut |_, _| {}).unwrap();
    assert_eq!(data.inputs.shape, [2, 1, 8, 8]);
    assert_eq!(data.outputs.shape, [2, 2, 8, 8]);
    assert_eq!(data.metadata["pde"], "navier-stokes");
    let fine = navier_stokes::generate(
        &NavierStokesConfig {
            resolution: 16,
            ..small_config()
        },
        &mut |_, _| {},
    )
    .unwrap();
    let subsampled = fine.select(0..2, 2).unwrap();
    assert_eq!(subsampled.inputs, data.inputs);
    assert_eq!(subsampled.outputs, data.outputs);
    assert_ne!(data.outputs.data[..64], data.outputs.data[64..128], "the flow evolves");
    let again = navier_stokes::generate(&small_config(), &mut |_, _| {}).unwrap();
    assert_eq!(again.outputs, data.outputs);
}

#[test]
fn invalid_configs_are_rejected() {
    let invalid = [
        NavierStokesConfig { n: 0, ..small_config() },
        NavierStokesConfig {
            resolution: 5,
            ..small_config()
        },
        NavierStokesConfig {
            viscosity: 0.0,
            ..small_config()
        },
        NavierStokesConfig {
            dt: 3e-3,
            ..small_config()
        },
        NavierStokesConfig {
            snapshot_interval: 0.015,
            ..small_config()
        },
        NavierStokesConfig {
            forcing: f64::INFINITY,
            ..small_config()
        },
    ];
    for cfg in invalid {
        let result = navier_stokes::generate(&cfg, &mut |_, _| {});
        assert!(matches!(result, Err(DataError::Invalid(_))), "{cfg:?} was accepted");
    }
}

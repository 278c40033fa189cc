//! The fused spectral convolution kernel on wgpu (lavapipe in CI) against an f64
//! oracle built from independent pieces: the plans' CPU transforms (rustfft) and
//! a naive per-mode contraction. Cases cover real and complex pencils, every
//! window kind, odd lengths and modes, a changed output length, inner positions
//! with their own weights, shared weights, the input gradient's conjugated and
//! transposed weight with a per-mode scale, the bias added to one mode, tiles
//! cut short on every side, and the spectrum the kernel writes for the weight
//! gradient. Outputs start as NaN
//! so that unwritten elements show.

use cubecl::prelude::*;
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::cgemm::{ModeBias, Strides};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, ModeOrder, Norm};
use fno_kernels::fused::{FusedBuffers, FusedSpectralConv};
use fno_kernels::fused::{FusedConfig, Schedule};
use fno_kernels::limits::DeviceLimits;
use fno_testing::{fresh_seed, relative_l2, uniform};

struct Case {
    batch: usize,
    cin: usize,
    cout: usize,
    n_in: usize,
    n_out: usize,
    modes: usize,
    inner: usize,
    real: bool,
    order: (ModeOrder, ModeOrder),
    norm: Norm,
    shared: bool,
    adjoint: bool,
    biased: bool,
}

impl Case {
    /// A 1D real convolution (R2C → C2R, prefix windows, forward norm).
    fn real(batch: usize, cin: usize, cout: usize, n_in: usize, n_out: usize, modes: usize) -> Self {
        Case {
            batch,
            cin,
            cout,
            n_in,
            n_out,
            modes,
            inner: 1,
            real: true,
            order: (ModeOrder::Fft, ModeOrder::Fft),
            norm: Norm::Forward,
            shared: false,
            adjoint: false,
            biased: false,
        }
    }

    fn plans(&self) -> (FftPlan, FftPlan) {
        let (kind_f, kind_i) = if self.real {
            (FftKind::R2C, FftKind::C2R)
        } else {
            (FftKind::C2C, FftKind::C2C)
        };
        let shape = |c: usize, len: usize| {
            let mut s = vec![self.batch, c, len];
            if self.inner > 1 {
                s.push(self.inner);
            }
            s
        };
        let forward = FftDesc::new(&shape(self.cin, self.n_in), &[2], kind_f, Direction::Forward)
            .modes(&[self.modes])
            .norm(self.norm)
            .mode_order(self.order.0);
        let inverse = FftDesc::new(&shape(self.cout, self.modes), &[2], kind_i, Direction::Inverse)
            .modes(&[self.modes])
            .lengths(&[self.n_out])
            .norm(self.norm)
            .mode_order(self.order.1);
        (FftPlan::new(forward).unwrap(), FftPlan::new(inverse).unwrap())
    }

    fn problem(&self) -> FusedSpectralConv {
        let (forward, inverse) = self.plans();
        let modes = self.modes * self.inner;
        let per_mode = if self.shared { 1 } else { modes };
        // Stored [contracted, out] or, for the input gradient, [out, contracted].
        let (row, col) = if self.adjoint {
            (per_mode, self.cin * per_mode)
        } else {
            (self.cout * per_mode, per_mode)
        };
        let weight = Strides {
            row,
            col,
            mode: if self.shared { 0 } else { 1 },
        };
        let mut problem = FusedSpectralConv::new(&forward, &inverse, weight).unwrap();
        if self.adjoint {
            problem.conj_weight = true;
            problem.mode_scale = (0..self.modes.min(3)).map(|i| 0.5 + i as f32).collect();
        }
        if self.biased {
            // A mode away from the first, at an inner position away from the first.
            problem.bias = Some(ModeBias {
                mode: (self.modes / 2) * self.inner + self.inner / 2,
                factor: 1.5,
            });
        }
        problem
    }

    /// `(y, spectrum)` in f64 from rustfft and a naive contraction.
    #[allow(clippy::needless_range_loop)]
    fn oracle(&self, problem: &FusedSpectralConv, x: &[f64], w: &[f64], bias: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (forward, inverse) = self.plans();
        let spectrum = forward.execute_cpu(x).unwrap();
        let (m, e_n) = (self.modes, self.inner);
        let ws = problem.weight;
        let mut modes = vec![0.0; 2 * self.batch * self.cout * m * e_n];
        for b in 0..self.batch {
            for o in 0..self.cout {
                for k in 0..m * e_n {
                    let (mut re, mut im) = (0.0, 0.0);
                    for c in 0..self.cin {
                        let si = 2 * ((b * self.cin + c) * m * e_n + k);
                        let wi = 2 * (c * ws.row + o * ws.col + k * ws.mode);
                        let (xr, xi, wr) = (spectrum[si], spectrum[si + 1], w[wi]);
                        let wim = if problem.conj_weight { -w[wi + 1] } else { w[wi + 1] };
                        re += xr * wr - xi * wim;
                        im += xr * wim + xi * wr;
                    }
                    let s = match problem.mode_scale.len() {
                        0 => 1.0,
                        n => problem.mode_scale[k % n] as f64,
                    };
                    let at = 2 * ((b * self.cout + o) * m * e_n + k);
                    modes[at] = re * s;
                    if let Some(mb) = problem.bias.filter(|mb| mb.mode == k) {
                        modes[at] += mb.factor as f64 * bias[o];
                    }
                    modes[at + 1] = im * s;
                }
            }
        }
        (inverse.execute_cpu(&modes).unwrap(), spectrum)
    }
}

/// The relative errors of the output and of the spectrum (0 where the
/// configuration writes none).
fn run(client: &ComputeClient<WgpuRuntime>, case: &Case, cfg: FusedConfig, seed: u64) -> (f64, f64) {
    let problem = case.problem();
    let (ex, ew, ey, es) = problem.extents();
    let x = uniform(ex, seed);
    let w = uniform(ew, seed + 1);
    let bias = uniform(problem.cout, seed + 2);
    let (want_y, want_spectrum) = case.oracle(&problem, &x, &w, &bias);
    let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<_>>();
    let hx = client.create_from_slice(f32::as_bytes(&f32s(&x)));
    let hw = client.create_from_slice(f32::as_bytes(&f32s(&w)));
    let hy = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; ey]));
    let hs = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; es]));
    let hb = client.create_from_slice(f32::as_bytes(&f32s(&bias)));
    let tables = problem.tables(client);
    let with_spectrum = cfg.write_spectrum;
    let buffers = FusedBuffers {
        x: &hx,
        weight: &hw,
        y: &hy,
        spectrum: with_spectrum.then_some(&hs),
        bias: case.biased.then_some(&hb),
    };
    problem.launch_with(cfg, client, &tables, buffers);
    let read = |h| {
        f32::from_bytes(&client.read_one(h).unwrap())
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>()
    };
    let got_y = read(hy);
    assert!(got_y.iter().all(|v| v.is_finite()), "unwritten output");
    if !with_spectrum {
        return (relative_l2(&got_y, &want_y), 0.0);
    }
    let got_spectrum = read(hs);
    assert!(got_spectrum.iter().all(|v| v.is_finite()), "unwritten spectrum");
    (relative_l2(&got_y, &want_y), relative_l2(&got_spectrum, &want_spectrum))
}

#[test]
fn fused_matches_the_oracle() {
    let seed = fresh_seed();
    let real = Case::real;
    let shifted = (ModeOrder::Shifted, ModeOrder::ShiftedOddLower);
    let cases = [
        real(2, 3, 5, 16, 16, 5),
        Case {
            biased: true,
            ..real(5, 7, 33, 63, 63, 17)
        },
        real(1, 1, 1, 1, 1, 1),
        real(3, 9, 4, 40, 57, 13),
        real(9, 4, 6, 100, 100, 51),
        Case {
            norm: Norm::Ortho,
            ..real(4, 5, 3, 30, 24, 9)
        },
        Case {
            shared: true,
            ..real(3, 6, 7, 32, 32, 12)
        },
        // 31 is prime with 30 = 2·3·5: both stages run Rader's algorithm.
        Case {
            adjoint: true,
            norm: Norm::Backward,
            ..real(6, 5, 9, 31, 31, 10)
        },
        Case {
            real: false,
            inner: 7,
            order: shifted,
            biased: true,
            ..real(3, 5, 6, 21, 21, 8)
        },
        Case {
            real: false,
            inner: 3,
            order: shifted,
            adjoint: true,
            ..real(2, 4, 3, 16, 16, 7)
        },
        Case {
            real: false,
            inner: 5,
            order: (ModeOrder::Fft, ModeOrder::Fft),
            shared: true,
            ..real(2, 3, 4, 12, 12, 12)
        },
    ];
    // The cases run side by side, on a device per core.
    let indexed: Vec<(usize, &Case)> = cases.iter().enumerate().collect();
    let worsts = crate::spread(&crate::wgpu_clients(), &indexed, |client, &(i, case)| {
        let seed = seed + 10 * i as u64;
        let limits = DeviceLimits::of(client);
        let chosen = case.problem().config(true, &limits);
        // The chosen tiles (whole channel chunks beyond these small problems'
        // channels), and large tiles cut short by these shapes on every side.
        let mut largest = FusedConfig {
            batch_tile: 4,
            out_tile: 32,
            ..chosen.clone()
        };
        while largest.accumulators() > 32 || largest.shared_bytes() > 48 * 1024 {
            largest.out_tile /= 2;
        }
        // The resident schedule as chosen for this device, and with odd
        // tiles where they fit (a cube of one thread has no two groups):
        // several output tiles, groups cut short, rounds of few modes.
        let problem = case.problem();
        let resident = problem.resident_config(true, &limits).expect("small problems fit");
        let odd = FusedConfig {
            batch_tile: 2,
            out_tile: 3,
            schedule: Schedule::Resident {
                cin: problem.cin,
                group: 2,
            },
            ..resident.clone()
        };
        // Cubes of more threads where the problem has the channels for them:
        // groups of fewer output channels, longer stage tiles (CUDA runs 512;
        // lavapipe's 32 KiB of shared memory fits them only on small problems).
        let wide = problem.resident_tiles(true, 512, 2, resident.out_tile);
        // And as inference launches it: no spectrum written.
        let inference = problem.chosen_config(false, &limits);
        let mut configs = vec![chosen, largest, resident, inference];
        configs.extend([odd, wide].into_iter().filter(|cfg| cfg.fits(&limits)));
        let mut worst: f64 = 0.0;
        for cfg in configs {
            let (ey, es) = run(client, case, cfg.clone(), seed);
            assert!(
                ey < 1e-5 && es < 1e-5,
                "case {i} (seed {seed}, {cfg:?}): output {ey:.2e}, spectrum {es:.2e}"
            );
            worst = worst.max(ey).max(es);
        }
        worst
    });
    let worst = worsts.into_iter().fold(0.0, f64::max);
    println!("fused: worst relative L2 error {worst:.2e} (seed {seed})");
}

/// The tiles chosen for the benchmark's shapes (and larger channel counts) fit
/// 48 KiB of shared memory and split the work evenly.
#[test]
fn chosen_tiles_fit_every_benchmark_shape() {
    let real = |batch, channels, n, modes| Case::real(batch, channels, channels, n, n, modes);
    let leading = |batch, channels, n, modes, inner| Case {
        real: false,
        inner,
        ..real(batch, channels, n, modes)
    };
    for case in [
        real(64, 64, 1024, 17),
        real(256, 64, 256, 33),
        real(512, 128, 256, 65),
        real(256, 256, 128, 64),
        leading(32, 32, 64, 24, 13),
        leading(16, 64, 256, 64, 33),
        leading(8, 128, 256, 64, 33),
        leading(8, 64, 421, 48, 25),
    ] {
        for spectrum in [false, true] {
            let cfg = case.problem().config(spectrum, &DeviceLimits::H100);
            assert!(cfg.shared_bytes() <= 48 * 1024, "{cfg:?}");
            assert!(cfg.accumulators() <= 32, "{cfg:?}");
            assert!(cfg.threads() <= 1024, "{cfg:?}");
        }
    }
}

//! Times the spectral convolution (Fused and Unfused kernels and the Reference
//! path) on one device and prints one JSON line per case, for `spectral_compare.py` to set
//! beside neuraloperator's SpectralConv measured in the same run.
//!
//! Usage: `spectral_bench [cuda|wgpu] [--quick] [--turbofno] [--cgemm-sweep] [--fused-sweep]
//! [--fault-tolerance] [--only I] [--reps N] [--no-reference]`. Cases: those of
//! ../shared/anchors/spectral_torch.py (dim, batch, channels, grid, n_modes), or
//! with `--turbofno` TurboFNO's sweeps (see [`TURBOFNO_SWEEP`]);
//! `--only I` runs case I (from 0) alone, e.g. under a profiler with `--reps 1`;
//! `--impl unfused|fused` times that path alone and `--forward-only` skips the
//! backward (so that a profile holds one path's forward kernels only).
//! `--cgemm-sweep` instead times the forward CGEMM of every case under a range
//! of block shapes (each checked against the default one), for tuning;
//! `--fused-sweep` times the fused kernel of every case's first axis under a
//! range of batch and output-channel tiles (and, resident, cube sizes).
//! `--fault-tolerance` times the
//! Unfused path unchecked, detecting and correcting faults (docs/abft.md),
//! in turn, with the faults the checks counted (false positives).

use std::time::Instant;

mod anchors;

use anchors::{median_ms, stored_modes, Case, Measured, CASES};

impl Measured {
    const NOT_RUN: Measured = Measured {
        ms: f64::NAN,
        host_ms: f64::NAN,
    };
}

use burn::backend::Autodiff;
use burn::tensor::{Distribution, Tensor};
use burn_cubecl::{CubeBackend, CubeRuntime};
use cubecl::prelude::*;
use fno_kernels::cgemm::{spectral, CgemmConfig, CgemmProblem};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};
use fno_kernels::fused::{FusedBuffers, FusedConfig, FusedSpectralConv};
use fno_kernels::limits::DeviceLimits;
use fno_ops::spec::{InverseShift, FORWARD_ORDER};
use fno_ops::{spectral_conv, FaultTolerance, SpectralConvBackend, SpectralConvSpec, SpectralImpl};
use fno_testing::{relative_l2_f32, uniform_f32};

/// TurboFNO's evaluation grid (its Figures 14–15), as real FNO layers: 1D FFT
/// sizes 128 and 256 keeping 64 or 128 frequencies (TurboFNO truncates a C2C
/// spectrum to its first m entries; the real transform's n_modes = 2m keeps
/// frequencies 0…m), hidden sizes 8 to 128, batch·X up to 32768 signals; 2D
/// 128² and 256² at half of each axis. Per-mode weights, as neuraloperator's.
const TURBOFNO_SWEEP: &[Case] = &[
    (1, 1024, 8, 128, &[128]),
    (1, 32768, 8, 128, &[128]),
    (1, 1024, 32, 128, &[128]),
    (1, 32768, 32, 128, &[128]),
    (1, 1024, 128, 128, &[128]),
    (1, 8192, 128, 128, &[128]),
    (1, 1024, 8, 256, &[128]),
    (1, 32768, 8, 256, &[128]),
    (1, 1024, 32, 256, &[128]),
    (1, 32768, 32, 256, &[128]),
    (1, 1024, 128, 256, &[128]),
    (1, 8192, 128, 256, &[128]),
    (1, 1024, 32, 256, &[256]),
    (1, 32768, 32, 256, &[256]),
    (1, 8192, 128, 256, &[256]),
    (2, 16, 32, 128, &[64, 64]),
    (2, 16, 64, 128, &[64, 64]),
    (2, 8, 32, 256, &[128, 128]),
    (2, 8, 64, 256, &[128, 128]),
];

struct Timing {
    fwd: Measured,
    fwd_bwd: Measured,
}

type Inner<R> = CubeBackend<R, f32, i32, u8>;

/// The same random inputs for every implementation of a case.
struct Inputs<R: CubeRuntime, const D: usize, const W: usize> {
    x: Tensor<Autodiff<Inner<R>>, D>,
    w: Tensor<Autodiff<Inner<R>>, W>,
    bias: Tensor<Autodiff<Inner<R>>, 1>,
}

fn time_impl<R: CubeRuntime, const D: usize, const W: usize>(
    imp: SpectralImpl,
    spec: &SpectralConvSpec,
    inputs: &Inputs<R, D, W>,
    opts: &Options,
) -> Result<(Timing, Vec<f32>), String> {
    if opts.only_impl.is_some_and(|only| only != imp) {
        return Err("not run".into());
    }
    let reps = opts.reps;
    let device = inputs.x.device();
    let dist = Distribution::Uniform(-1.0, 1.0);
    let (x, w, bias) = (inputs.x.clone(), inputs.w.clone(), inputs.bias.clone());
    // Forward without autodiff; errors (unsupported sizes) surface here.
    let (xi, wi, bi) = (x.clone().inner(), w.clone().inner(), bias.clone().inner());
    let y = spectral_conv(xi.clone(), wi.clone(), Some(bi.clone()), spec, imp).map_err(|e| e.to_string())?;
    let sample: Vec<f32> = y
        .clone()
        .flatten::<1>(0, D - 1)
        .narrow(0, 0, 4096.min(y.shape().num_elements()))
        .into_data()
        .to_vec()
        .unwrap();
    let g = Tensor::<Autodiff<Inner<R>>, D>::random(y.dims(), dist, &device);
    let fwd = median_ms::<Inner<R>>(&device, reps, || {
        let _ = spectral_conv(xi.clone(), wi.clone(), Some(bi.clone()), spec, imp).unwrap();
    });
    if opts.forward_only {
        return Ok((
            Timing {
                fwd,
                fwd_bwd: Measured::NOT_RUN,
            },
            sample,
        ));
    }
    let fwd_bwd = median_ms::<Inner<R>>(&device, reps, || {
        let (x, w, b) = (
            x.clone().require_grad(),
            w.clone().require_grad(),
            bias.clone().require_grad(),
        );
        let y = spectral_conv(x, w, Some(b), spec, imp).unwrap();
        // Seeds the backward with g (through one multiply; Burn seeds with ones).
        let _ = (y * g.clone()).backward();
    });
    Ok((Timing { fwd, fwd_bwd }, sample))
}

/// Median of 7 groups of `reps` back-to-back launches, in ms per launch.
fn median_launch_ms<R: Runtime>(client: &ComputeClient<R>, reps: usize, launch: impl Fn()) -> f64 {
    for _ in 0..3 {
        launch();
    }
    cubecl::future::block_on(client.sync()).unwrap();
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                launch();
            }
            cubecl::future::block_on(client.sync()).unwrap();
            start.elapsed().as_secs_f64() * 1e3 / reps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[3]
}

/// A CGEMM's operands on the device, filled with fresh values.
struct CgemmBuffers<R: Runtime> {
    client: ComputeClient<R>,
    a: cubecl::server::Handle,
    b: cubecl::server::Handle,
    c: cubecl::server::Handle,
}

impl<R: Runtime> CgemmBuffers<R> {
    fn new(device: &R::Device, problem: &CgemmProblem) -> Self {
        let client = R::client(device);
        let (ea, eb, ec) = problem.extents();
        let a = client.create_from_slice(f32::as_bytes(&uniform_f32(2 * ea, 1)));
        let b = client.create_from_slice(f32::as_bytes(&uniform_f32(2 * eb, 2)));
        let c = client.empty(2 * ec * 4);
        CgemmBuffers { client, a, b, c }
    }

    fn time(&self, reps: usize, launch: impl Fn(&Self)) -> f64 {
        median_launch_ms(&self.client, reps, || launch(self))
    }

    fn output(&self) -> Vec<f32> {
        f32::from_bytes(&self.client.read_one(self.c.clone()).unwrap()).to_vec()
    }
}

/// The forward's per-mode CGEMM alone, with its default block shape.
fn time_cgemm<R: CubeRuntime>(device: &R::Device, problem: &CgemmProblem, reps: usize) -> f64 {
    let buffers = CgemmBuffers::<R>::new(device, problem);
    buffers.time(reps, |s| problem.launch(&s.client, &s.a, &s.b, &s.c))
}

/// Block shapes the sweep tries: register tiles, thread grids, modes per cube
/// and `r` chunks, within the device's shared memory (48 KiB at most) and 512
/// threads. Few enough (at most 72) that NVRTC compiles them all within a
/// couple of minutes on the device.
fn sweep_configs(problem: &CgemmProblem, limits: &DeviceLimits) -> Vec<CgemmConfig> {
    let (base, shared_limit) = (problem.config(limits), limits.shared_memory);
    let mut configs = Vec::new();
    for (tile_p, tile_q) in [(4, 4), (2, 4)] {
        for (threads_p, threads_q) in [(8, 8), (4, 8), (4, 4), (2, 8)] {
            for modes in [4, 8, 16] {
                for chunk in [4, 8, 16] {
                    let cfg = CgemmConfig {
                        tile_p,
                        tile_q,
                        threads_p,
                        threads_q,
                        modes,
                        chunk,
                        ..base
                    };
                    if cfg.threads() <= 512 && cfg.shared_bytes() <= shared_limit.min(48 * 1024) {
                        configs.push(cfg);
                    }
                }
            }
        }
    }
    configs
}

fn cgemm_sweep<R: CubeRuntime>(opts: &Options) {
    let (quick, reps) = (opts.quick, opts.reps);
    let device = Default::default();
    for (i, &(dim, batch, channels, n, n_modes)) in opts.cases.iter().enumerate() {
        if !n.is_power_of_two() || opts.only.is_some_and(|only| only != i) {
            continue;
        }
        let (batch, channels) = if quick {
            (2.min(batch), 8.min(channels))
        } else {
            (batch, channels)
        };
        let modes: usize = stored_modes(dim, n_modes).iter().product();
        let problem = spectral::forward(
            batch,
            channels,
            channels,
            modes,
            spectral::dense_weight(channels, modes, false),
        );
        let buffers = CgemmBuffers::<R>::new(&device, &problem);
        problem.launch(&buffers.client, &buffers.a, &buffers.b, &buffers.c);
        let want = buffers.output();
        let default_ms = buffers.time(reps, |s| problem.launch(&s.client, &s.a, &s.b, &s.c));
        let limits = DeviceLimits::of(&buffers.client);
        let mut best = (default_ms, problem.config(&limits));
        for cfg in sweep_configs(&problem, &limits) {
            let run = |s: &CgemmBuffers<R>| problem.launch_with(cfg, &s.client, &s.a, &s.b, &s.c);
            run(&buffers);
            let err = relative_l2_f32(&buffers.output(), &want);
            assert!(err < 1e-5, "{cfg:?} disagrees with the default block shape: {err:e}");
            let ms = buffers.time(reps, run);
            if ms < best.0 {
                best = (ms, cfg);
            }
        }
        let gflop = 8.0 * (batch * channels * channels * modes) as f64 / 1e9;
        println!(
            "{{\"case\": \"cgemm_sweep\", \"dim\": {dim}, \"B\": {batch}, \"C\": {channels}, \"N\": {n}, \"modes\": {n_modes:?}, \"default\": \"{:?}\", \"default_ms\": {default_ms:.5}, \"default_tflops\": {:.2}, \"best\": \"{:?}\", \"best_ms\": {:.5}, \"best_tflops\": {:.2}}}",
            problem.config(&limits),
            gflop / default_ms,
            best.1,
            best.0,
            gflop / best.0
        );
    }
}

/// The fused kernel on each case's first spatial axis (the whole convolution
/// in 1D; in 2D the axis after the last axis' truncated R2C, as the Fused path
/// runs it) under a range of batch and output-channel tiles, each checked
/// against the default tiles: one JSON line per case with every time.
fn fused_sweep<R: CubeRuntime>(opts: &Options) {
    let device = Default::default();
    let client = R::client(&device);
    for (dim, batch, channels, n, n_modes) in opts.selected_cases() {
        let stored = stored_modes(dim, &n_modes);
        let inner: usize = stored[1..].iter().product();
        let (forward_kind, inverse_kind) = if dim == 1 {
            (FftKind::R2C, FftKind::C2R)
        } else {
            (FftKind::C2C, FftKind::C2C)
        };
        let forward = FftDesc::new(&[batch, channels, n, inner], &[2], forward_kind, Direction::Forward)
            .modes(&stored[..1])
            .mode_order(FORWARD_ORDER);
        let inverse = FftDesc::new(
            &[batch, channels, stored[0], inner],
            &[2],
            inverse_kind,
            Direction::Inverse,
        )
        .modes(&stored[..1])
        .lengths(&[n])
        .mode_order(InverseShift::Fftshift.order());
        let plan = |desc: FftDesc| FftPlan::new(desc).unwrap();
        let weight = spectral::dense_weight(channels, stored.iter().product(), false);
        let problem = FusedSpectralConv::new(&plan(forward), &plan(inverse), weight).unwrap();
        let tables = problem.tables(&client);
        let (ex, ew, ey, _) = problem.extents();
        let x = client.create_from_slice(f32::as_bytes(&uniform_f32(ex, 1)));
        let w = client.create_from_slice(f32::as_bytes(&uniform_f32(ew, 2)));
        let y = client.empty(ey * 4);
        let buffers = FusedBuffers {
            x: &x,
            weight: &w,
            y: &y,
            spectrum: None,
            bias: None,
        };
        let limits = DeviceLimits::of(&client);
        let own = problem.config(false, &limits);
        let launch = |cfg: &FusedConfig| problem.launch_with(cfg.clone(), &client, &tables, buffers);
        launch(&own);
        let want = f32::from_bytes(&client.read_one(y.clone()).unwrap()).to_vec();
        let default_ms = median_launch_ms(&client, opts.reps, || launch(&own));
        let mut timed = [Vec::new(), Vec::new()];
        let time = |cfg: &FusedConfig| {
            launch(cfg);
            let got = f32::from_bytes(&client.read_one(y.clone()).unwrap()).to_vec();
            let err = relative_l2_f32(&got, &want);
            assert!(err < 1e-5, "{cfg:?} disagrees with the default tiles: {err:e}");
            median_launch_ms(&client, opts.reps, || launch(cfg))
        };
        let tiles = |most: usize| {
            [1, 2, 4]
                .into_iter()
                .filter(move |&b| b <= batch.next_power_of_two())
                .flat_map(move |b| [16, 32, 64].into_iter().map(move |o| (b, o)))
                .filter(move |&(_, o)| o <= most)
        };
        for (batch_tile, out_tile) in tiles(channels.next_power_of_two()) {
            let cfg = FusedConfig {
                batch_tile,
                out_tile,
                ..own.clone()
            };
            if cfg.fits(&DeviceLimits::PORTABLE) {
                let ms = time(&cfg);
                timed[0].push(format!("[{batch_tile}, {out_tile}, {ms:.5}]"));
            }
        }
        for threads in [256, 512, 1024] {
            for (batch_tile, out_tile) in tiles(channels) {
                let cfg = problem.resident_tiles(false, threads, batch_tile, out_tile);
                if cfg.threads() == threads && cfg.fits(&limits) {
                    let ms = time(&cfg);
                    timed[1].push(format!("[{threads}, {batch_tile}, {out_tile}, {ms:.5}]"));
                }
            }
        }
        let chosen = problem
            .resident_config(false, &limits)
            .map(|cfg| {
                let ms = median_launch_ms(&client, opts.reps, || launch(&cfg));
                format!("[{}, {}, {}, {ms:.5}]", cfg.threads(), cfg.batch_tile, cfg.out_tile)
            })
            .unwrap_or_else(|| "null".into());
        println!(
            "{{\"case\": \"fused_sweep\", \"dim\": {dim}, \"B\": {batch}, \"C\": {channels}, \"N\": {n}, \"modes\": {n_modes:?}, \"threads\": {}, \"chunk\": {}, \"default_tiles\": [{}, {}], \"default_ms\": {default_ms:.5}, \"tiles_ms\": [{}], \"resident_chosen\": {chosen}, \"resident_tiles_ms\": [{}]}}",
            own.threads(),
            own.chunk(),
            own.batch_tile,
            own.out_tile,
            timed[0].join(", "),
            timed[1].join(", "),
        );
    }
}

fn bench_case<R: CubeRuntime, const D: usize, const W: usize>(
    case: (usize, usize, usize, usize, &[usize]),
    opts: &Options,
) {
    let reps = opts.reps;
    let (dim, batch, channels, n, n_modes) = case;
    // neuraloperator's n_modes: centred counts, the last dim keeps m//2 + 1 bins.
    let stored = stored_modes(dim, n_modes);
    let spec = SpectralConvSpec::new(&stored);
    let mut xs = [n; D];
    xs[0] = batch;
    xs[1] = channels;
    let mut ws = [2; W];
    ws[0] = channels;
    ws[1] = channels;
    ws[2..2 + dim].copy_from_slice(&stored);
    // An implementation's fields: times per call and the host's part of them.
    let fields = |name: &str, t: &Result<(Timing, Vec<f32>), String>| {
        match t {
        Ok((t, _)) => format!(
            "\"{name}_fwd_ms\": {:.5}, \"{name}_fwd_bwd_ms\": {:.5}, \"{name}_fwd_host_ms\": {:.5}, \"{name}_fwd_bwd_host_ms\": {:.5}",
            t.fwd.ms, t.fwd_bwd.ms, t.fwd.host_ms, t.fwd_bwd.host_ms
        ),
        Err(_) => format!("\"{name}_fwd_ms\": null, \"{name}_fwd_bwd_ms\": null"),
    }
    };
    let device = Default::default();
    let dist = Distribution::Uniform(-1.0, 1.0);
    let inputs = Inputs::<R, D, W> {
        x: Tensor::random(xs, dist, &device),
        // Made as the model makes it (`FnoBlock::spectral_weight`: one row per
        // input channel), not with (re, im) rows that CUDA pads to 16 bytes.
        w: (Tensor::<_, 2>::random([channels, ws[1..].iter().product()], dist, &device) * 0.05).reshape(ws),
        bias: Tensor::random([channels], dist, &device),
    };
    if opts.fault_tolerance {
        fault_overhead(case, &spec, &inputs, opts);
        return;
    }
    let unfused = time_impl::<R, D, W>(SpectralImpl::Unfused, &spec, &inputs, opts);
    let fused = time_impl::<R, D, W>(SpectralImpl::Fused, &spec, &inputs, opts);
    let reference = if opts.reference {
        time_impl::<R, D, W>(SpectralImpl::Reference, &spec, &inputs, opts)
    } else {
        Err("not run".into())
    };
    let err = match (&unfused, &reference) {
        (Ok((_, a)), Ok((_, b))) => format!("{:.2e}", relative_l2_f32(a, b)),
        _ => "null".into(),
    };
    let fused_err = match (&fused, &unfused) {
        (Ok((_, a)), Ok((_, b))) => format!("{:.2e}", relative_l2_f32(a, b)),
        _ => "null".into(),
    };
    let mut note = String::new();
    for (name, result) in [("unfused", &unfused), ("fused", &fused)] {
        if let Err(e) = result {
            note += &format!(", \"{name}_error\": {e:?}");
        }
    }
    let modes: usize = stored.iter().product();
    let cgemm_ms = time_cgemm::<R>(
        &device,
        &spectral::forward(
            batch,
            channels,
            channels,
            modes,
            spectral::dense_weight(channels, modes, false),
        ),
        reps,
    );
    let times = [("unfused", &unfused), ("fused", &fused), ("reference", &reference)]
        .map(|(name, t)| fields(name, t))
        .join(", ");
    println!(
        "{{\"case\": \"spectral_conv\", \"dim\": {dim}, \"B\": {batch}, \"C\": {channels}, \"N\": {n}, \"modes\": {n_modes:?}, {times}, \"unfused_vs_reference\": {err}, \"fused_vs_unfused\": {fused_err}, \"cgemm_fwd_ms\": {cgemm_ms:.5}{note}}}"
    );
}

/// The Unfused path of one case unchecked, detecting and correcting faults,
/// timed in turn: one JSON line with the times, their ratios to the
/// unchecked ones, the checked outputs' distance from the unchecked, and
/// the faults counted (on fault-free runs: false positives).
fn fault_overhead<R: CubeRuntime, const D: usize, const W: usize>(
    (dim, batch, channels, n, n_modes): (usize, usize, usize, usize, &[usize]),
    spec: &SpectralConvSpec,
    inputs: &Inputs<R, D, W>,
    opts: &Options,
) {
    let device = inputs.x.device();
    let before = Inner::<R>::fault_counts(&device);
    let mut fields = String::new();
    let mut off: Option<(Timing, Vec<f32>)> = None;
    for tolerance in [FaultTolerance::Off, FaultTolerance::Detect, FaultTolerance::Correct] {
        let name = format!("{tolerance:?}").to_lowercase();
        let checked = spec.clone().fault_tolerance(tolerance);
        match time_impl::<R, D, W>(SpectralImpl::Unfused, &checked, inputs, opts) {
            Ok((t, sample)) => {
                fields += &format!(
                    ", \"{name}_fwd_ms\": {:.5}, \"{name}_fwd_bwd_ms\": {:.5}",
                    t.fwd.ms, t.fwd_bwd.ms
                );
                match &off {
                    None => off = Some((t, sample)),
                    Some((base, base_sample)) => {
                        fields += &format!(
                            ", \"{name}_fwd_ratio\": {:.4}, \"{name}_fwd_bwd_ratio\": {:.4}, \"{name}_vs_off\": {:.2e}",
                            t.fwd.ms / base.fwd.ms,
                            t.fwd_bwd.ms / base.fwd_bwd.ms,
                            relative_l2_f32(&sample, base_sample)
                        );
                    }
                }
            }
            Err(e) => fields += &format!(", \"{name}_error\": {e:?}"),
        }
    }
    let counts = Inner::<R>::fault_counts(&device) - before;
    // One fault injected into a checked contraction of a corrected forward:
    // counted, corrected, and the output the unchecked one.
    if let Some((_, base_sample)) = &off {
        let (x, w, b) = (
            inputs.x.clone().inner(),
            inputs.w.clone().inner(),
            inputs.bias.clone().inner(),
        );
        let correct = spec.clone().fault_tolerance(FaultTolerance::Correct);
        let before = Inner::<R>::fault_counts(&device);
        fno_ops::inject_contraction_fault(dim as u64 * 1000 + n as u64, 27);
        let y = spectral_conv(x, w, Some(b), &correct, SpectralImpl::Unfused).unwrap();
        let sample: Vec<f32> = y
            .clone()
            .flatten::<1>(0, D - 1)
            .narrow(0, 0, base_sample.len())
            .into_data()
            .to_vec()
            .unwrap();
        let injected = Inner::<R>::fault_counts(&device) - before;
        fields += &format!(
            ", \"injected\": {}, \"injected_detected\": {}, \"injected_corrected\": {}, \"corrected_vs_off\": {:.2e}",
            injected.injected,
            injected.detected,
            injected.corrected,
            relative_l2_f32(&sample, base_sample)
        );
    }
    println!(
        "{{\"case\": \"spectral_fault\", \"dim\": {dim}, \"B\": {batch}, \"C\": {channels}, \"N\": {n}, \"modes\": {n_modes:?}{fields}, \"false_positives\": {}}}",
        counts.detected
    );
}

struct Options {
    quick: bool,
    fault_tolerance: bool,
    cases: &'static [Case],
    sweep: bool,
    fused_sweep: bool,
    only: Option<usize>,
    reps: usize,
    reference: bool,
    only_impl: Option<SpectralImpl>,
    forward_only: bool,
}

impl Options {
    /// The cases `--only` selects, shrunk by `--quick`: (spatial dims, batch,
    /// channels, grid side, n_modes), neuraloperator's n_modes fitted to the
    /// grid (the last dim's m // 2 + 1 bins too).
    fn selected_cases(&self) -> impl Iterator<Item = (usize, usize, usize, usize, Vec<usize>)> + '_ {
        let chosen = |i: usize| self.only.is_none_or(|only| only == i);
        self.cases.iter().enumerate().filter(move |&(i, _)| chosen(i)).map(
            move |(_, &(dim, batch, channels, n, n_modes))| {
                let (batch, channels, n) = if self.quick {
                    (2.min(batch), 8.min(channels), n.min(64))
                } else {
                    (batch, channels, n)
                };
                let n_modes = n_modes.iter().map(|&m| m.min(n)).collect();
                (dim, batch, channels, n, n_modes)
            },
        )
    }

    fn parse(args: &[String]) -> Result<Options, String> {
        let quick = args.iter().any(|a| a == "--quick");
        let value = |flag: &str| -> Result<Option<usize>, String> {
            match args.iter().position(|a| a == flag) {
                None => Ok(None),
                Some(i) => args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .map(Some)
                    .ok_or_else(|| format!("{flag} needs a number")),
            }
        };
        let cases = if args.iter().any(|a| a == "--turbofno") {
            TURBOFNO_SWEEP
        } else {
            CASES
        };
        let only = value("--only")?;
        if only.is_some_and(|i| i >= cases.len()) {
            return Err(format!("--only: there are {} cases", cases.len()));
        }
        Ok(Options {
            quick,
            fault_tolerance: args.iter().any(|a| a == "--fault-tolerance"),
            cases,
            sweep: args.iter().any(|a| a == "--cgemm-sweep"),
            fused_sweep: args.iter().any(|a| a == "--fused-sweep"),
            only,
            reps: value("--reps")?.unwrap_or(if quick { 3 } else { 15 }).max(1),
            reference: !args.iter().any(|a| a == "--no-reference"),
            only_impl: match args.iter().position(|a| a == "--impl") {
                None => None,
                Some(i) => Some(
                    args.get(i + 1)
                        .ok_or("--impl needs unfused or fused")?
                        .parse()
                        .map_err(|e: fno_ops::SpectralError| e.to_string())?,
                ),
            },
            forward_only: args.iter().any(|a| a == "--forward-only"),
        })
    }
}

fn run<R: CubeRuntime>(opts: &Options) {
    for (dim, batch, channels, n, modes) in opts.selected_cases() {
        let case = (dim, batch, channels, n, modes.as_slice());
        match dim {
            1 => bench_case::<R, 3, 4>(case, opts),
            _ => bench_case::<R, 4, 5>(case, opts),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opts = Options::parse(&args).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    match args.get(1).map(String::as_str) {
        #[cfg(feature = "wgpu")]
        Some("wgpu") if opts.sweep => cgemm_sweep::<cubecl::wgpu::WgpuRuntime>(&opts),
        #[cfg(feature = "wgpu")]
        Some("wgpu") if opts.fused_sweep => fused_sweep::<cubecl::wgpu::WgpuRuntime>(&opts),
        #[cfg(feature = "wgpu")]
        Some("wgpu") => run::<cubecl::wgpu::WgpuRuntime>(&opts),
        #[cfg(feature = "cuda")]
        Some("cuda") | None if opts.sweep => cgemm_sweep::<cubecl::cuda::CudaRuntime>(&opts),
        #[cfg(feature = "cuda")]
        Some("cuda") | None if opts.fused_sweep => fused_sweep::<cubecl::cuda::CudaRuntime>(&opts),
        #[cfg(feature = "cuda")]
        Some("cuda") | None => run::<cubecl::cuda::CudaRuntime>(&opts),
        other => {
            eprintln!("error: unknown or uncompiled backend {other:?} (expected cuda or wgpu)");
            std::process::exit(2);
        }
    }
}

//! Times our non-uniform FFTs on one device and prints one JSON line per case,
//! for `nufft_compare.py` to set beside FINUFFT (CPU) measured in the same run.
//!
//! Usage: `nufft_bench [cuda|wgpu] [--quick] [--points M] [--batch B] [--modes N,N[,N]]`.
//! Cases: 2D types 1 and 2 with 500² modes and 3D with 64³ modes (or only
//! `--modes`), at ε = 1e-2 and 1e-5, `B` vectors (default 1) on `M` (default
//! 10⁶) points uniform in [−π, π)^d. Reported: the plan's time (sorting the
//! points, lowering the FFT), the median execution time, points a second
//! (points × vectors, execution only, as cuFINUFFT reports), and the relative
//! error against direct sums on a sample of the last vector's outputs.

use std::time::Instant;

use cubecl::prelude::*;
use fno_kernels::nufft::{nufft_direct, signed_mode, NufftDesc, NufftType};
use fno_testing::{relative_l2, uniform, uniform_f32};

struct Case {
    kind: NufftType,
    modes: Vec<usize>,
    eps: f64,
}

fn cases(only: Option<Vec<usize>>) -> Vec<Case> {
    let mut cases = Vec::new();
    let shapes = only.map_or_else(|| vec![vec![500, 500], vec![64, 64, 64]], |modes| vec![modes]);
    for modes in shapes {
        for eps in [1e-2, 1e-5] {
            for kind in [NufftType::One, NufftType::Two] {
                cases.push(Case {
                    kind,
                    modes: modes.clone(),
                    eps,
                });
            }
        }
    }
    cases
}

/// The relative error of `got` on a sample of outputs (direct sums there).
fn sampled_error(desc: &NufftDesc, points: &[f64], input: &[f32], got: &[f32]) -> f64 {
    let d = desc.dims();
    let m = points.len() / d;
    let pairs: Vec<(f64, f64)> = input.chunks(2).map(|c| (c[0] as f64, c[1] as f64)).collect();
    let modes: usize = desc.modes.iter().product();
    let sample: Vec<usize> = (0..64)
        .map(|i| (i * 7919 + 13) % if desc.kind == NufftType::One { modes } else { m })
        .collect();
    let mut want = Vec::new();
    let mut have = Vec::new();
    for &s in &sample {
        match desc.kind {
            // One mode: the signed frequencies of flat index s.
            NufftType::One => {
                let mut rest = s;
                let mut k = vec![0.0; d];
                for dim in (0..d).rev() {
                    k[dim] = signed_mode(rest % desc.modes[dim], desc.modes[dim], desc.mode_order) as f64;
                    rest /= desc.modes[dim];
                }
                let (mut re, mut im) = (0.0, 0.0);
                for (j, c) in pairs.iter().enumerate() {
                    let t: f64 = (0..d).map(|dim| k[dim] * points[j * d + dim]).sum::<f64>() * desc.isign as f64;
                    re += c.0 * t.cos() - c.1 * t.sin();
                    im += c.0 * t.sin() + c.1 * t.cos();
                }
                want.extend([re, im]);
            }
            // One point: the oracle over every mode at that point.
            NufftType::Two => {
                let one = NufftDesc {
                    batch: 1,
                    ..desc.clone()
                };
                let v = nufft_direct(&one, &points[s * d..(s + 1) * d], &pairs);
                want.extend([v[0].0, v[0].1]);
            }
        }
        have.extend([got[2 * s] as f64, got[2 * s + 1] as f64]);
    }
    relative_l2(&have, &want)
}

struct Options {
    points: usize,
    batch: usize,
    reps: usize,
    quick: bool,
    modes: Option<Vec<usize>>,
}

fn run<R: Runtime>(client: ComputeClient<R>, options: &Options) {
    let (m, batch, reps) = (options.points, options.batch, options.reps);
    for case in cases(options.modes.clone()) {
        if options.quick && case.modes.len() == 3 {
            continue;
        }
        let d = case.modes.len();
        let desc = NufftDesc::new(case.kind, &case.modes, case.eps).batch(batch);
        let points: Vec<f64> = uniform(m * d, 3).iter().map(|v| v * std::f64::consts::PI).collect();
        let planned = Instant::now();
        let plan = desc.on_device(&client, &points).expect("valid case");
        cubecl::future::block_on(client.sync()).unwrap();
        let plan_ms = planned.elapsed().as_secs_f64() * 1e3;
        let input_values = uniform_f32(plan.input_floats(), 5);
        let input = client.create_from_slice(f32::as_bytes(&input_values));
        let output = client.empty(plan.output_floats() * 4);
        for _ in 0..3 {
            plan.execute(&input, &output).unwrap();
        }
        cubecl::future::block_on(client.sync()).unwrap();
        let mut times = Vec::new();
        for _ in 0..7 {
            let start = Instant::now();
            for _ in 0..reps {
                plan.execute(&input, &output).unwrap();
            }
            cubecl::future::block_on(client.sync()).unwrap();
            times.push(start.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        times.sort_by(f64::total_cmp);
        let ms = times[times.len() / 2];
        let got = f32::from_bytes(&client.read_one(output).unwrap()).to_vec();
        // The last vector: the one a batch's lanes and passes reach last.
        let last = |v: &[f32]| v[v.len() / batch * (batch - 1)..].to_vec();
        let one = NufftDesc {
            batch: 1,
            ..desc.clone()
        };
        let err = sampled_error(&one, &points, &last(&input_values), &last(&got));
        let layout = plan.layout();
        println!(
            "{{\"type\": {}, \"dims\": {d}, \"modes\": {:?}, \"points\": {m}, \"batch\": {batch}, \"eps\": {:e}, \"width\": {}, \"grid\": {:?}, \"plan_ms\": {plan_ms:.1}, \"ms\": {ms:.4}, \"points_per_s\": {:.3e}, \"rel_err\": {err:.2e}}}",
            if case.kind == NufftType::One { 1 } else { 2 },
            case.modes,
            case.eps,
            layout.spreader.width,
            layout.grid,
            (m * batch) as f64 / (ms * 1e-3),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let number = |name: &str, default: usize| {
        value(name).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| panic!("{name} takes a number"))
        })
    };
    let options = Options {
        points: number("--points", if quick { 20_000 } else { 1_000_000 }),
        batch: number("--batch", 1).max(1),
        reps: if quick { 2 } else { 10 },
        quick,
        modes: value("--modes").map(|v| {
            v.split(',')
                .map(|n| n.parse().expect("--modes takes N,N[,N]"))
                .collect()
        }),
    };
    match args.first().map(String::as_str) {
        #[cfg(feature = "cuda")]
        Some("cuda") | None => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            run(CudaRuntime::client(&CudaDevice { index: 0 }), &options)
        }
        #[cfg(feature = "wgpu")]
        Some("wgpu") => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            run(WgpuRuntime::client(&WgpuDevice::default()), &options)
        }
        other => panic!("unknown or uncompiled backend {other:?}"),
    }
}

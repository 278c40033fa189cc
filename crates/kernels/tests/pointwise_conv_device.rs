//! The 1×1 convolution kernel on wgpu (lavapipe in CI) against its f64 oracle:
//! the weight as stored and transposed (the input gradient), with and without
//! a bias; one-wide and partial blocks of rows and points, contractions that
//! fill no chunk and several chunks, points read as vectors of four and one by
//! one; activations stored in f32, f16 and bf16 (f32 weights and sums).

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::pointwise_conv::{Epilogue, PointwiseConvProblem};
use fno_kernels::precision::Precision;
use fno_testing::oracle;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

/// A `[batch, m, k, points]` problem with the weight stored `[m, k]`, or
/// `[k, m]` and read transposed (the input gradient's case).
fn problem(batch: usize, m: usize, k: usize, points: usize, transposed: bool, bias: bool) -> PointwiseConvProblem {
    let (a_row, a_col) = if transposed { (1, m) } else { (k, 1) };
    PointwiseConvProblem {
        batch,
        m,
        k,
        points,
        a_row,
        a_col,
        bias,
    }
}

#[test]
fn pointwise_convolutions_match_the_oracle() {
    pointwise_convolutions(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA (f16 and native bf16 buffers): run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn pointwise_convolutions_match_the_oracle_on_cuda() {
    pointwise_convolutions(&crate::cuda_client_with_async_copies());
}

fn pointwise_convolutions<R: Runtime>(client: &ComputeClient<R>) {
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut widths = std::collections::BTreeSet::new();
    for (case, &(batch, m, k, points)) in [
        (1, 1, 1, 1),
        (2, 64, 64, 300),
        (3, 128, 3, 129),
        (2, 1, 128, 1000),
        (4, 5, 33, 17),
        (1, 70, 20, 256),
        (2, 24, 40, 1028),
    ]
    .iter()
    .enumerate()
    {
        let variants = [(false, true), (false, false), (true, false)];
        for (precision, (transposed, bias)) in Precision::ALL.into_iter().flat_map(|p| variants.map(|v| (p, v))) {
            let stored = precision.stored_on(client);
            let problem = problem(batch, m, k, points, transposed, bias);
            // Fresh buffers start on 16 bytes.
            widths.insert(problem.config(true).x_width);
            let seed = seed + 10 * case as u64;
            let a = uniform_f32(m * k, seed);
            let x = stored.round(&uniform_f32(batch * k * points, seed + 1));
            let b = uniform_f32(m, seed + 2);
            let want = oracle::pointwise_conv(&problem, &f64s(&a), &f64s(&x), bias.then(|| f64s(&b)).as_deref());
            let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
            let (ha, hx, hb) = (upload(&a), client.create_from_slice(&stored.encode(&x)), upload(&b));
            let hy = client.create_from_slice(&stored.encode(&vec![f32::NAN; batch * m * points]));
            problem.launch(
                client,
                precision,
                &ha,
                &hx,
                bias.then_some(&hb),
                &hy,
                &Epilogue::default(),
            );
            let got = f64s(&stored.decode(&client.read_one(hy).unwrap()));
            assert!(got.iter().all(|v| v.is_finite()), "{problem:?}: output unwritten");
            let e = relative_l2(&got, &want);
            let bound = if precision == Precision::F32 {
                1e-6
            } else {
                precision.unit_roundoff()
            };
            assert!(
                e < bound,
                "{precision} {problem:?} ({:?}): error {e:e} (seed {seed})",
                problem.config(true)
            );
        }
    }
    assert_eq!(widths.len(), 2, "points read only {widths:?} at a time");
}

#[test]
fn epilogues_match_the_oracle() {
    epilogues(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA: run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn epilogues_match_the_oracle_on_cuda() {
    epilogues(&crate::cuda_client_with_async_copies());
}

/// Every epilogue (residual plain or gated, the sums kept, GELU) on vectors of
/// four and one, f32 and f16: `Y` and `pre` equal the oracle's, and `pre` is
/// left alone where not asked for.
fn epilogues<R: Runtime>(client: &ComputeClient<R>) {
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    for (case, &(batch, m, k, points)) in [(2, 24, 40, 1028), (3, 12, 7, 129), (1, 70, 20, 256)]
        .iter()
        .enumerate()
    {
        for (residual, gated, keep_pre, gelu) in [
            (true, false, false, false),
            (true, true, true, true),
            (false, false, true, true),
            (true, false, false, true),
        ] {
            for precision in [Precision::F32, Precision::F16] {
                let stored = precision.stored_on(client);
                let problem = problem(batch, m, k, points, false, true);
                let seed = seed + 10 * case as u64;
                let len = batch * m * points;
                let a = uniform_f32(m * k, seed);
                let x = stored.round(&uniform_f32(batch * k * points, seed + 1));
                let (b, g) = (uniform_f32(m, seed + 2), uniform_f32(m, seed + 3));
                let r = stored.round(&uniform_f32(len, seed + 4));
                let sums = oracle::pointwise_conv(&problem, &f64s(&a), &f64s(&x), Some(&f64s(&b)));
                let (r64, g64) = (f64s(&r), f64s(&g));
                let (want_pre, want) = problem.epilogue_cpu(
                    sums,
                    residual.then_some(r64.as_slice()),
                    gated.then_some(g64.as_slice()),
                    gelu,
                );
                let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
                let (ha, hx, hb, hg) = (
                    upload(&a),
                    client.create_from_slice(&stored.encode(&x)),
                    upload(&b),
                    upload(&g),
                );
                let hr = client.create_from_slice(&stored.encode(&r));
                let poisoned = || client.create_from_slice(&stored.encode(&vec![f32::NAN; len]));
                let (hy, hpre) = (poisoned(), poisoned());
                let epilogue = Epilogue {
                    residual: residual.then_some(&hr),
                    gate: gated.then_some(&hg),
                    pre: keep_pre.then_some(&hpre),
                    gelu,
                };
                problem.launch(client, precision, &ha, &hx, Some(&hb), &hy, &epilogue);
                let what = format!(
                    "{precision} {problem:?} residual {residual} gated {gated} keep {keep_pre} gelu {gelu} (seed {seed})"
                );
                let read = |h: &cubecl::server::Handle| f64s(&stored.decode(&client.read_one(h.clone()).unwrap()));
                let (got, got_pre) = (read(&hy), read(&hpre));
                let bound = if precision == Precision::F32 {
                    1e-6
                } else {
                    2.0 * precision.unit_roundoff()
                };
                let e = relative_l2(&got, &want);
                assert!(e < bound, "{what}: error {e:e}");
                if keep_pre {
                    let e = relative_l2(&got_pre, &want_pre);
                    assert!(e < bound, "{what}: the kept sums are off by {e:e}");
                } else {
                    assert!(got_pre.iter().all(|v| v.is_nan()), "{what}: pre written unasked");
                }
            }
        }
    }
}

/// The TF32 tensor-core kernel on CUDA: equal to the oracle of its operands
/// rounded to TF32 (sums in f32), and measurably off the unrounded oracle, as
/// TF32 must be. Partial blocks of rows and points, a contraction that fills
/// no chunk and several, a bias, a transposed weight.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA device with TF32 tensor cores"]
fn tf32_pointwise_convolutions_match_the_rounded_oracle_on_cuda() {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use fno_kernels::pointwise_tf32::{round_to_tf32, tf32_supported};
    let client = CudaRuntime::client(&CudaDevice { index: 0 });
    assert!(tf32_supported(&client), "this device has no TF32 tensor cores");
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let rounded = |v: &[f32]| v.iter().map(|&v| round_to_tf32(v) as f64).collect::<Vec<_>>();
    for (case, &(batch, m, k, points)) in [(2, 64, 64, 300), (3, 128, 40, 129), (1, 70, 20, 256), (2, 24, 96, 1028)]
        .iter()
        .enumerate()
    {
        for (transposed, bias) in [(false, true), (true, false)] {
            let problem = problem(batch, m, k, points, transposed, bias);
            assert!(problem.suits_tf32());
            let seed = seed + 10 * case as u64;
            let a = uniform_f32(m * k, seed);
            let x = uniform_f32(batch * k * points, seed + 1);
            let b = uniform_f32(m, seed + 2);
            let bias_values = bias.then(|| f64s(&b));
            let want = oracle::pointwise_conv(&problem, &rounded(&a), &rounded(&x), bias_values.as_deref());
            let exact = oracle::pointwise_conv(&problem, &f64s(&a), &f64s(&x), bias_values.as_deref());
            let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
            let (ha, hx, hb) = (upload(&a), upload(&x), upload(&b));
            let hy = upload(&vec![f32::NAN; batch * m * points]);
            problem.launch_tf32(&client, &ha, &hx, bias.then_some(&hb), &hy);
            let got = f64s(f32::from_bytes(&client.read_one(hy).unwrap()));
            assert!(got.iter().all(|v| v.is_finite()), "{problem:?}: output unwritten");
            let (e, off) = (relative_l2(&got, &want), relative_l2(&got, &exact));
            println!("{problem:?}: {e:.2e} from the TF32 oracle, {off:.2e} from the f32 one");
            assert!(e < 1e-5, "{problem:?}: error {e:e} (seed {seed})");
            assert!(
                (1e-5..3e-3).contains(&off),
                "{problem:?}: {off:e} from the unrounded oracle is not TF32's rounding (seed {seed})"
            );
        }
    }
}

//! The reference path against the direct f64 computation (ndarray in f64, Burn's
//! Candle backend in f32), its gradients against central finite differences, and
//! neuraloperator's mode windows pinned with a real checkpoint's weights.

#![allow(deprecated)] // Burn 0.21 deprecates its Candle backend; the issue asks for tests on it.

use crate::common;

use burn::backend::{Autodiff, Candle, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use common::{random, rel_l2, spectral_conv_f64, Problem};
use fno_kernels::fft::Norm;
use fno_ops::spec::norm_scales;
use fno_ops::{spectral_conv_reference, InverseShift, PreciseMatmulBackend, SpectralConvSpec};

#[allow(clippy::too_many_arguments)]
fn problem(
    batch: usize,
    cin: usize,
    cout: usize,
    input: &[usize],
    output: &[usize],
    modes: &[usize],
    norm: Norm,
    shared: bool,
) -> Problem {
    let scales: Vec<(f64, f64)> = input
        .iter()
        .zip(output)
        .map(|(&i, &o)| norm_scales(norm, i, o))
        .collect();
    Problem {
        batch,
        cin,
        cout,
        input: input.to_vec(),
        output: output.to_vec(),
        modes: modes.to_vec(),
        forward_scale: scales.iter().map(|s| s.0).collect(),
        inverse_scale: scales.iter().map(|s| s.1).collect(),
        shared,
        shift: InverseShift::Fftshift,
    }
}

fn spec_of(p: &Problem, norm: Norm) -> SpectralConvSpec {
    let mut spec = SpectralConvSpec::new(&p.modes)
        .norm(norm)
        .output_size(&p.output)
        .inverse_shift(p.shift);
    if p.shared {
        spec = spec.shared_weights();
    }
    spec
}

fn weight_shape(p: &Problem) -> Vec<usize> {
    let mut s = vec![p.cin, p.cout];
    if !p.shared {
        s.extend(&p.modes);
    }
    s.push(2);
    s
}

fn tensor<B: Backend, const D: usize>(v: &[f64], shape: &[usize], device: &B::Device) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape.to_vec()), device)
}

fn run_ranked<B: PreciseMatmulBackend, const D: usize, const W: usize>(
    p: &Problem,
    norm: Norm,
    x: &[f64],
    w: &[f64],
    bias: &[f64],
) -> Vec<f64> {
    let device = Default::default();
    let mut xs = vec![p.batch, p.cin];
    xs.extend(&p.input);
    let y = spectral_conv_reference(
        tensor::<B, D>(x, &xs, &device),
        tensor::<B, W>(w, &weight_shape(p), &device),
        Some(tensor::<B, 1>(bias, &[p.cout], &device)),
        &spec_of(p, norm),
    )
    .unwrap();
    y.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn run<B: PreciseMatmulBackend>(p: &Problem, norm: Norm, x: &[f64], w: &[f64], bias: &[f64]) -> Vec<f64> {
    match (p.input.len(), p.shared) {
        (1, false) => run_ranked::<B, 3, 4>(p, norm, x, w, bias),
        (2, false) => run_ranked::<B, 4, 5>(p, norm, x, w, bias),
        (3, false) => run_ranked::<B, 5, 6>(p, norm, x, w, bias),
        (1, true) => run_ranked::<B, 3, 3>(p, norm, x, w, bias),
        (2, true) => run_ranked::<B, 4, 3>(p, norm, x, w, bias),
        (3, true) => run_ranked::<B, 5, 3>(p, norm, x, w, bias),
        _ => unreachable!(),
    }
}

/// (input, output, modes as stored, norm, shared)
type Case = (Vec<usize>, Vec<usize>, Vec<usize>, Norm, bool);

fn cases() -> Vec<Case> {
    vec![
        (vec![16], vec![16], vec![5], Norm::Forward, false),
        (vec![15], vec![15], vec![8], Norm::Backward, false),
        (vec![8, 10], vec![8, 10], vec![5, 4], Norm::Forward, false),
        // Odd, non-square grid, odd centred window.
        (vec![9, 7], vec![9, 7], vec![5, 3], Norm::Ortho, false),
        // Every mode kept, including the Nyquist column of an even last dim.
        (vec![6, 8], vec![6, 8], vec![6, 5], Norm::Forward, false),
        (vec![6, 4, 8], vec![6, 4, 8], vec![3, 2, 3], Norm::Forward, false),
        // Output size differs from the input size.
        (vec![8, 8], vec![12, 10], vec![4, 3], Norm::Forward, false),
        (vec![10, 12], vec![6, 7], vec![5, 4], Norm::Backward, false),
        // A grid holding fewer modes than the weight: neuraloperator crops it.
        (vec![8, 6], vec![8, 6], vec![11, 5], Norm::Forward, false),
        (vec![7, 8], vec![7, 8], vec![10, 3], Norm::Forward, false),
        // TurboFNO's shared weight matrix.
        (vec![8, 8], vec![8, 8], vec![4, 3], Norm::Forward, true),
        (vec![32], vec![32], vec![9], Norm::Forward, true),
    ]
}

#[test]
fn matches_the_direct_f64_computation_on_ndarray_and_candle() {
    for (seed, (input, output, modes, norm, shared)) in cases().into_iter().enumerate() {
        let p = problem(2, 3, 2, &input, &output, &modes, norm, shared);
        let x = random(p.batch * p.cin * input.iter().product::<usize>(), seed as u64 + 1);
        let w = random(weight_shape(&p).iter().product(), seed as u64 + 100);
        let bias = random(p.cout, seed as u64 + 200);
        let want = spectral_conv_f64(&p, &x, &w, Some(&bias));
        let got = run::<NdArray<f64>>(&p, norm, &x, &w, &bias);
        let e = rel_l2(&got, &want);
        assert!(
            e < 1e-12,
            "ndarray f64 {input:?}->{output:?} modes {modes:?} {norm:?} shared={shared}: {e:e}"
        );
        let got = run::<Candle<f32, i64>>(&p, norm, &x, &w, &bias);
        let e = rel_l2(&got, &want);
        assert!(
            e < 1e-5,
            "candle f32 {input:?}->{output:?} modes {modes:?} {norm:?} shared={shared}: {e:e}"
        );
    }
}

/// neuraloperator main's ifftshift against 2.0.0's fftshift: each matches
/// the direct computation with its own shift; they differ on a grid odd in a
/// non-last dim (the output is not merely shifted: the modes meet other
/// frequencies) and agree where those dims are even.
#[test]
fn both_inverse_shifts_match_the_direct_computation() {
    for (input, modes, odd) in [
        (vec![9, 8], vec![5, 3], true),
        (vec![7, 6, 8], vec![4, 3, 3], true),
        (vec![8, 9], vec![5, 3], false),
    ] {
        let mut outputs = Vec::new();
        for shift in [InverseShift::Fftshift, InverseShift::Ifftshift] {
            let p = Problem {
                shift,
                ..problem(2, 3, 2, &input, &input, &modes, Norm::Forward, false)
            };
            let x = random(p.batch * p.cin * input.iter().product::<usize>(), 11);
            let w = random(weight_shape(&p).iter().product(), 12);
            let bias = random(p.cout, 13);
            let want = spectral_conv_f64(&p, &x, &w, Some(&bias));
            let got = run::<NdArray<f64>>(&p, Norm::Forward, &x, &w, &bias);
            let e = rel_l2(&got, &want);
            assert!(e < 1e-12, "{input:?} {shift:?}: {e:e}");
            outputs.push(got);
        }
        let apart = rel_l2(&outputs[1], &outputs[0]);
        if odd {
            assert!(apart > 0.05, "{input:?}: the shifts agree ({apart:e}) on an odd grid");
        } else {
            assert!(
                apart < 1e-12,
                "{input:?}: the shifts differ ({apart:e}) on an even grid"
            );
        }
    }
}

#[test]
fn gradients_match_central_finite_differences() {
    type B = Autodiff<NdArray<f64>>;
    let device = Default::default();
    for (input, modes) in [(vec![9, 8], vec![5, 4]), (vec![12], vec![5])] {
        let p = problem(2, 2, 3, &input, &input, &modes, Norm::Forward, false);
        let mut xs = vec![p.batch, p.cin];
        xs.extend(&input);
        let x0 = random(xs.iter().product(), 5);
        let w0 = random(weight_shape(&p).iter().product(), 6);
        let b0 = random(p.cout, 7);
        let r = random(p.batch * p.cout * input.iter().product::<usize>(), 8);
        let spec = spec_of(&p, Norm::Forward);
        // Loss = Σ y ⊙ r, as an f64 closure over perturbed inputs.
        let loss = |x: &[f64], w: &[f64], b: &[f64]| -> f64 {
            let y = run::<NdArray<f64>>(&p, Norm::Forward, x, w, b);
            y.iter().zip(&r).map(|(a, b)| a * b).sum()
        };
        macro_rules! grads {
            ($d:literal, $w:literal) => {{
                let x = tensor::<B, $d>(&x0, &xs, &device).require_grad();
                let w = tensor::<B, $w>(&w0, &weight_shape(&p), &device).require_grad();
                let b = tensor::<B, 1>(&b0, &[p.cout], &device).require_grad();
                let y = spectral_conv_reference(x.clone(), w.clone(), Some(b.clone()), &spec).unwrap();
                let rt = tensor::<B, $d>(&r, &y.dims(), &device);
                let g = (y * rt).sum().backward();
                let v = |t: Tensor<NdArray<f64>, $d>| t.into_data().to_vec::<f64>().unwrap();
                (
                    v(x.grad(&g).unwrap()),
                    w.grad(&g).unwrap().into_data().to_vec::<f64>().unwrap(),
                    b.grad(&g).unwrap().into_data().to_vec::<f64>().unwrap(),
                )
            }};
        }
        let (gx, gw, gb) = if input.len() == 2 { grads!(4, 5) } else { grads!(3, 4) };
        let eps = 1e-6;
        let fd = |which: usize, i: usize| {
            let (mut x, mut w, mut b) = (x0.clone(), w0.clone(), b0.clone());
            let v = [&mut x, &mut w, &mut b];
            let target = v.into_iter().nth(which).unwrap();
            target[i] += eps;
            let up = loss(&x, &w, &b);
            let (mut x2, mut w2, mut b2) = (x0.clone(), w0.clone(), b0.clone());
            [&mut x2, &mut w2, &mut b2].into_iter().nth(which).unwrap()[i] -= eps;
            (up - loss(&x2, &w2, &b2)) / (2.0 * eps)
        };
        for (which, analytic) in [(0, &gx), (1, &gw), (2, &gb)] {
            // A spread of entries of each gradient.
            for i in (0..analytic.len()).step_by((analytic.len() / 7).max(1)) {
                let numeric = fd(which, i);
                let tol = 1e-6 * (1.0 + numeric.abs());
                assert!(
                    (analytic[i] - numeric).abs() < tol,
                    "{input:?} grad {which}[{i}]: autodiff {} vs finite difference {numeric}",
                    analytic[i]
                );
            }
        }
    }
}

//! The Candle spectral convolution against the Burn reference path (f64 on
//! both sides, so the bound is tight): outputs and the gradients of a random
//! linear loss for 1D/2D/3D grids, per-mode and shared weights, every norm,
//! resized outputs, odd sizes and a weight cropped by a small grid; and the
//! gradients against central finite differences.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Tensor as BurnTensor, TensorData};
use candle_core::{Device, Tensor, Var};
use fno_kernels::fft::Norm;
use fno_ops::{spectral_conv_reference, InverseShift, SpectralConvSpec};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Reference = Autodiff<NdArray<f64>>;

struct Case {
    x: Vec<usize>,
    modes: Vec<usize>,
    output: Option<Vec<usize>>,
    norm: Norm,
    shared: bool,
    shift: InverseShift,
}

fn cases() -> Vec<Case> {
    let case = |x: &[usize], modes: &[usize], output: Option<&[usize]>, norm, shared| Case {
        x: x.to_vec(),
        modes: modes.to_vec(),
        output: output.map(<[usize]>::to_vec),
        norm,
        shared,
        shift: InverseShift::Fftshift,
    };
    let mains = |c: Case| Case {
        shift: InverseShift::Ifftshift,
        ..c
    };
    vec![
        case(&[2, 3, 16], &[5], None, Norm::Forward, false),
        case(&[2, 3, 15], &[8], Some(&[20]), Norm::Backward, false),
        case(&[2, 3, 12, 10], &[6, 4], Some(&[12, 13]), Norm::Ortho, false),
        // The grid holds fewer modes than the weight: neuraloperator's crop.
        case(&[1, 2, 5, 6], &[8, 5], None, Norm::Forward, false),
        case(&[1, 2, 7, 6, 8], &[4, 3, 3], None, Norm::Forward, false),
        case(&[2, 3, 9, 8], &[4, 3], Some(&[9, 6]), Norm::Backward, true),
        // neuraloperator main's inverse shift on grids odd in non-last dims.
        mains(case(&[2, 3, 9, 8], &[5, 3], None, Norm::Forward, false)),
        mains(case(&[1, 2, 7, 5, 6], &[4, 3, 3], None, Norm::Ortho, false)),
    ]
}

fn spec_of(case: &Case) -> SpectralConvSpec {
    let mut spec = SpectralConvSpec::new(&case.modes)
        .norm(case.norm)
        .inverse_shift(case.shift);
    if let Some(out) = &case.output {
        spec = spec.output_size(out);
    }
    if case.shared {
        spec = spec.shared_weights();
    }
    spec
}

fn weight_shape(case: &Case, cout: usize) -> Vec<usize> {
    let mut shape = vec![case.x[1], cout];
    if !case.shared {
        shape.extend(&case.modes);
    }
    shape.push(2);
    shape
}

fn output_shape(case: &Case, cout: usize) -> Vec<usize> {
    let grid = case.output.clone().unwrap_or_else(|| case.x[2..].to_vec());
    [&[case.x[0], cout][..], &grid].concat()
}

/// Inputs of one call: x, weight, bias and the loss's weights g.
struct Values {
    x: Vec<f64>,
    w: Vec<f64>,
    bias: Vec<f64>,
    g: Vec<f64>,
}

fn values(case: &Case, cout: usize, seed: u64) -> Values {
    let count = |s: &[usize]| s.iter().product::<usize>();
    let signed = |n: usize, seed: u64| uniform(n, seed).iter().map(|v| 2.0 * v - 1.0).collect::<Vec<_>>();
    Values {
        x: signed(count(&case.x), seed),
        w: signed(count(&weight_shape(case, cout)), seed + 1),
        bias: signed(cout, seed + 2),
        g: signed(count(&output_shape(case, cout)), seed + 3),
    }
}

/// Output and gradients (x, weight, bias) of `Σ g·conv(x)` on Candle.
fn candle_run(case: &Case, cout: usize, v: &Values) -> [Vec<f64>; 4] {
    let dev = Device::Cpu;
    let x = Var::from_vec(v.x.clone(), case.x.clone(), &dev).unwrap();
    let w = Var::from_vec(v.w.clone(), weight_shape(case, cout), &dev).unwrap();
    let b = Var::from_vec(v.bias.clone(), cout, &dev).unwrap();
    let g = Tensor::from_vec(v.g.clone(), output_shape(case, cout), &dev).unwrap();
    let y = fno_candle::spectral_conv(x.as_tensor(), w.as_tensor(), Some(b.as_tensor()), &spec_of(case)).unwrap();
    let loss = (&y * &g).unwrap().sum_all().unwrap();
    let grads = loss.backward().unwrap();
    let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f64>().unwrap();
    [
        flat(&y),
        flat(grads.get(&x).unwrap()),
        flat(grads.get(&w).unwrap()),
        flat(grads.get(&b).unwrap()),
    ]
}

fn burn_tensor<const N: usize>(values: &[f64], shape: &[usize]) -> BurnTensor<Reference, N> {
    let shape: [usize; N] = shape.try_into().unwrap();
    BurnTensor::from_data(TensorData::new(values.to_vec(), shape), &Default::default()).require_grad()
}

fn reference_run_with<const D: usize, const W: usize>(case: &Case, cout: usize, v: &Values) -> [Vec<f64>; 4] {
    let x = burn_tensor::<D>(&v.x, &case.x);
    let w = burn_tensor::<W>(&v.w, &weight_shape(case, cout));
    let b = burn_tensor::<1>(&v.bias, &[cout]);
    let g = burn_tensor::<D>(&v.g, &output_shape(case, cout));
    let y = spectral_conv_reference(x.clone(), w.clone(), Some(b.clone()), &spec_of(case)).unwrap();
    let grads = (y.clone() * g.detach()).sum().backward();
    let flat = |d: TensorData| d.convert::<f64>().to_vec::<f64>().unwrap();
    [
        flat(y.into_data()),
        flat(x.grad(&grads).unwrap().into_data()),
        flat(w.grad(&grads).unwrap().into_data()),
        flat(b.grad(&grads).unwrap().into_data()),
    ]
}

fn reference_run(case: &Case, cout: usize, v: &Values) -> [Vec<f64>; 4] {
    match (case.x.len(), case.shared) {
        (3, false) => reference_run_with::<3, 4>(case, cout, v),
        (4, false) => reference_run_with::<4, 5>(case, cout, v),
        (5, false) => reference_run_with::<5, 6>(case, cout, v),
        (3, true) => reference_run_with::<3, 3>(case, cout, v),
        (4, true) => reference_run_with::<4, 3>(case, cout, v),
        (_, true) => reference_run_with::<5, 3>(case, cout, v),
        _ => unreachable!("1 to 3 spatial dims"),
    }
}

#[test]
fn outputs_and_gradients_match_the_burn_reference_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    for (i, case) in cases().iter().enumerate() {
        let cout = 4;
        let v = values(case, cout, seed + 10 * i as u64);
        let got = candle_run(case, cout, &v);
        let want = reference_run(case, cout, &v);
        for (what, (g, w)) in ["y", "dx", "dweight", "dbias"].iter().zip(got.iter().zip(&want)) {
            assert_eq!(g.len(), w.len(), "case {i} {what}");
            let e = relative_l2(g, w);
            assert!(
                e < 1e-10,
                "case {i} ({:?} modes {:?}) {what}: {e:e}",
                case.x,
                case.modes
            );
        }
    }
}

#[test]
fn gradients_match_finite_differences() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let case = &cases()[2];
    let cout = 2;
    let v = values(case, cout, seed);
    let [_, dx, dw, _] = candle_run(case, cout, &v);
    let loss = |v: &Values| {
        let [y, ..] = candle_run(case, cout, v);
        y.iter().zip(&v.g).map(|(a, b)| a * b).sum::<f64>()
    };
    // The loss is linear in x and in w: a large step has no truncation error and little round-off.
    let h = 0.1;
    for (which, index) in [(0, 7), (0, 100), (1, 3), (1, 41)] {
        let perturbed = |sign: f64| {
            let mut p = Values {
                x: v.x.clone(),
                w: v.w.clone(),
                bias: v.bias.clone(),
                g: v.g.clone(),
            };
            let target = if which == 0 { &mut p.x } else { &mut p.w };
            target[index] += sign * h;
            loss(&p)
        };
        let numeric = (perturbed(1.0) - perturbed(-1.0)) / (2.0 * h);
        let analytic = if which == 0 { dx[index] } else { dw[index] };
        let e = (numeric - analytic).abs() / analytic.abs().max(1e-3);
        assert!(e < 1e-8, "{} [{index}]: {numeric} vs {analytic}", ["x", "w"][which]);
    }
}

#[test]
fn bad_shapes_are_named_not_panicked() {
    let dev = Device::Cpu;
    let x = Tensor::zeros((2, 3, 16), candle_core::DType::F32, &dev).unwrap();
    let w = Tensor::zeros((4, 5, 5, 2), candle_core::DType::F32, &dev).unwrap();
    let spec = SpectralConvSpec::new(&[5]);
    let err = fno_candle::spectral_conv(&x, &w, None, &spec).unwrap_err().to_string();
    assert!(err.contains("channels"), "{err}");
    let w = Tensor::zeros((3, 5, 5, 2), candle_core::DType::F32, &dev).unwrap();
    let bias = Tensor::zeros(4, candle_core::DType::F32, &dev).unwrap();
    let err = fno_candle::spectral_conv(&x, &w, Some(&bias), &spec)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bias"), "{err}");
    let resized = spec.clone().output_size(&[16]);
    let x2 = Tensor::zeros((2, 3, 8, 8), candle_core::DType::F32, &dev).unwrap();
    let w2 = Tensor::zeros((3, 5, 4, 3, 2), candle_core::DType::F32, &dev).unwrap();
    let err = fno_candle::spectral_conv(&x2, &w2, None, &SpectralConvSpec::new(&[4, 3]).output_size(&[6, 8]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("only the last spatial dim"), "{err}");
    let y = fno_candle::spectral_conv(&x, &w, None, &resized).unwrap();
    assert_eq!(y.dims(), [2, 5, 16]);
    let half = spec.clone().spectrum_precision(fno_ops::Precision::F16);
    let err = fno_candle::spectral_conv(&x, &w, None, &half).unwrap_err().to_string();
    assert!(err.contains("spectrum precision"), "{err}");
    let ints = Tensor::zeros((2, 3, 16), candle_core::DType::U32, &dev).unwrap();
    let err = fno_candle::spectral_conv(&ints, &w, None, &spec)
        .unwrap_err()
        .to_string();
    assert!(err.contains("f32 or f64"), "{err}");
}

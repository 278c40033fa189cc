//! Our ops on Burn's fusion backend, `Fusion<CubeBackend<WgpuRuntime>>` (what
//! `burn::backend::Wgpu` is; lavapipe in CI), and its `Autodiff`: the
//! spectral convolution's kernel paths against the reference path and the
//! f64 oracle (the kernel-path tests' comparison), every other op and its
//! gradients equal to the same op on `CubeBackend`, and each one counted as
//! our custom op on the fusion stream (a trait default running Burn's ops
//! would pass the equality, not the count).

use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{FloatDType, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use burn_fusion::Fusion;
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::fft::Norm;
use fno_kernels::nufft::{NufftType, PointValues};
use fno_ops::fusion::{custom_ops_registered, set_element_wise, ElementWise};
use fno_ops::mode_mix_chain;
use fno_ops::spectral::{retained_spectrum, spectrum_to_grid};
use fno_ops::{
    channel_scale, gelu, loss_norms, mode_mix, nufft_from_real, pointwise_conv, pointwise_conv_finished,
    precise_matmul, spectral_conv, AdamWOperands, AdamWStep, FaultTolerance, InverseShift, MatmulPrecision, ModeMix,
    NufftBackend, NufftOp, PointCloud, PointwiseBackend, Precision, Residual, SpectralConvBackend, SpectralConvSpec,
    SpectralError, SpectralImpl,
};
use fno_testing::{fresh_seed, relative_l2, uniform};

use crate::kernel_paths::{compare_in, injected_contraction_faults_are_detected_and_corrected, Case};

type Cube = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Fz = Fusion<Cube>;

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D]) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), &Default::default())
}

/// Asserts `fusion`'s results equal `cube`'s (relative L2 ≤ 1e-5 each).
fn assert_equal(what: &str, fusion: &[Vec<f64>], cube: &[Vec<f64>]) {
    assert_eq!(fusion.len(), cube.len(), "{what}: results");
    for (i, (f, c)) in fusion.iter().zip(cube).enumerate() {
        assert_eq!(f.len(), c.len(), "{what}: result {i} sizes");
        let e = relative_l2(f, c);
        assert!(e <= 1e-5, "{what}: result {i} off CubeBackend's by {e:e}");
    }
}

/// Runs `case` on `Autodiff<Fusion<Cube>>` and `Autodiff<Cube>`: equal
/// results, and `ops` custom ops registered on the fusion stream.
macro_rules! on_both {
    ($what:expr, $ops:expr, $case:ident ( $($arg:expr),* )) => {{
        let before = custom_ops_registered();
        let fusion = $case::<Autodiff<Fz>>($($arg),*);
        let registered = custom_ops_registered() - before;
        let cube = $case::<Autodiff<Cube>>($($arg),*);
        assert_equal($what, &fusion, &cube);
        assert_eq!(registered, $ops, "{}: custom ops registered on Fusion", $what);
    }};
}

/// The kernel paths' comparison on the fusion type: a 2D grid with a pitched
/// x (a view Burn fusion hands over as it is), a 1D grid whose modes miss
/// frequency 0 (the bias added over the output), shared weights, checked
/// contractions, and half-precision spectra.
#[test]
fn spectral_conv_on_fusion_matches_reference() {
    type Diff = Autodiff<Fz>;
    let cases: Vec<Case> = vec![
        (2, 3, 4, vec![16, 32], vec![16, 32], vec![7, 17], Norm::Forward, false),
        (2, 2, 3, vec![9, 8], vec![9, 8], vec![2, 3], Norm::Backward, false),
        (2, 3, 4, vec![16, 16], vec![16, 16], vec![8, 5], Norm::Forward, true),
    ];
    let seed = fresh_seed();
    println!("seed {seed}");
    for (i, case) in cases.into_iter().enumerate() {
        let half = if i == 0 {
            vec![(Precision::F16, FloatDType::F32), (Precision::BF16, FloatDType::F32)]
        } else {
            vec![]
        };
        // main's inverse shift on the odd grid.
        let shift = if i == 1 {
            InverseShift::Ifftshift
        } else {
            InverseShift::Fftshift
        };
        compare_in::<Diff>(
            case,
            seed + 10 * i as u64,
            (i == 0, shift),
            &half,
            &[FaultTolerance::Detect],
        );
    }
    // The fault counters are read after the fusion stream has run.
    injected_contraction_faults_are_detected_and_corrected::<Fz>();
}

/// `Σ y²` of a biased 1D convolution through `imp`: y and the three gradients.
fn conv_case<B: SpectralConvBackend + AutodiffBackend>(imp: SpectralImpl, seed: u64) -> Vec<Vec<f64>> {
    let (b, ci, co, n, m) = (2, 3, 4, 24, 7);
    let x = tensor::<B, 3>(&uniform(b * ci * n, seed), [b, ci, n]).require_grad();
    let w = tensor::<B, 4>(&uniform(ci * co * m * 2, seed + 1), [ci, co, m, 2]).require_grad();
    let bias = tensor::<B, 1>(&uniform(co, seed + 2), [co]).require_grad();
    let spec = SpectralConvSpec::new(&[m]);
    let y = spectral_conv(x.clone(), w.clone(), Some(bias.clone()), &spec, imp).unwrap();
    let g = (y.clone() * y.clone()).sum().backward();
    vec![
        values(y.inner()),
        values(x.grad(&g).unwrap()),
        values(w.grad(&g).unwrap()),
        values(bias.grad(&g).unwrap()),
    ]
}

/// Each path is one op forward and one backward on the fusion stream.
#[test]
fn spectral_conv_runs_as_our_ops_on_fusion() {
    let seed = fresh_seed();
    println!("seed {seed}");
    for imp in [SpectralImpl::Unfused, SpectralImpl::Fused] {
        on_both!(&format!("{imp:?} convolution"), 2, conv_case(imp, seed));
    }
}

/// `Σ r ⊙ (lhs·rhs)` with both operands' gradients.
fn matmul_case<B: PointwiseBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let lhs = tensor::<B, 3>(&uniform(2 * 5 * 6, seed), [2, 5, 6]).require_grad();
    let rhs = tensor::<B, 3>(&uniform(6 * 3, seed + 1), [1, 6, 3]).require_grad();
    let r = tensor::<B, 3>(&uniform(2 * 5 * 3, seed + 2), [2, 5, 3]);
    let y = precise_matmul(lhs.clone(), rhs.clone());
    let g = (y.clone() * r).sum().backward();
    vec![
        values(y.inner()),
        values(lhs.grad(&g).unwrap()),
        values(rhs.grad(&g).unwrap()),
    ]
}

/// A biased 1×1 convolution and its three gradients (input, weight, bias).
fn pointwise_case<B: PointwiseBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let (b, ci, co, s) = (2, 3, 5, 40);
    let x = tensor::<B, 3>(&uniform(b * ci * s, seed), [b, ci, s]).require_grad();
    let w = tensor::<B, 2>(&uniform(co * ci, seed + 1), [co, ci]).require_grad();
    let bias = tensor::<B, 1>(&uniform(co, seed + 2), [co]).require_grad();
    let r = tensor::<B, 3>(&uniform(b * co * s, seed + 3), [b, co, s]);
    let y = pointwise_conv(x.clone(), w.clone(), Some(bias.clone()), MatmulPrecision::F32);
    let g = (y.clone() * r).sum().backward();
    vec![
        values(y.inner()),
        values(x.grad(&g).unwrap()),
        values(w.grad(&g).unwrap()),
        values(bias.grad(&g).unwrap()),
    ]
}

/// A convolution finished by a gated residual and GELU, `Σ r ⊙ gelu(W·x +
/// bias + g ⊙ res)`, and the gradients of all five operands.
fn finished_case<B: PointwiseBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let (b, ci, co, s) = (2, 3, 5, 40);
    let x = tensor::<B, 3>(&uniform(b * ci * s, seed), [b, ci, s]).require_grad();
    let w = tensor::<B, 2>(&uniform(co * ci, seed + 1), [co, ci]).require_grad();
    let bias = tensor::<B, 1>(&uniform(co, seed + 2), [co]).require_grad();
    let res = tensor::<B, 3>(&uniform(b * co * s, seed + 3), [b, co, s]).require_grad();
    let gate = tensor::<B, 1>(&uniform(co, seed + 4), [co]).require_grad();
    let r = tensor::<B, 3>(&uniform(b * co * s, seed + 5), [b, co, s]);
    let residual = Some(Residual {
        values: res.clone(),
        gate: Some(gate.clone()),
    });
    let y = pointwise_conv_finished(
        x.clone(),
        w.clone(),
        Some(bias.clone()),
        residual,
        true,
        MatmulPrecision::F32,
    );
    let g = (y.clone() * r).sum().backward();
    let mut out = vec![values(y.inner())];
    out.extend([x.grad(&g), res.grad(&g)].map(|t| values(t.unwrap())));
    out.extend([w.grad(&g).map(values).unwrap()]);
    out.extend([bias.grad(&g), gate.grad(&g)].map(|t| values(t.unwrap())));
    out
}

/// An H1 loss's norms, `Σ r ⊙ loss_norms(x, y)`, and both operands' gradients.
fn loss_case<B: PointwiseBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let shape = [2, 1, 12, 10];
    let x = tensor::<B, 4>(&uniform(240, seed), shape).require_grad();
    let y = tensor::<B, 4>(&uniform(240, seed + 1), shape).require_grad();
    let r = tensor::<B, 2>(&uniform(4, seed + 2), [2, 2]);
    let norms = loss_norms(x.clone(), y.clone(), true);
    let g = (norms.clone() * r).sum().backward();
    vec![
        values(norms.inner()),
        values(x.grad(&g).unwrap()),
        values(y.grad(&g).unwrap()),
    ]
}

#[test]
fn matmuls_and_pointwise_convolutions_run_as_our_ops_on_fusion() {
    let seed = fresh_seed();
    println!("seed {seed}");
    on_both!("precise matmul", 3, matmul_case(seed));
    // Forward, the input gradient (a convolution by the transposed weight), the parameters' gradients.
    on_both!("1×1 convolution", 3, pointwise_case(seed + 10));
    // Forward; GELU's derivative, the residual's gated gradient, the input
    // gradient, the parameters' (the gate's is a sum by Burn's ops).
    on_both!("finished 1×1 convolution", 5, finished_case(seed + 20));
    // The norms; the gradient of the difference's, and of y's own.
    on_both!("loss norms", 3, loss_case(seed + 30));
}

/// GELU of a channel scale, `Σ r ⊙ gelu(x·g)`, with x's and g's gradients.
fn element_wise_case<B: PointwiseBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let (b, c, s) = (2, 3, 50);
    let x = tensor::<B, 3>(&uniform(b * c * s, seed), [b, c, s]).require_grad();
    let scale = tensor::<B, 1>(&uniform(c, seed + 1), [c]).require_grad();
    let r = tensor::<B, 3>(&uniform(b * c * s, seed + 2), [b, c, s]);
    let y = gelu(channel_scale(x.clone(), scale.clone()) * 3.0);
    let g = (y.clone() * r).sum().backward();
    vec![
        values(y.inner()),
        values(x.grad(&g).unwrap()),
        values(scale.grad(&g).unwrap()),
    ]
}

/// Two AdamW steps of two parameters in one call each (pairs of complex
/// ones), moments and all.
fn adamw_case<B: PointwiseBackend>(seed: u64) -> Vec<Vec<f64>> {
    let wrap = |t| Tensor::<B, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(t));
    let lens = [24, 10];
    let mut params = lens.map(|n| {
        tensor::<B, 1>(&uniform(n, seed + n as u64), [n])
            .into_primitive()
            .tensor()
    });
    let mut moments: [Option<_>; 2] = [None, None];
    let mut out = Vec::new();
    for time in 1..=2 {
        let step = AdamWStep {
            lr: 1e-2,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-8,
            weight_decay: 1e-4,
            time: time as usize,
            pairs: true,
            grad_scale: 1.0,
        };
        let operands = (0..2)
            .map(|k| AdamWOperands {
                param: params[k].clone(),
                grad: tensor::<B, 1>(&uniform(lens[k], seed + time + 7 * k as u64), [lens[k]])
                    .into_primitive()
                    .tensor(),
                moments: moments[k].take(),
            })
            .collect();
        for (k, [p, m, v]) in B::adamw_steps(operands, &step).into_iter().enumerate() {
            out.push(values(wrap(p.clone())));
            params[k] = p;
            moments[k] = Some((m, v));
        }
    }
    for (m, v) in moments.into_iter().flatten() {
        out.extend([values(wrap(m)), values(wrap(v))]);
    }
    out
}

/// GELU, the channel scale and AdamW: our kernels by default, Burn's ops
/// (no custom op: Burn fusion merges them) when asked for, equal either way.
#[test]
fn element_wise_ops_run_either_way_on_fusion() {
    let seed = fresh_seed();
    println!("seed {seed}");
    assert_eq!(fno_ops::fusion::element_wise(), ElementWise::Kernels);
    // Forward: the scale and GELU; backward: GELU's derivative and the scale of the gradient.
    on_both!("GELU of a channel scale (kernels)", 4, element_wise_case(seed));
    let before = custom_ops_registered();
    let fusion = adamw_case::<Fz>(seed);
    assert_eq!(
        custom_ops_registered() - before,
        2,
        "AdamW by the kernel: one op a step for both parameters"
    );
    assert_equal("AdamW (kernels)", &fusion, &adamw_case::<Cube>(seed));
    set_element_wise(ElementWise::BurnFusion);
    on_both!("GELU of a channel scale (Burn fusion)", 0, element_wise_case(seed));
    let before = custom_ops_registered();
    let fusion = adamw_case::<Fz>(seed);
    assert_eq!(custom_ops_registered(), before, "AdamW by Burn's ops registers nothing");
    set_element_wise(ElementWise::Kernels);
    assert_equal("AdamW (Burn fusion)", &fusion, &adamw_case::<Cube>(seed));
}

/// A per-mode mix, then a chain of three with a bias at one mode, and the
/// gradients of every operand.
fn mode_mix_case<B: SpectralConvBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let (b, c, k) = (2, 3, 5);
    let x = tensor::<B, 4>(&uniform(b * c * k * 2, seed), [b, c, k, 2]).require_grad();
    let w: Vec<Tensor<B, 4>> = (0..3)
        .map(|i| tensor::<B, 4>(&uniform(c * c * k * 2, seed + 1 + i), [c, c, k, 2]).require_grad())
        .collect();
    let bias = tensor::<B, 1>(&uniform(c, seed + 5), [c]).require_grad();
    let y = mode_mix(x.clone(), w[0].clone(), ModeMix::Forward);
    let at = fno_kernels::cgemm::ModeBias { mode: 0, factor: 2.0 };
    let weights = [w[0].clone(), w[1].clone(), w[2].clone()];
    let mixes = [ModeMix::Forward, ModeMix::GradInput, ModeMix::Forward];
    let z = mode_mix_chain(y.clone(), weights, mixes, Some((bias.clone(), at)));
    let g = (z.clone() * z.clone()).sum().backward();
    let mut out = vec![values(y.inner()), values(z.inner()), values(x.grad(&g).unwrap())];
    out.extend(w.iter().map(|w| values(w.grad(&g).unwrap())));
    out.push(values(bias.grad(&g).unwrap()));
    out
}

/// The two transforms as ops of their own, grid → spectrum → grid, with the input's gradient.
fn transforms_case<B: SpectralConvBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let shape = [2, 3, 12, 10];
    let x = tensor::<B, 4>(&uniform(shape.iter().product(), seed), shape).require_grad();
    let spec = SpectralConvSpec::new(&[5, 4]);
    let s = retained_spectrum(x.clone(), &spec).unwrap();
    let y: Tensor<B, 4> = spectrum_to_grid(s.clone() * 1.5, &[12, 10], &spec, Precision::F32).unwrap();
    let g = (y.clone() * y.clone()).sum().backward();
    vec![values(s.inner()), values(y.inner()), values(x.grad(&g).unwrap())]
}

/// Type 1 of real values at points, with the values' gradient.
fn nufft_case<B: NufftBackend + AutodiffBackend>(seed: u64) -> Vec<Vec<f64>> {
    let points = 30;
    let coords: Vec<f64> = uniform(points, seed).iter().map(|v| v * 3.0).collect();
    let op = NufftOp {
        points: PointCloud::new(coords, 1).unwrap(),
        kind: NufftType::One,
        modes: vec![8],
        eps: 1e-6,
        isign: -1,
        values: PointValues::Real,
        scale: 0.5,
    };
    let x = tensor::<B, 3>(&uniform(2 * points, seed + 1), [1, 2, points]).require_grad();
    let y = nufft_from_real(x.clone(), &op);
    let g = (y.clone() * y.clone()).sum().backward();
    vec![values(y.inner()), values(x.grad(&g).unwrap())]
}

#[test]
fn mixes_transforms_and_nuffts_run_as_our_ops_on_fusion() {
    let seed = fresh_seed();
    println!("seed {seed}");
    // Forward: the mix and the chain; backward: the chain's adjoint chain and
    // three weight gradients, the mix's input and weight gradients.
    on_both!("mode mixes", 2 + 4 + 2, mode_mix_case(seed));
    on_both!("transforms", 4, transforms_case(seed + 10));
    on_both!("NUFFT", 2, nufft_case(seed + 20));
}

/// What the fusion client would run later is refused now, as an error.
#[test]
fn kernel_paths_on_fusion_refuse_at_registration() {
    let device = Default::default();
    let x = Tensor::<Fz, 3>::zeros([2, 3, 16], &device);
    let w = Tensor::<Fz, 4>::zeros([3, 4, 5, 2], &device);
    let spec = SpectralConvSpec::new(&[5]);
    let before = custom_ops_registered();
    let refused = |spec: &SpectralConvSpec, imp, w: Tensor<Fz, 4>| {
        let e = spectral_conv(x.clone(), w, None, spec, imp).map(|_| ()).unwrap_err();
        assert!(
            matches!(e, SpectralError::Unsupported(_) | SpectralError::Invalid(_)),
            "{e}"
        );
        e.to_string()
    };
    let checked = spec.clone().fault_tolerance(FaultTolerance::Detect);
    assert!(refused(&checked, SpectralImpl::Fused, w.clone()).contains("fault tolerance"));
    let half = spec.clone().spectrum_precision(Precision::F16);
    assert!(refused(&half, SpectralImpl::Fused, w.clone()).contains("f32"));
    let wrong = Tensor::<Fz, 4>::zeros([2, 4, 5, 2], &device);
    refused(&spec, SpectralImpl::Unfused, wrong);
    // The transforms as ops of their own: shapes checked and plans built.
    let bins = SpectralConvSpec::new(&[12]);
    assert!(retained_spectrum(x.clone(), &bins).is_err(), "12 bins of 16 points");
    let s = Tensor::<Fz, 4>::zeros([2, 3, 7, 2], &device);
    let e = spectrum_to_grid::<Fz, 3>(s, &[16], &spec, Precision::F32).unwrap_err();
    assert!(e.to_string().contains("[B, C, 5, 2]"), "{e}");
    assert_eq!(custom_ops_registered(), before, "nothing refused was registered");
    // The device's memory is read after the stream ran (an op is live).
    let y = spectral_conv(x.clone(), w, None, &spec, SpectralImpl::Unfused).unwrap();
    let memory = Fz::device_memory(&device).expect("CubeCL pools");
    assert!(memory.in_use > 0 && memory.reserved >= memory.in_use, "{memory:?}");
    assert_eq!(values(y), vec![0.0; 2 * 4 * 16]);
}

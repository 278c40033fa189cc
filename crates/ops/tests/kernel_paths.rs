//! The Unfused and Fused kernel paths (wgpu; lavapipe in CI) against the
//! reference path (ndarray, f64) and against the direct f64 computation:
//! forward, and the gradients of x, weight and bias through Autodiff. (The reference path runs on
//! wgpu too, but Burn's autotuned matmuls compile slowly on a software device.)

use crate::common;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::FloatDType;
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use common::{random, rel_l2, spectral_conv_f64, Problem};
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::fault::output_fault_site;
use fno_kernels::fft::Norm;
use fno_ops::spec::norm_scales;
use fno_ops::{
    spectral_conv, FaultTolerance, InverseShift, Precision, SpectralConvBackend, SpectralConvSpec, SpectralError,
    SpectralImpl,
};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Diff = Autodiff<Wgpu>;
type Exact = Autodiff<NdArray<f64>>;

struct Outcome {
    y: Vec<f64>,
    grads: [Vec<f64>; 3],
}

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

#[allow(clippy::too_many_arguments)]
fn run<B: SpectralConvBackend + burn::tensor::backend::AutodiffBackend, const D: usize, const W: usize>(
    imp: SpectralImpl,
    spec: &SpectralConvSpec,
    xs: &[usize],
    ws: &[usize],
    x: &[f64],
    w: &[f64],
    b: &[f64],
    r: &[f64],
    views: bool,
    x_dtype: FloatDType,
) -> Outcome {
    let device = Default::default();
    let t = |v: &[f64], s: &[usize]| TensorData::new(v.to_vec(), s.to_vec());
    // Views laid out as Burn's CUDA allocator pitches rows, so the kernels must
    // not assume density: x's rows padded by 64 floats (a view whose handle
    // ends at its last row, see `narrowed_rows_are_views`), the weight a view
    // of (re, im, 7, 7) rows.
    let (xt, x_view) = if views {
        let pitch = xs[D - 1] + PITCH_PAD;
        let rows: Vec<f64> = x
            .chunks(xs[D - 1])
            .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(7.0, PITCH_PAD)))
            .collect();
        let mut pitched_shape = xs.to_vec();
        pitched_shape[D - 1] = pitch;
        let xt = Tensor::<B, D>::from_data(t(&rows, &pitched_shape), &device).require_grad();
        (xt.clone(), xt.narrow(D - 1, 0, xs[D - 1]))
    } else {
        let xt = Tensor::<B, D>::from_data(t(x, xs), &device).require_grad();
        (xt.clone(), xt)
    };
    let (wt, w_view) = if views {
        let rows: Vec<f64> = w.chunks(2).flat_map(|c| [c[0], c[1], 7.0, 7.0]).collect();
        let mut padded_shape = ws.to_vec();
        padded_shape[W - 1] = 4;
        let wt = Tensor::<B, W>::from_data(t(&rows, &padded_shape), &device).require_grad();
        (wt.clone(), wt.narrow(W - 1, 0, 2))
    } else {
        let wt = Tensor::<B, W>::from_data(t(w, ws), &device).require_grad();
        (wt.clone(), wt)
    };
    let bt = Tensor::<B, 1>::from_data(t(b, &[b.len()]), &device).require_grad();
    // A half-precision x comes in as a cast (whose gradient is cast back).
    let x_view = if x_dtype == FloatDType::F32 {
        x_view
    } else {
        x_view.cast(x_dtype)
    };
    let y = spectral_conv(x_view, w_view, Some(bt.clone()), spec, imp).unwrap();
    let y = if x_dtype == FloatDType::F32 {
        y
    } else {
        assert_eq!(y.dtype(), x_dtype.into(), "the output holds the input's precision");
        y.cast(FloatDType::F32)
    };
    let rt = Tensor::<B, D>::from_data(t(r, &y.dims()), &device);
    let g = (y.clone() * rt).sum().backward();
    Outcome {
        y: to_vec(y.inner()),
        grads: [
            to_vec(xt.grad(&g).unwrap().narrow(D - 1, 0, xs[D - 1])),
            to_vec(wt.grad(&g).unwrap().narrow(W - 1, 0, 2)),
            to_vec(bt.grad(&g).unwrap()),
        ],
    }
}

/// Floats of padding after each row of a pitched x: 256 bytes, the largest
/// offset alignment Burn asks of a view.
const PITCH_PAD: usize = 64;

/// (batch, cin, cout, grid, output grid, stored modes, norm, shared)
pub(crate) type Case = (usize, usize, usize, Vec<usize>, Vec<usize>, Vec<usize>, Norm, bool);

fn compare(case: Case, seed: u64, views: bool, shift: InverseShift) {
    compare_in::<Diff>(case, seed, (views, shift), &[], &[]);
}

/// [`compare`] (x through a pitched view if `views`, the modes shifted back
/// by `shift`), with the Unfused path also under each of `checked`'s fault
/// tolerances (same bounds, and no fault counted), then with half-precision
/// spectra and x in each `half` pair's (spectrum precision, x dtype).
pub(crate) fn compare_in<K: SpectralConvBackend + burn::tensor::backend::AutodiffBackend>(
    case: Case,
    seed: u64,
    (views, shift): (bool, InverseShift),
    half: &[(Precision, FloatDType)],
    checked: &[FaultTolerance],
) {
    let (batch, cin, cout, grid, out_grid, modes, norm, shared) = case;
    let mut spec = SpectralConvSpec::new(&modes)
        .norm(norm)
        .output_size(&out_grid)
        .inverse_shift(shift);
    if shared {
        spec = spec.shared_weights();
    }
    let mut xs = vec![batch, cin];
    xs.extend(&grid);
    let mut ws = vec![cin, cout];
    if !shared {
        ws.extend(&modes);
    }
    ws.push(2);
    let x = random(xs.iter().product(), seed);
    let w = random(ws.iter().product(), seed + 1);
    let b = random(cout, seed + 2);
    let r = random(batch * cout * out_grid.iter().product::<usize>(), seed + 3);
    macro_rules! go {
        ($b:ty, $imp:expr, $pad:expr) => {
            go!($b, $imp, $pad, &spec, FloatDType::F32)
        };
        ($b:ty, $imp:expr, $pad:expr, $spec:expr, $x_dtype:expr) => {
            match (grid.len(), shared) {
                (1, false) => run::<$b, 3, 4>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
                (2, false) => run::<$b, 4, 5>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
                (3, false) => run::<$b, 5, 6>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
                (1, true) => run::<$b, 3, 3>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
                (2, true) => run::<$b, 4, 3>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
                _ => run::<$b, 5, 3>($imp, $spec, &xs, &ws, &x, &w, &b, &r, $pad, $x_dtype),
            }
        };
    }
    let reference = go!(Exact, SpectralImpl::Reference, false);
    let scales: Vec<(f64, f64)> = grid
        .iter()
        .zip(&out_grid)
        .map(|(&i, &o)| norm_scales(norm, i, o))
        .collect();
    let p = Problem {
        batch,
        cin,
        cout,
        input: grid.clone(),
        output: out_grid.clone(),
        modes: modes.clone(),
        forward_scale: scales.iter().map(|s| s.0).collect(),
        inverse_scale: scales.iter().map(|s| s.1).collect(),
        shared,
        shift,
    };
    let exact = spectral_conv_f64(&p, &x, &w, Some(&b));
    let device = Default::default();
    let runs = [SpectralImpl::Unfused, SpectralImpl::Fused]
        .map(|imp| (imp, FaultTolerance::Off))
        .into_iter()
        .chain(checked.iter().map(|&t| (SpectralImpl::Unfused, t)));
    for (imp, tolerance) in runs {
        // Only checked runs count (other tests of this process run unchecked,
        // and this one injects its faults after these runs).
        let before = (tolerance != FaultTolerance::Off).then(|| K::fault_counts(&device));
        let kernels = go!(K, imp, views, &spec.clone().fault_tolerance(tolerance), FloatDType::F32);
        let name = format!(
            "{imp:?} ({tolerance:?}) grid {grid:?}->{out_grid:?} modes {modes:?} {norm:?} shared={shared} views={views} {shift:?}"
        );
        if let Some(before) = before {
            assert_eq!(
                K::fault_counts(&device),
                before,
                "{name}: a fault-free run counted faults"
            );
        }
        let e = rel_l2(&kernels.y, &exact);
        assert!(e < 1e-5, "{name}: forward vs f64: {e:e}");
        let e = rel_l2(&kernels.y, &reference.y);
        assert!(e < 1e-5, "{name}: forward vs reference: {e:e}");
        for (what, (k, r)) in ["grad_x", "grad_w", "grad_bias"]
            .iter()
            .zip(kernels.grads.iter().zip(&reference.grads))
        {
            let e = rel_l2(k, r);
            assert!(e < 1e-5, "{name}: {what} vs reference: {e:e}");
        }
    }
    if half.is_empty() {
        return;
    }
    // Half-precision spectra: every result within the precision's bound of the
    // f32 path's, and off it (rounding happened); the reference path rounds
    // its spectra alike. The output and input gradient come out in x's
    // precision, so an f16 x adds its own rounding.
    for &(precision, x_dtype) in half {
        let half_spec = spec.clone().spectrum_precision(precision);
        let name =
            format!("{precision} spectra, x {x_dtype:?}: grid {grid:?}->{out_grid:?} modes {modes:?} shared={shared}");
        let bound = if precision == Precision::F16 { 1e-3 } else { 1e-2 };
        let kernels = go!(K, SpectralImpl::Unfused, views, &half_spec, x_dtype);
        let rounded = go!(Exact, SpectralImpl::Reference, false, &half_spec, FloatDType::F32);
        let results = [("forward", &kernels.y, &reference.y, &rounded.y)].into_iter().chain(
            ["grad_x", "grad_w", "grad_bias"]
                .into_iter()
                .zip(kernels.grads.iter().zip(&reference.grads).zip(&rounded.grads))
                .map(|(w, ((k, r), o))| (w, k, r, o)),
        );
        for (what, k, full, rounded) in results {
            let e = rel_l2(k, full);
            assert!(e < bound, "{name}: {what} vs f32 reference: {e:e}");
            if what != "grad_bias" {
                assert!(
                    e > 1e-6,
                    "{name}: {what} is the f32 result ({e:e}): nothing was rounded"
                );
            }
            let e_rounded = rel_l2(k, rounded);
            assert!(e_rounded < bound, "{name}: {what} vs rounded reference: {e_rounded:e}");
            println!("{name}: {what}: {e:.1e} off f32, {e_rounded:.1e} off the rounded reference");
        }
    }
}

/// Runs each case with its own seed (`first_seed` on), the odd ones through a
/// pitched x, the modes shifted back by `shift`.
fn compare_all(cases: Vec<Case>, first_seed: usize, shift: InverseShift) {
    for (i, case) in cases.into_iter().enumerate() {
        let seed = first_seed + i;
        compare(case, 1000 + seed as u64 * 17, seed % 2 == 1, shift);
    }
}

/// Power-of-two grids. The cases are split over two tests so that the test
/// threads compile their kernels side by side on lavapipe.
#[test]
fn kernel_paths_match_reference_on_power_of_two_grids() {
    let cases: Vec<Case> = vec![
        (3, 4, 5, vec![64], vec![64], vec![9], Norm::Forward, false),
        (2, 3, 2, vec![32], vec![32], vec![17], Norm::Backward, false),
        // Non-square 2D grid, odd centred window, Nyquist column kept.
        (2, 3, 4, vec![16, 32], vec![16, 32], vec![7, 17], Norm::Forward, false),
        (1, 2, 3, vec![32, 16], vec![32, 16], vec![12, 5], Norm::Ortho, false),
        (
            2,
            2,
            2,
            vec![8, 16, 8],
            vec![8, 16, 8],
            vec![5, 6, 3],
            Norm::Forward,
            false,
        ),
        // Output size changed along the last dim (as neuraloperator's irfftn(s=...)).
        (2, 3, 3, vec![16, 16], vec![16, 32], vec![6, 5], Norm::Forward, false),
        // ... keeping the input's Nyquist bin, which the output grid counts twice, and back.
        (2, 2, 3, vec![8, 8], vec![8, 16], vec![4, 5], Norm::Forward, false),
        (2, 3, 2, vec![16], vec![8], vec![5], Norm::Ortho, false),
        // The weight has more modes than the grid: cropped as neuraloperator does.
        (2, 2, 3, vec![8, 16], vec![8, 16], vec![12, 11], Norm::Forward, false),
        // TurboFNO's shared weights.
        (2, 3, 4, vec![16, 16], vec![16, 16], vec![8, 5], Norm::Forward, true),
        (4, 5, 3, vec![128], vec![128], vec![33], Norm::Forward, true),
    ];
    compare_all(cases, 0, InverseShift::Fftshift);
}

#[test]
fn kernel_paths_match_reference_on_any_size_grids() {
    let cases: Vec<Case> = vec![
        // Any grid size: mixed-radix (12, 15, 20, 100) and Bluestein (85, 7, 9,
        // 21, 97) lengths, odd non-last dims with neuraloperator's placement of
        // their modes one index lower, odd and even windows on them.
        (2, 3, 4, vec![85], vec![85], vec![12], Norm::Forward, false),
        (2, 2, 3, vec![15, 21], vec![15, 21], vec![7, 6], Norm::Forward, false),
        (1, 2, 2, vec![9, 12], vec![9, 12], vec![4, 5], Norm::Backward, false),
        (2, 2, 2, vec![5, 7, 9], vec![5, 7, 9], vec![3, 4, 3], Norm::Ortho, false),
        (2, 3, 2, vec![12, 15], vec![12, 20], vec![5, 6], Norm::Forward, false),
        (2, 2, 3, vec![21], vec![16], vec![7], Norm::Forward, false),
        (1, 3, 3, vec![97, 100], vec![97, 100], vec![16, 9], Norm::Forward, true),
        // Two modes of an odd dim sit at frequencies -2 and -1 (one lower):
        // no frequency 0 to carry the bias, which is added over the output.
        (2, 2, 3, vec![9, 8], vec![9, 8], vec![2, 3], Norm::Backward, false),
    ];
    compare_all(cases, 11, InverseShift::Fftshift);
}

/// neuraloperator main's inverse shift (ifftshift), which differs from
/// 2.0.0's on odd non-last dims: odd and even windows on them, a resized
/// last dim, 3D, shared weights, and two modes of an odd dim at frequencies
/// -1 and 0 (the bias at frequency 0 again).
#[test]
fn kernel_paths_follow_mains_inverse_shift() {
    let cases: Vec<Case> = vec![
        (2, 2, 3, vec![15, 21], vec![15, 21], vec![7, 6], Norm::Forward, false),
        (2, 3, 2, vec![9, 12], vec![9, 16], vec![4, 5], Norm::Backward, false),
        (2, 2, 2, vec![5, 7, 9], vec![5, 7, 9], vec![3, 4, 3], Norm::Ortho, false),
        (2, 2, 3, vec![9, 8], vec![9, 8], vec![2, 3], Norm::Backward, false),
        (1, 3, 3, vec![11, 16], vec![11, 16], vec![5, 4], Norm::Forward, true),
    ];
    compare_all(cases, 31, InverseShift::Ifftshift);
}

/// The CPU's kernel path (NdArray, threaded): forward and gradients against
/// the f64 oracle and the reference path on power-of-two, mixed-radix,
/// Bluestein and odd grids, 1-3 D, shared weights, a resized last dim, the
/// bias without a frequency-0 mode, pitched views, both inverse shifts and
/// half-precision spectra.
#[test]
fn cpu_kernel_path_matches_reference() {
    type Cpu = Autodiff<NdArray<f32>>;
    let cases: Vec<Case> = vec![
        (3, 4, 5, vec![64], vec![64], vec![9], Norm::Forward, false),
        (2, 3, 4, vec![16, 32], vec![16, 32], vec![7, 17], Norm::Forward, false),
        (2, 3, 2, vec![12, 15], vec![12, 20], vec![5, 6], Norm::Forward, false),
        (2, 2, 2, vec![5, 7, 9], vec![5, 7, 9], vec![3, 4, 3], Norm::Ortho, false),
        (2, 3, 4, vec![85], vec![85], vec![12], Norm::Backward, false),
        (2, 2, 3, vec![9, 8], vec![9, 8], vec![2, 3], Norm::Backward, false),
        (2, 3, 4, vec![16, 16], vec![16, 16], vec![8, 5], Norm::Forward, true),
    ];
    // Half-precision spectra, held rounded as the kernels store them.
    let half = [(Precision::F16, FloatDType::F32), (Precision::BF16, FloatDType::F32)];
    for (i, case) in cases.into_iter().enumerate() {
        for shift in [InverseShift::Fftshift, InverseShift::Ifftshift] {
            let half = if shift == InverseShift::Fftshift {
                &half[..]
            } else {
                &[]
            };
            compare_in::<Cpu>(case.clone(), 9000 + i as u64 * 7, (i % 2 == 1, shift), half, &[]);
        }
    }
}

/// Half-precision spectra (f16 and bf16; x in f32, and in f16 where the
/// spectra are) on grids of every kind: power of two, Bluestein, 3D, shared
/// weights, a pitched x.
#[test]
fn half_precision_spectra_match_reference() {
    half_precision_spectra::<Diff>();
}

/// The same on CUDA: run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_spectra_match_reference_on_cuda() {
    half_precision_spectra::<Autodiff<CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>>>();
}

fn half_precision_spectra<K: SpectralConvBackend + burn::tensor::backend::AutodiffBackend>() {
    let both = [
        (Precision::F16, FloatDType::F32),
        (Precision::F16, FloatDType::F16),
        (Precision::BF16, FloatDType::F32),
    ];
    let cases: Vec<Case> = vec![
        (2, 3, 4, vec![16, 32], vec![16, 32], vec![7, 17], Norm::Forward, false),
        (2, 3, 4, vec![85], vec![85], vec![12], Norm::Forward, false),
        (2, 2, 2, vec![5, 7, 9], vec![5, 7, 9], vec![3, 4, 3], Norm::Ortho, false),
        (2, 3, 4, vec![16, 16], vec![16, 16], vec![8, 5], Norm::Forward, true),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        compare_in::<K>(
            case,
            5000 + i as u64 * 13,
            (i % 2 == 1, InverseShift::Fftshift),
            &both,
            &[],
        );
    }
}

/// The unfused path under checksums (`detect`, `correct`): forward and
/// backward as unchecked, in 1-3 D, with per-mode and shared weights, output
/// resizing and pitched views, and no fault counted on a fault-free run.
#[test]
fn checked_kernel_paths_match_reference_and_flag_nothing() {
    let checks = [FaultTolerance::Detect, FaultTolerance::Correct];
    let cases: Vec<Case> = vec![
        (3, 4, 5, vec![64], vec![64], vec![9], Norm::Forward, false),
        (2, 3, 4, vec![20, 24], vec![20, 30], vec![6, 7], Norm::Ortho, false),
        (
            2,
            2,
            3,
            vec![6, 8, 10],
            vec![6, 8, 10],
            vec![4, 4, 3],
            Norm::Forward,
            false,
        ),
        (2, 3, 3, vec![16, 16], vec![16, 16], vec![8, 5], Norm::Backward, true),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        compare_in::<Diff>(
            case,
            7000 + i as u64 * 11,
            (i % 2 == 1, InverseShift::Fftshift),
            &[],
            &checks,
        );
    }
    // Here rather than in a test of its own: the pending fault goes to
    // whichever checked contraction runs next in this process.
    injected_contraction_faults_are_detected_and_corrected::<Wgpu>();
}

/// A bit flipped in the forward's contraction output (`inject_contraction_fault`):
/// `detect` counts it and leaves the output wrong, `correct` counts it
/// corrected and the output is the fault-free one.
pub(crate) fn injected_contraction_faults_are_detected_and_corrected<K: SpectralConvBackend>() {
    let device = Default::default();
    let seed = common::fresh_seed();
    println!("seed {seed}");
    let (batch, cin, cout, n, m) = (3, 4, 5, 48, 10);
    let x = Tensor::<K, 3>::from_data(TensorData::new(random(batch * cin * n, seed), [batch, cin, n]), &device);
    let w = Tensor::<K, 4>::from_data(
        TensorData::new(random(cin * cout * m * 2, seed + 1), [cin, cout, m, 2]),
        &device,
    );
    let spec = SpectralConvSpec::new(&[m]);
    let conv = |tolerance: FaultTolerance| {
        let spec = spec.clone().fault_tolerance(tolerance);
        to_vec(spectral_conv(x.clone(), w.clone(), None, &spec, SpectralImpl::Unfused).unwrap())
    };
    let clean = conv(FaultTolerance::Off);
    for (i, tolerance) in [FaultTolerance::Detect, FaultTolerance::Correct]
        .into_iter()
        .enumerate()
    {
        let before = K::fault_counts(&device);
        // Bit 27 of the exponent: the value scaled by 2^±16.
        fno_ops::inject_contraction_fault(seed + i as u64, 27);
        let y = conv(tolerance);
        let counts = K::fault_counts(&device) - before;
        let e = rel_l2(&y, &clean);
        assert_eq!(
            (counts.injected, counts.detected),
            (1, 1),
            "{tolerance:?} (seed {seed})"
        );
        // The contraction's output is [B, Cout, modes], and the inverse real
        // FFT keeps only the real part of frequency 0: a fault there is harmless.
        let (element, imaginary) = output_fault_site(seed + i as u64, batch * cout * m);
        let harmless = imaginary && element % m == 0;
        match tolerance {
            FaultTolerance::Correct => {
                assert_eq!(counts.corrected, 1, "seed {seed}");
                assert!(
                    e < 1e-6,
                    "corrected output off the fault-free one by {e:e} (seed {seed})"
                );
            }
            _ => {
                assert_eq!(counts.corrected, 0, "seed {seed}");
                // Left as computed: changed unless the fault was harmless.
                assert_eq!(
                    y != clean,
                    !harmless,
                    "a fault at element {element} (imaginary: {imaginary}) changed the output by {e:e} (seed {seed})"
                );
            }
        }
    }
}

/// The pitched x of the tests above is what it claims: narrowing the rows of a
/// dense tensor gives a view with the dense row stride, not a copy.
#[test]
fn narrowed_rows_are_views() {
    let device = Default::default();
    let dense = Tensor::<Wgpu, 3>::zeros([2, 3, 85 + PITCH_PAD], &device);
    let view = dense.narrow(2, 0, 85).into_primitive().tensor();
    let pitch = 85 + PITCH_PAD;
    assert_eq!(view.meta.strides().to_vec(), vec![3 * pitch, pitch, 1]);
    // The view ends with its last row: the FFT must read no further.
    assert_eq!(view.handle.size_in_used() as usize, (6 * pitch - PITCH_PAD) * 4);
}

#[test]
fn kernel_paths_fail_loudly_where_they_cannot_run() {
    let device = Default::default();
    let spec = SpectralConvSpec::new(&[4, 3]);
    let x = Tensor::<Wgpu, 4>::from_data(TensorData::new(vec![0.5f32; 2 * 2 * 8 * 8], [2, 2, 8, 8]), &device);
    let w = Tensor::<Wgpu, 5>::from_data(
        TensorData::new(vec![0.1f32; 2 * 2 * 4 * 3 * 2], [2, 2, 4, 3, 2]),
        &device,
    );
    // neuraloperator's crop/pad of the centred spectrum on a non-last dim.
    let resized = spec.clone().output_size(&[16, 8]);
    for imp in [SpectralImpl::Unfused, SpectralImpl::Fused] {
        let err = spectral_conv(x.clone(), w.clone(), None, &resized, imp).unwrap_err();
        assert!(
            matches!(err, SpectralError::Unsupported(ref m) if m.contains("non-last")),
            "{imp:?}: {err}"
        );
    }

    // The fused kernel runs in f32 only.
    let half = spec.clone().spectrum_precision(Precision::F16);
    let err = spectral_conv(x.clone(), w.clone(), None, &half, SpectralImpl::Fused).unwrap_err();
    assert!(
        matches!(err, SpectralError::Unsupported(ref m) if m.contains("f32")),
        "{err}"
    );

    // Checksums run on the unfused path only.
    let checked = spec.clone().fault_tolerance(FaultTolerance::Detect);
    for imp in [SpectralImpl::Fused, SpectralImpl::Reference] {
        let err = spectral_conv(x.clone(), w.clone(), None, &checked, imp).unwrap_err();
        assert!(
            matches!(err, SpectralError::Unsupported(ref m) if m.contains("fault tolerance")),
            "{imp:?}: {err}"
        );
    }

    // The CPU backends' kernel path has no checksums. (NdArray in f64, as
    // every test of this binary: NdArray's first use fixes its float type.)
    let xn = Tensor::<NdArray<f64>, 4>::from_data(
        TensorData::new(vec![0.5f64; 2 * 2 * 8 * 8], [2, 2, 8, 8]),
        &Default::default(),
    );
    let wn =
        Tensor::<NdArray<f64>, 5>::from_data(TensorData::new(vec![0.1f64; 96], [2, 2, 4, 3, 2]), &Default::default());
    let checked = spec.clone().fault_tolerance(FaultTolerance::Detect);
    let err = spectral_conv(xn, wn, None, &checked, SpectralImpl::Unfused).unwrap_err();
    assert!(err.to_string().contains("checksums on the CPU"), "{err}");
}

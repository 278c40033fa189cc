//! Factorized and separable spectral weights (`fno_ops::factorized_spectral_conv`):
//! every form against the f64 oracle of the dense convolution on the weight
//! its definition gives (Tucker, CP and tensor-train sums written out here),
//! on the reference path (ndarray f64, wgpu) and the kernel paths (wgpu, the
//! factors' chain); gradients of the chain against the reference path's, and
//! the reference path's against central differences in f64.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{FloatDType, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::{
    factorized_spectral_conv, Factorization, FactorizedWeight, InverseShift, SpectralConvBackend, SpectralConvSpec,
    SpectralImpl, WeightForm,
};
use fno_testing::{fresh_seed, relative_l2, uniform};

use crate::common::{spectral_conv_f64, unravel, Problem};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

/// One convolution: the weight's form, the input grid and the batch.
struct Case {
    name: &'static str,
    form: WeightForm,
    batch: usize,
    grid: Vec<usize>,
    /// The output's grid (the input's but for a resized last dim).
    output: Vec<usize>,
}

fn case(
    name: &'static str,
    factorization: Factorization,
    separable: bool,
    shape: &[usize],
    ranks: &[usize],
    grid: &[usize],
) -> Case {
    Case {
        name,
        form: WeightForm {
            factorization,
            separable,
            shape: shape.to_vec(),
            ranks: ranks.to_vec(),
        },
        batch: 2,
        grid: grid.to_vec(),
        output: grid.to_vec(),
    }
}

/// `case` with its output's last dim resized to `last`.
fn resized(case: Case, name: &'static str, last: usize) -> Case {
    let mut output = case.grid.clone();
    *output.last_mut().unwrap() = last;
    Case { name, output, ..case }
}

fn cases() -> Vec<Case> {
    use Factorization::*;
    vec![
        case("tucker 2d", Tucker, false, &[3, 4, 5, 3], &[2, 3, 4, 2], &[11, 9]),
        // The grid holds fewer modes than the weight: the factors are cropped.
        case(
            "tucker 2d cropped",
            Tucker,
            false,
            &[3, 4, 5, 3],
            &[3, 2, 3, 3],
            &[4, 4],
        ),
        // Resized outputs: Tucker's one-node backward where the last axis's
        // bins weigh alike on both grids, its three ops where the input's
        // Nyquist bin is an interior one of the output.
        resized(
            case("tucker", Tucker, false, &[3, 4, 5, 3], &[2, 3, 4, 2], &[8, 8]),
            "tucker 2d resized",
            13,
        ),
        resized(
            case("tucker", Tucker, false, &[3, 4, 5, 5], &[2, 3, 4, 2], &[8, 8]),
            "tucker 2d resized past the input's Nyquist bin",
            16,
        ),
        case("cp 2d", Cp, false, &[3, 4, 5, 3], &[5], &[10, 7]),
        case("cp 1d", Cp, false, &[4, 3, 6], &[3], &[13]),
        case("tt 2d", TensorTrain, false, &[3, 4, 5, 3], &[1, 2, 3, 2, 1], &[11, 8]),
        case(
            "tt 3d",
            TensorTrain,
            false,
            &[2, 3, 3, 4, 2],
            &[1, 2, 2, 3, 2, 1],
            &[5, 6, 3],
        ),
        case("separable dense", Dense, true, &[3, 5, 3], &[], &[9, 8]),
        case("separable tucker", Tucker, true, &[3, 5, 3], &[2, 3, 2], &[9, 8]),
    ]
}

fn modes(form: &WeightForm) -> &[usize] {
    &form.shape[if form.separable { 1 } else { 2 }..]
}

type C = (f64, f64);

fn mul((a, b): C, (c, d): C) -> C {
    (a * c - b * d, a * d + b * c)
}

fn add((a, b): C, (c, d): C) -> C {
    (a + c, b + d)
}

/// Complex entry `at` of a row-major tensor of `shape` stored as (re, im) pairs.
fn entry(v: &[f64], shape: &[usize], at: &[usize]) -> C {
    let flat = at.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i);
    (v[2 * flat], v[2 * flat + 1])
}

/// The logical weight by its definition, interleaved, from the stored tensors.
fn logical_f64(form: &WeightForm, tensors: &[Vec<f64>]) -> Vec<f64> {
    let shapes: Vec<Vec<usize>> = form.tensors().into_iter().map(|(_, s)| s).collect();
    let n = form.shape.len();
    let total: usize = form.shape.iter().product();
    let mut out = Vec::with_capacity(2 * total);
    for flat in 0..total {
        let i = unravel(flat, &form.shape);
        let value = match form.factorization {
            Factorization::Dense => entry(&tensors[0], &shapes[0], &i),
            Factorization::Tucker => {
                let ranks = &form.ranks;
                (0..ranks.iter().product()).fold((0.0, 0.0), |acc, rf| {
                    let r = unravel(rf, ranks);
                    let term = (0..n).fold(entry(&tensors[0], ranks, &r), |t, d| {
                        mul(t, entry(&tensors[d + 1], &shapes[d + 1], &[i[d], r[d]]))
                    });
                    add(acc, term)
                })
            }
            Factorization::Cp => (0..form.ranks[0]).fold((0.0, 0.0), |acc, r| {
                let term = (0..n).fold(entry(&tensors[0], &shapes[0], &[r]), |t, d| {
                    mul(t, entry(&tensors[d + 1], &shapes[d + 1], &[i[d], r]))
                });
                add(acc, term)
            }),
            Factorization::TensorTrain => {
                // A row vector through the cores.
                let mut row = vec![(1.0, 0.0)];
                for d in 0..n {
                    let next = form.ranks[d + 1];
                    row = (0..next)
                        .map(|b| {
                            row.iter().enumerate().fold((0.0, 0.0), |acc, (a, &v)| {
                                add(acc, mul(v, entry(&tensors[d], &shapes[d], &[a, i[d], b])))
                            })
                        })
                        .collect();
                }
                row[0]
            }
        };
        out.extend([value.0, value.1]);
    }
    out
}

/// The dense `[Cin, Cout, *modes]` weight (diagonal when separable), interleaved.
fn dense_f64(form: &WeightForm, tensors: &[Vec<f64>]) -> Vec<f64> {
    let logical = logical_f64(form, tensors);
    if !form.separable {
        return logical;
    }
    let c = form.shape[0];
    let k: usize = modes(form).iter().product();
    let mut out = vec![0.0; 2 * c * c * k];
    for ch in 0..c {
        out[2 * (ch * c + ch) * k..][..2 * k].copy_from_slice(&logical[2 * ch * k..][..2 * k]);
    }
    out
}

fn problem(case: &Case) -> Problem {
    let c = case.form.shape[0];
    let cout = if case.form.separable { c } else { case.form.shape[1] };
    let dims = case.grid.len();
    Problem {
        batch: case.batch,
        cin: c,
        cout,
        input: case.grid.clone(),
        output: case.output.clone(),
        modes: modes(&case.form).to_vec(),
        forward_scale: case.grid.iter().map(|&n| 1.0 / n as f64).collect(),
        inverse_scale: vec![1.0; dims],
        shared: false,
        shift: InverseShift::Fftshift,
    }
}

/// The stored tensors' values: uniform, scaled so the weight's entries are O(1).
fn draw(form: &WeightForm, seed: u64) -> Vec<Vec<f64>> {
    form.tensors()
        .iter()
        .enumerate()
        .map(|(i, (_, s))| uniform(2 * s.iter().product::<usize>(), seed + 10 + i as u64))
        .collect()
}

/// A case's problem, stored tensors' values, input and bias, drawn from `seed`.
fn case_inputs(case: &Case, seed: u64) -> (Problem, Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let p = problem(case);
    let values = draw(&case.form, seed);
    let x = uniform(case.batch * p.cin * case.grid.iter().product::<usize>(), seed + 1);
    let bias = uniform(p.cout, seed + 2);
    (p, values, x, bias)
}

/// The stored tensors of `values`; `pitched`: each a view of rows of a wider
/// tensor (NaN between them), as CUDA's allocator pitches long rows.
fn weight<B: Backend>(
    form: &WeightForm,
    values: &[Vec<f64>],
    device: &B::Device,
    pitched: bool,
) -> FactorizedWeight<B> {
    let pad = if pitched { 6 } else { 0 };
    let tensors = form
        .tensors()
        .iter()
        .zip(values)
        .map(|((_, s), v)| {
            let [rows, cols] = WeightForm::storage_shape(s);
            let padded: Vec<f64> = v
                .chunks(cols)
                .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(f64::NAN, pad)))
                .collect();
            Tensor::<B, 2>::from_data(TensorData::new(padded, [rows, cols + pad]), device)
                .cast(float_dtype::<B>())
                .narrow(1, 0, cols)
        })
        .collect();
    FactorizedWeight {
        form: form.clone(),
        tensors,
    }
}

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

fn spec(case: &Case) -> SpectralConvSpec {
    SpectralConvSpec::new(modes(&case.form)).output_size(&case.output)
}

/// `factorized_spectral_conv` on `B` through `imp` of `x` and `bias` (flat),
/// for 1 to 3 spatial dims; the output flat.
fn convolve<B: SpectralConvBackend>(
    case: &Case,
    weight: &FactorizedWeight<B>,
    x: Tensor<B, 1>,
    bias: Tensor<B, 1>,
    imp: SpectralImpl,
) -> Tensor<B, 1> {
    let mut shape = vec![case.batch, case.form.shape[0]];
    shape.extend(&case.grid);
    let spec = spec(case);
    macro_rules! conv {
        ($d:literal) => {
            factorized_spectral_conv(
                x.reshape(<[usize; $d]>::try_from(shape).unwrap()),
                weight,
                Some(bias),
                &spec,
                imp,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", case.name))
            .flatten::<1>(0, $d - 1)
        };
    }
    match case.grid.len() {
        1 => conv!(3),
        2 => conv!(4),
        _ => conv!(5),
    }
}

/// `B`'s own float type: NdArray<f32> and NdArray<f64> share a device, whose
/// default dtype the f64 runs of this process set.
fn float_dtype<B: Backend>() -> FloatDType {
    <B::FloatElem as burn::tensor::Element>::dtype().into()
}

fn flat<B: Backend>(v: &[f64], device: &B::Device) -> Tensor<B, 1> {
    Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device).cast(float_dtype::<B>())
}

fn run<B: SpectralConvBackend>(
    case: &Case,
    weight: &FactorizedWeight<B>,
    x: &[f64],
    bias: &[f64],
    imp: SpectralImpl,
) -> Tensor<B, 1> {
    let device = Default::default();
    convolve(case, weight, flat(x, &device), flat(bias, &device), imp)
}

#[test]
fn factorized_convolutions_match_the_dense_oracle_on_every_path() {
    let seed = fresh_seed();
    for case in cases() {
        let (p, values, x, bias) = case_inputs(&case, seed);
        let want = spectral_conv_f64(&p, &x, &dense_f64(&case.form, &values), Some(&bias));
        let exact = to_vec(run::<Exact>(
            &case,
            &weight(&case.form, &values, &Default::default(), false),
            &x,
            &bias,
            SpectralImpl::Reference,
        ));
        let e = relative_l2(&exact, &want);
        println!("{}, ndarray f64 reference: {e:.2e} (seed {seed})", case.name);
        assert!(e < 1e-12, "{}, ndarray f64 reference: {e:e} (seed {seed})", case.name);
        for pitched in [false, true] {
            let w = weight::<Wgpu>(&case.form, &values, &Default::default(), pitched);
            for imp in [SpectralImpl::Reference, SpectralImpl::Unfused, SpectralImpl::Fused] {
                let e = relative_l2(&to_vec(run(&case, &w, &x, &bias, imp)), &want);
                println!("{}, wgpu {imp:?}, pitched {pitched}: {e:.2e} (seed {seed})", case.name);
                assert!(
                    e < 1e-5,
                    "{}, wgpu {imp:?}, pitched {pitched}: {e:e} (seed {seed})",
                    case.name
                );
            }
        }
        // The CPU's kernel path (threaded transforms around the same chain).
        let w = weight::<NdArray<f32>>(&case.form, &values, &Default::default(), false);
        let e = relative_l2(&to_vec(run(&case, &w, &x, &bias, SpectralImpl::Unfused)), &want);
        println!("{}, ndarray Unfused: {e:.2e} (seed {seed})", case.name);
        assert!(e < 1e-5, "{}, ndarray Unfused: {e:e} (seed {seed})", case.name);
    }
}

/// `Σ r ⊙ y` and its gradients with respect to x, every stored tensor and the
/// bias; the stored tensors pitched where asked (see [`weight`]).
fn gradients<B: AutodiffBackend + SpectralConvBackend>(
    case: &Case,
    values: &[Vec<f64>],
    (x, bias, r): (&[f64], &[f64], &[f64]),
    imp: SpectralImpl,
    pitched: bool,
) -> (f64, Vec<Vec<f64>>) {
    let device: B::Device = Default::default();
    let w = weight::<B>(&case.form, values, &device, pitched);
    let w = FactorizedWeight {
        tensors: w.tensors.into_iter().map(|t| t.require_grad()).collect(),
        ..w
    };
    let x_t = flat::<B>(x, &device).require_grad();
    let b_t = flat::<B>(bias, &device).require_grad();
    let y = convolve(case, &w, x_t.clone(), b_t.clone(), imp);
    let r = flat::<B>(r, &device);
    let loss = (y * r).sum();
    let value = to_vec(loss.clone())[0];
    let grads = loss.backward();
    let mut out = vec![to_vec(x_t.grad(&grads).unwrap()), to_vec(b_t.grad(&grads).unwrap())];
    out.extend(
        w.tensors
            .iter()
            .map(|t| to_vec(t.grad(&grads).expect("every stored tensor has a gradient"))),
    );
    (value, out)
}

#[test]
fn factorized_gradients_match_the_reference_path_and_finite_differences() {
    let seed = fresh_seed();
    for case in cases() {
        let (p, values, x, bias) = case_inputs(&case, seed);
        let r = uniform(case.batch * p.cout * case.output.iter().product::<usize>(), seed + 3);
        let names = || {
            ["x".to_string(), "bias".to_string()]
                .into_iter()
                .chain(case.form.tensors().into_iter().map(|(n, _)| n))
        };

        let inputs = (&x[..], &bias[..], &r[..]);
        // The kernel chain's gradients against the reference path's on the same
        // device, stored tensors dense and pitched (the gradients land in their layout).
        let (_, want) = gradients::<Autodiff<Wgpu>>(&case, &values, inputs, SpectralImpl::Reference, false);
        let cpu = gradients::<Autodiff<NdArray<f32>>>(&case, &values, inputs, SpectralImpl::Unfused, false).1;
        for (g, w) in cpu.iter().zip(&want) {
            let e = relative_l2(g, w);
            assert!(e < 1e-5, "{}, ndarray unfused gradient: {e:e} (seed {seed})", case.name);
        }
        for pitched in [false, true] {
            let (_, got) = gradients::<Autodiff<Wgpu>>(&case, &values, inputs, SpectralImpl::Unfused, pitched);
            for ((g, w), name) in got.iter().zip(&want).zip(names()) {
                let e = relative_l2(g, w);
                println!(
                    "{}, wgpu unfused ∂L/∂{name}, pitched {pitched}: {e:.2e} (seed {seed})",
                    case.name
                );
                assert!(
                    e < 1e-5,
                    "{}, ∂L/∂{name}, pitched {pitched}: {e:e} (seed {seed})",
                    case.name
                );
            }
        }

        // The reference path's factor gradients against central differences in f64.
        let (_, exact) = gradients::<Autodiff<Exact>>(&case, &values, inputs, SpectralImpl::Reference, false);
        let loss =
            |values: &[Vec<f64>]| gradients::<Autodiff<Exact>>(&case, values, inputs, SpectralImpl::Reference, false).0;
        for (t, name) in (0..values.len()).zip(names().skip(2)) {
            let direction = uniform(values[t].len(), seed + 20 + t as u64);
            let step = 1e-5;
            let moved = |sign: f64| {
                let mut v = values.to_vec();
                v[t].iter_mut().zip(&direction).for_each(|(a, d)| *a += sign * step * d);
                loss(&v)
            };
            let want = (moved(1.0) - moved(-1.0)) / (2.0 * step);
            let got: f64 = exact[t + 2].iter().zip(&direction).map(|(g, d)| g * d).sum();
            let e = (got - want).abs() / want.abs().max(1e-3);
            println!("{}, ⟨∂L/∂{name}, δ⟩ {got:.9} vs {want:.9} (seed {seed})", case.name);
            assert!(e < 1e-6, "{}, ∂L/∂{name} off by {e:e} (seed {seed})", case.name);
        }
    }
}

//! The channel ops (`pointwise_conv`, `channel_scale`) on wgpu (lavapipe in CI)
//! against the same maths in Burn's ops on ndarray in f64: forward values and
//! the gradients of every operand, tracked alone or together, with and
//! without a bias; GELU likewise; and the f64 ops' gradients against
//! central differences.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::{
    channel_scale, gelu, pointwise_conv, pointwise_conv_finished, MatmulPrecision, PointwiseBackend, Residual,
};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// `v` in `B`'s own float type (NdArray<f32> and NdArray<f64> share a device,
/// whose default dtype the first run sets).
fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D]) -> Tensor<B, D> {
    let dtype: burn::tensor::FloatDType = <B::FloatElem as burn::tensor::Element>::dtype().into();
    Tensor::<B, D>::from_data(TensorData::new(v.to_vec(), shape), &Default::default()).cast(dtype)
}

/// Inputs of one case: x `[b, cin, s]`, weight `[cout, cin]`, bias `[cout]`, and
/// the weights `r` of the scalar `Σ r ⊙ y` whose gradients are compared.
struct Case {
    shape: [usize; 4],
    x: Vec<f64>,
    w: Vec<f64>,
    bias: Vec<f64>,
    r: Vec<f64>,
}

impl Case {
    fn new(shape @ [b, cin, cout, s]: [usize; 4], seed: u64) -> Self {
        Case {
            shape,
            x: uniform(b * cin * s, seed),
            w: uniform(cout * cin, seed + 1),
            bias: uniform(cout, seed + 2),
            r: uniform(b * cout * s, seed + 3),
        }
    }

    /// The same case with every value's magnitude: its sums are the sizes of
    /// the terms the case's sums add, what f32 rounding is relative to
    /// (a single output `w·x + b` may cancel to nearly nothing).
    fn magnitudes(&self) -> Self {
        let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect();
        Case {
            shape: self.shape,
            x: abs(&self.x),
            w: abs(&self.w),
            bias: abs(&self.bias),
            r: abs(&self.r),
        }
    }

    /// `Σ r ⊙ (W·x + bias)` by our op at a precision (`ours`) or Burn's matmul
    /// and broadcast add, and the gradients of the tracked operands (x, weight, bias).
    fn conv<B: PointwiseBackend + AutodiffBackend>(
        &self,
        with_bias: bool,
        tracked: [bool; 3],
        ours: Option<MatmulPrecision>,
    ) -> (Vec<f64>, [Option<Vec<f64>>; 3]) {
        let [b, cin, cout, s] = self.shape;
        let track = |t: Tensor<B, 3>, on| if on { t.require_grad() } else { t };
        let x = track(tensor(&self.x, [b, cin, s]), tracked[0]);
        let w: Tensor<B, 2> = tensor(&self.w, [cout, cin]);
        let w = if tracked[1] { w.require_grad() } else { w };
        let bias: Tensor<B, 1> = tensor(&self.bias, [cout]);
        let bias = if tracked[2] { bias.require_grad() } else { bias };
        let y = if let Some(precision) = ours {
            pointwise_conv(x.clone(), w.clone(), with_bias.then(|| bias.clone()), precision)
        } else {
            let y = w.clone().unsqueeze::<3>().matmul(x.clone());
            if with_bias {
                y + bias.clone().reshape([1, cout, 1])
            } else {
                y
            }
        };
        let g = (y.clone() * tensor(&self.r, [b, cout, s])).sum().backward();
        (
            to_vec(y),
            [
                x.grad(&g).map(to_vec),
                w.grad(&g).map(to_vec),
                bias.grad(&g).map(to_vec),
            ],
        )
    }
}

#[test]
fn pointwise_conv_and_its_gradients_match_f64() {
    let seed = fresh_seed();
    println!("seed {seed}");
    assert!(
        !<Wgpu as PointwiseBackend>::tf32_available(&Default::default()),
        "wgpu has no TF32 tensor cores"
    );
    for (i, shape) in [
        [2, 3, 5, 7],
        [4, 64, 64, 300],
        [1, 1, 1, 1],
        [3, 128, 1, 65],
        [5, 20, 70, 33],
    ]
    .into_iter()
    .enumerate()
    {
        let case = Case::new(shape, seed + 10 * i as u64);
        // Errors relative to the terms' magnitudes, not to sums that may cancel.
        let error = |got: &[f64], want: &[f64], scale: &[f64]| {
            assert_eq!(got.len(), want.len());
            let diff: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
            (diff / scale.iter().map(|v| v * v).sum::<f64>()).sqrt()
        };
        for with_bias in [true, false] {
            for tracked in [
                [true, true, true],
                [false, true, true],
                [true, false, false],
                [false, false, true],
            ] {
                // TF32 where the device has none (lavapipe) is f32.
                let precision = [MatmulPrecision::F32, MatmulPrecision::Tf32][i % 2];
                let (y, got) = case.conv::<Autodiff<Wgpu>>(with_bias, tracked, Some(precision));
                let (want_y, want) = case.conv::<Autodiff<Exact>>(with_bias, tracked, None);
                let (scale_y, scale) = case.magnitudes().conv::<Autodiff<Exact>>(with_bias, tracked, None);
                let e = error(&y, &want_y, &scale_y);
                assert!(e < 1e-6, "{shape:?} bias {with_bias}: output {e:e} (seed {seed})");
                for (name, got, want, scale, on) in [
                    ("x", &got[0], &want[0], &scale[0], tracked[0]),
                    ("weight", &got[1], &want[1], &scale[1], tracked[1]),
                    ("bias", &got[2], &want[2], &scale[2], tracked[2] && with_bias),
                ] {
                    assert_eq!(
                        got.is_some(),
                        on,
                        "{shape:?} {tracked:?}: {name} gradient present iff tracked"
                    );
                    if let (Some(got), Some(want), Some(scale)) = (got, want, scale) {
                        let e = error(got, want, scale);
                        assert!(
                            e < 1e-5,
                            "{shape:?} {tracked:?} bias {with_bias}: {name} gradient {e:e} (seed {seed})"
                        );
                    }
                }
            }
        }
    }
}

/// On CUDA, TF32 reaches the forward and the input gradient (off the f64
/// values by TF32's rounding, not f32's) and leaves the weight gradient in f32.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA device with TF32 tensor cores"]
fn tf32_reaches_the_forward_and_the_input_gradient_on_cuda() {
    type Cuda = CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>;
    assert!(<Cuda as PointwiseBackend>::tf32_available(&Default::default()));
    let seed = fresh_seed();
    println!("seed {seed}");
    let case = Case::new([4, 64, 64, 300], seed);
    let tracked = [true, true, true];
    let (want_y, want) = case.conv::<Autodiff<Exact>>(true, tracked, None);
    for precision in [MatmulPrecision::F32, MatmulPrecision::Tf32] {
        let (y, got) = case.conv::<Autodiff<Cuda>>(true, tracked, Some(precision));
        let errors = [
            relative_l2(&y, &want_y),
            relative_l2(got[0].as_ref().unwrap(), want[0].as_ref().unwrap()),
            relative_l2(got[1].as_ref().unwrap(), want[1].as_ref().unwrap()),
        ];
        println!(
            "{precision:?}: output, x and weight gradients off by {:.2e}, {:.2e}, {:.2e}",
            errors[0], errors[1], errors[2]
        );
        let tf32 = precision == MatmulPrecision::Tf32;
        for (name, e) in [("output", errors[0]), ("x gradient", errors[1])] {
            let ok = if tf32 { (1e-5..3e-3).contains(&e) } else { e < 1e-5 };
            assert!(ok, "{precision:?} {name}: {e:e} (seed {seed})");
        }
        assert!(
            errors[2] < 1e-5,
            "{precision:?} weight gradient: {:e} (seed {seed})",
            errors[2]
        );
    }
}

/// Which parts a finished convolution has: a residual, its gate, GELU.
#[derive(Clone, Copy, Debug)]
struct Finish {
    residual: bool,
    gated: bool,
    gelu: bool,
}

impl Case {
    /// `Σ r ⊙ gelu(W·x + bias + g ⊙ res)` (parts as `finish` says) by the
    /// finished op (`ours`) or by the separate ops, and the gradients of the
    /// tracked operands (x, weight, bias, res, g).
    fn finished<B: PointwiseBackend + AutodiffBackend>(
        &self,
        [res, gate]: [&[f64]; 2],
        finish: Finish,
        tracked: [bool; 5],
        ours: bool,
    ) -> (Vec<f64>, Vec<Option<Vec<f64>>>) {
        let [b, cin, cout, s] = self.shape;
        let track = |t: Tensor<B, 3>, on| if on { t.require_grad() } else { t };
        let track1 = |t: Tensor<B, 1>, on| if on { t.require_grad() } else { t };
        let x = track(tensor(&self.x, [b, cin, s]), tracked[0]);
        let w: Tensor<B, 2> = tensor(&self.w, [cout, cin]);
        let w = if tracked[1] { w.require_grad() } else { w };
        let bias = track1(tensor(&self.bias, [cout]), tracked[2]);
        let res = track(tensor(res, [b, cout, s]), tracked[3]);
        let g = track1(tensor(gate, [cout]), tracked[4]);
        let precision = MatmulPrecision::F32;
        let y = if ours {
            let residual = finish.residual.then(|| Residual {
                values: res.clone(),
                gate: finish.gated.then(|| g.clone()),
            });
            pointwise_conv_finished(
                x.clone(),
                w.clone(),
                Some(bias.clone()),
                residual,
                finish.gelu,
                precision,
            )
        } else {
            let mut y = pointwise_conv(x.clone(), w.clone(), Some(bias.clone()), precision);
            if finish.residual {
                y = y + if finish.gated {
                    channel_scale(res.clone(), g.clone())
                } else {
                    res.clone()
                };
            }
            if finish.gelu {
                gelu(y)
            } else {
                y
            }
        };
        let grads = (y.clone() * tensor(&self.r, [b, cout, s])).sum().backward();
        let x_grad = x.grad(&grads).map(to_vec);
        let res_grad = res.grad(&grads).map(to_vec);
        let w_grad = w.grad(&grads).map(to_vec);
        let param_grads = [&bias, &g].map(|t| t.grad(&grads).map(to_vec));
        let [bias_grad, g_grad] = param_grads;
        (to_vec(y), vec![x_grad, w_grad, bias_grad, res_grad, g_grad])
    }
}

/// The finished convolution (one kernel forward on wgpu) against the same
/// maths by the separate ops in f64: values and the gradient of every
/// operand, each part present or absent, operands tracked alone or together.
#[test]
fn finished_convolutions_and_their_gradients_match_the_separate_ops() {
    let seed = fresh_seed();
    println!("seed {seed}");
    for (i, shape @ [b, _, cout, s]) in [[2, 3, 5, 7], [2, 24, 12, 260], [1, 20, 70, 33]]
        .into_iter()
        .enumerate()
    {
        let seed = seed + 10 * i as u64;
        let case = Case::new(shape, seed);
        let (res, gate) = (uniform(b * cout * s, seed + 5), uniform(cout, seed + 6));
        for (finish, tracked) in [
            (
                Finish {
                    residual: true,
                    gated: true,
                    gelu: true,
                },
                [true; 5],
            ),
            (
                Finish {
                    residual: true,
                    gated: false,
                    gelu: true,
                },
                [true, false, false, true, false],
            ),
            (
                Finish {
                    residual: false,
                    gated: false,
                    gelu: true,
                },
                [false, true, true, false, false],
            ),
            (
                Finish {
                    residual: true,
                    gated: true,
                    gelu: false,
                },
                [false, false, false, true, true],
            ),
            (
                Finish {
                    residual: true,
                    gated: true,
                    gelu: true,
                },
                [false; 5],
            ),
        ] {
            let (want_y, want) = case.finished::<Autodiff<Exact>>([&res, &gate], finish, tracked, false);
            // The GPU kernels, and the CPU's (NdArray f32: GEMMs and GELU on its threads).
            for (device, (y, got)) in [
                (
                    "wgpu",
                    case.finished::<Autodiff<Wgpu>>([&res, &gate], finish, tracked, true),
                ),
                (
                    "cpu",
                    case.finished::<Autodiff<NdArray<f32>>>([&res, &gate], finish, tracked, true),
                ),
            ] {
                let what = format!("{device} {shape:?} {finish:?} {tracked:?} (seed {seed})");
                let e = relative_l2(&y, &want_y);
                assert!(e < 1e-6, "{what}: output {e:e}");
                let names = ["x", "weight", "bias", "residual", "gate"];
                let used = [true, true, true, finish.residual, finish.gated];
                for (k, (got, want)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        got.is_some(),
                        tracked[k] && used[k],
                        "{what}: {} gradient present iff tracked",
                        names[k]
                    );
                    if let (Some(got), Some(want)) = (got, want) {
                        let e = relative_l2(got, want);
                        assert!(e < 1e-5, "{what}: {} gradient {e:e}", names[k]);
                    }
                }
            }
        }
    }
}

#[test]
fn pointwise_gradients_match_central_differences() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let case = Case::new([3, 4, 5, 6], seed);
    let (_, grads) = case.conv::<Autodiff<Exact>>(true, [true, true, true], Some(MatmulPrecision::F32));
    let loss = |c: &Case| -> f64 {
        c.conv::<Autodiff<Exact>>(true, [false, false, false], Some(MatmulPrecision::F32))
            .0
            .iter()
            .zip(&c.r)
            .map(|(y, r)| y * r)
            .sum()
    };
    let h = 1e-6;
    for (which, index) in [(0, 7), (1, 3), (2, 4)] {
        let shifted = |delta: f64| {
            let mut c = Case {
                shape: case.shape,
                x: case.x.clone(),
                w: case.w.clone(),
                bias: case.bias.clone(),
                r: case.r.clone(),
            };
            [&mut c.x, &mut c.w, &mut c.bias][which][index] += delta;
            loss(&c)
        };
        let numeric = (shifted(h) - shifted(-h)) / (2.0 * h);
        let analytic = grads[which].as_ref().unwrap()[index];
        assert!(
            (numeric - analytic).abs() < 1e-6 * (1.0 + analytic.abs()),
            "operand {which}[{index}]: {analytic} vs {numeric} (seed {seed})"
        );
    }
}

/// `Σ r ⊙ (x · scale[c])` and the gradients of x and scale.
fn scaled<B: PointwiseBackend + AutodiffBackend>(
    x: &[f64],
    scale: &[f64],
    r: &[f64],
    [b, c, s]: [usize; 3],
    tracked: [bool; 2],
    ours: bool,
) -> (Vec<f64>, [Option<Vec<f64>>; 2]) {
    let x: Tensor<B, 3> = tensor(x, [b, c, s]);
    let x = if tracked[0] { x.require_grad() } else { x };
    let g: Tensor<B, 1> = tensor(scale, [c]);
    let g = if tracked[1] { g.require_grad() } else { g };
    let y = if ours {
        channel_scale(x.clone(), g.clone())
    } else {
        x.clone() * g.clone().reshape([1, c, 1])
    };
    let grads = (y.clone() * tensor(r, [b, c, s])).sum().backward();
    (to_vec(y), [x.grad(&grads).map(to_vec), g.grad(&grads).map(to_vec)])
}

#[test]
fn channel_scale_and_its_gradients_match_f64() {
    let seed = fresh_seed();
    println!("seed {seed}");
    for (i, shape @ [b, c, s]) in [[2, 3, 7], [4, 64, 500], [1, 1, 1]].into_iter().enumerate() {
        let seed = seed + 10 * i as u64;
        let (x, scale, r) = (
            uniform(b * c * s, seed),
            uniform(c, seed + 1),
            uniform(b * c * s, seed + 2),
        );
        for tracked in [[true, true], [true, false], [false, true]] {
            let (want_y, want) = scaled::<Autodiff<Exact>>(&x, &scale, &r, shape, tracked, false);
            // The GPU kernel, and the CPU's (NdArray f32: rows and dot products on its threads).
            for (device, (y, got)) in [
                ("wgpu", scaled::<Autodiff<Wgpu>>(&x, &scale, &r, shape, tracked, true)),
                (
                    "cpu",
                    scaled::<Autodiff<NdArray<f32>>>(&x, &scale, &r, shape, tracked, true),
                ),
            ] {
                let e = relative_l2(&y, &want_y);
                assert!(e < 1e-6, "{device} {shape:?}: output {e:e} (seed {seed})");
                for (k, name) in ["x", "scale"].into_iter().enumerate() {
                    assert_eq!(got[k].is_some(), tracked[k], "{name} gradient present iff tracked");
                    if let (Some(got), Some(want)) = (&got[k], &want[k]) {
                        let e = relative_l2(got, want);
                        assert!(
                            e < 1e-5,
                            "{device} {shape:?} {tracked:?}: {name} gradient {e:e} (seed {seed})"
                        );
                    }
                }
            }
        }
    }
}

/// Half activations with an f32 scale (the models' soft gating): the
/// scale's gradient comes back f32, summed in f32, under a loss scale whose
/// per-channel sums would overflow f16 (2000 terms × 8192); x's gradient
/// stays f16. Against the f64 oracle of the f16-rounded input.
#[test]
fn channel_scale_of_half_activations_gives_an_f32_scale_gradient() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let [b, c, s] = [4, 64, 500];
    let loss_scale = 8192.0;
    let x = uniform(b * c * s, seed);
    let (scale, r) = (uniform(c, seed + 1), uniform(b * c * s, seed + 2));
    let x16: Tensor<Autodiff<Wgpu>, 3> = tensor::<Autodiff<Wgpu>, 3>(&x, [b, c, s])
        .cast(DType::F16)
        .require_grad();
    let g: Tensor<Autodiff<Wgpu>, 1> = tensor::<Autodiff<Wgpu>, 1>(&scale, [c]).require_grad();
    let y = channel_scale(x16.clone(), g.clone());
    assert_eq!(y.dtype(), DType::F16);
    let loss = (y.cast(DType::F32) * tensor::<Autodiff<Wgpu>, 3>(&r, [b, c, s])).sum() * loss_scale;
    let grads = loss.backward();
    let (gx, gg) = (
        x16.grad(&grads).expect("x tracked"),
        g.grad(&grads).expect("scale tracked"),
    );
    assert_eq!(gx.dtype(), DType::F16, "x's gradient in x's dtype");
    assert_eq!(gg.dtype(), DType::F32, "the scale's gradient in the scale's dtype");
    // The oracle: Σ_{b,s} loss_scale · r · x (x as stored in f16).
    let x_stored = to_vec(tensor::<Wgpu, 1>(&x, [x.len()]).cast(DType::F16).cast(DType::F32));
    let want: Vec<f64> = (0..c)
        .map(|ch| {
            (0..b)
                .flat_map(|bi| (0..s).map(move |si| (bi * c + ch) * s + si))
                .map(|i| loss_scale * r[i] * x_stored[i])
                .sum()
        })
        .collect();
    let got = to_vec(gg);
    assert!(
        got.iter().all(|v| v.is_finite()),
        "scale gradient overflowed (seed {seed})"
    );
    let e = relative_l2(&got, &want);
    // f16 rounding of the loss-scaled output gradient r·8192: 2^-11 relative.
    assert!(e < 1e-3, "scale gradient {e:e} (seed {seed})");
}

/// `Σ r ⊙ gelu(x)` over a `[2, 3, 5, 7]` tensor and the gradient of x.
fn gelu_and_grad<B: PointwiseBackend + AutodiffBackend>(x: &[f64], r: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let shape = [2, 3, 5, 7];
    let x: Tensor<B, 4> = tensor(x, shape).require_grad();
    let y = gelu(x.clone());
    let grads = (y.clone() * tensor(r, shape)).sum().backward();
    (to_vec(y), x.grad(&grads).map(to_vec).expect("x is tracked"))
}

#[test]
fn gelu_and_its_gradient_match_f64_and_central_differences() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let n = 2 * 3 * 5 * 7;
    let x: Vec<f64> = uniform(n, seed).iter().map(|v| 6.0 * v).collect();
    let r = uniform(n, seed + 1);
    let (want_y, want_g) = gelu_and_grad::<Autodiff<Exact>>(&x, &r);
    // The GPU kernel, and the CPU's (NdArray f32: f32 erf on its threads).
    for (device, (y, g)) in [
        ("wgpu", gelu_and_grad::<Autodiff<Wgpu>>(&x, &r)),
        ("cpu", gelu_and_grad::<Autodiff<NdArray<f32>>>(&x, &r)),
    ] {
        assert!(relative_l2(&y, &want_y) < 1e-6, "{device} gelu values (seed {seed})");
        assert!(relative_l2(&g, &want_g) < 1e-6, "{device} gelu gradient (seed {seed})");
    }
    // The f64 gradient itself against central differences of Σ r ⊙ gelu(x).
    let h = 1e-6;
    for i in [0, n / 2, n - 1] {
        let loss = |delta: f64| {
            let mut shifted = x.clone();
            shifted[i] += delta;
            gelu_and_grad::<Autodiff<Exact>>(&shifted, &r)
                .0
                .iter()
                .zip(&r)
                .map(|(y, r)| y * r)
                .sum::<f64>()
        };
        let numeric = (loss(h) - loss(-h)) / (2.0 * h);
        assert!(
            (numeric - want_g[i]).abs() < 1e-6,
            "x[{i}]: {} vs {numeric} (seed {seed})",
            want_g[i]
        );
    }
}

#[test]
fn row_sums_match_f64_for_long_short_and_prime_rows() {
    let seed = fresh_seed();
    println!("seed {seed}");
    for (rows, n) in [(3, 16384), (5, 7), (2, 1009), (1, 1), (4, 1000)] {
        let v = uniform(rows * n, seed + n as u64);
        let got = to_vec(fno_ops::row_sums(tensor::<Wgpu, 2>(&v, [rows, n])));
        let want: Vec<f64> = v.chunks(n).map(|r| r.iter().sum()).collect();
        let e = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
        assert!(
            e < 1e-6 * (n as f64).sqrt() * 10.0,
            "[{rows}, {n}]: max error {e:e} (seed {seed})"
        );
    }
}

/// One AdamW step (first and later) of two tensors in one call, on wgpu's
/// kernel against Burn's ops in f64.
#[test]
fn adamw_steps_match_f64() {
    use fno_ops::{AdamWOperands, AdamWStep};
    let seed = fresh_seed();
    println!("seed {seed}");
    let n = 3 * 5 * 8;
    let (p, g, m) = (uniform(n, seed), uniform(n, seed + 1), uniform(n, seed + 2));
    let v: Vec<f64> = uniform(n, seed + 3).iter().map(|x| x * x).collect();
    fn run<B: PointwiseBackend>(
        p: &[f64],
        g: &[f64],
        moments: Option<(&[f64], &[f64])>,
        step: &AdamWStep,
    ) -> Vec<Vec<f64>> {
        // The whole tensor, and its first 10 values as a second parameter.
        let t = |v: &[f64]| tensor::<B, 3>(v, [3, 5, 8]).into_primitive().tensor();
        let head = |v: &[f64]| tensor::<B, 1>(&v[..10], [10]).into_primitive().tensor();
        let operands = |t: &dyn Fn(&[f64]) -> _| AdamWOperands {
            param: t(p),
            grad: t(g),
            moments: moments.map(|(m, v)| (t(m), t(v))),
        };
        let out = B::adamw_steps(vec![operands(&t), operands(&head)], step);
        out.into_iter()
            .flatten()
            .map(|x| {
                let n = burn::tensor::TensorMetadata::shape(&x).num_elements();
                let flat = B::float_reshape(x, burn::tensor::Shape::new([n]));
                to_vec(Tensor::<B, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(
                    flat,
                )))
            })
            .collect()
    }
    for (time, moments, pairs) in [
        (1, None, false),
        (4, Some((&m[..], &v[..])), false),
        (1, None, true),
        (4, Some((&m[..], &v[..])), true),
    ] {
        let step = AdamWStep {
            lr: 1e-3,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-6,
            weight_decay: 1e-4,
            time,
            pairs,
            grad_scale: if moments.is_some() { 1.0 / 1024.0 } else { 1.0 },
        };
        let got = run::<Wgpu>(&p, &g, moments, &step);
        let want = run::<Exact>(&p, &g, moments, &step);
        let names = ["parameter", "moment 1", "moment 2"];
        for (k, name) in names.iter().chain(&names).enumerate() {
            assert_eq!(got[k].len(), if k < 3 { n } else { 10 }, "{name}: values");
            let e = relative_l2(&got[k], &want[k]);
            assert!(
                e < 1e-6,
                "step {time} (pairs {pairs}): {name} error {e:e} (seed {seed})"
            );
        }
    }
}

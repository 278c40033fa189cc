//! The non-uniform spectral convolution on wgpu (lavapipe in CI, NUFFT
//! kernels) and on ndarray (the f64 host path) against the same maths as
//! explicit Fourier sums in Burn's ops on ndarray in f64: forward values and
//! the gradients of `Σ r ⊙ y` with respect to the values and the weights,
//! in 1D and 2D, onto other points and onto the same ones, with few vectors
//! a transform and with enough for the kernels' interleaved layout, the
//! values read from padded rows.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::fft::ModeOrder;
use fno_kernels::nufft::signed_mode;
use fno_ops::{nonuniform_spectral_conv, PointCloud};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D]) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), &Default::default())
}

struct Case {
    batch: usize,
    cin: usize,
    cout: usize,
    modes: Vec<usize>,
    points_in: Vec<f64>,
    points_out: Vec<f64>,
    x: Vec<f64>,
    w: Vec<f64>,
    r: Vec<f64>,
}

impl Case {
    /// `[batch, cin, cout]` channels.
    fn new(modes: &[usize], m_in: usize, m_out: Option<usize>, [batch, cin, cout]: [usize; 3], seed: u64) -> Self {
        let d = modes.len();
        let k: usize = modes.iter().product();
        let points_in: Vec<f64> = uniform(m_in * d, seed).iter().map(|v| v * 3.2).collect();
        let points_out = match m_out {
            Some(m) => uniform(m * d, seed + 1).iter().map(|v| v * 3.2).collect(),
            None => points_in.clone(),
        };
        let m_out = points_out.len() / d;
        Case {
            batch,
            cin,
            cout,
            modes: modes.to_vec(),
            x: uniform(batch * cin * m_in, seed + 2),
            w: uniform(cin * cout * k * 2, seed + 3),
            r: uniform(batch * cout * m_out, seed + 4),
            points_in,
            points_out,
        }
    }

    fn m_in(&self) -> usize {
        self.points_in.len() / self.modes.len()
    }

    fn m_out(&self) -> usize {
        self.points_out.len() / self.modes.len()
    }

    fn k(&self) -> usize {
        self.modes.iter().product()
    }

    /// `cos(k·x_j)` and `sin(k·x_j)` as `[M, K]` tensors, modes in FINUFFT's order.
    fn fourier<B: Backend>(&self, points: &[f64]) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let d = self.modes.len();
        let m = points.len() / d;
        let (mut c, mut s) = (Vec::new(), Vec::new());
        for j in 0..m {
            for flat in 0..self.k() {
                let (mut rest, mut phase) = (flat, 0.0);
                for dim in (0..d).rev() {
                    let n = self.modes[dim];
                    phase += signed_mode(rest % n, n, ModeOrder::Shifted) as f64 * points[j * d + dim];
                    rest /= n;
                }
                c.push(phase.cos());
                s.push(phase.sin());
            }
        }
        (tensor(&c, [m, self.k()]), tensor(&s, [m, self.k()]))
    }

    /// The convolution as explicit sums in Burn's ops: `y` and the gradients
    /// of `Σ r ⊙ y` with respect to x and the weight.
    fn reference(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        type B = Autodiff<Exact>;
        let (b, ci, co, k) = (self.batch, self.cin, self.cout, self.k());
        let x = tensor::<B, 3>(&self.x, [b, ci, self.m_in()]).require_grad();
        let w = tensor::<B, 4>(&self.w, [ci, co, k, 2]).require_grad();
        let (c_in, s_in) = self.fourier::<B>(&self.points_in);
        let (c_out, s_out) = self.fourier::<B>(&self.points_out);
        let m = self.m_in() as f64;
        let flat = x.clone().reshape([b * ci, self.m_in()]);
        let fr = (flat.clone().matmul(c_in) / m).reshape([b, ci, 1, k]);
        let fi = (-flat.matmul(s_in) / m).reshape([b, ci, 1, k]);
        let part = |i: usize| w.clone().narrow(3, i, 1).reshape([1, ci, co, k]);
        let (wr, wi) = (part(0), part(1));
        let gr = (fr.clone() * wr.clone() - fi.clone() * wi.clone())
            .sum_dim(1)
            .reshape([b * co, k]);
        let gi = (fr * wi + fi * wr).sum_dim(1).reshape([b * co, k]);
        let y = (gr.matmul(c_out.transpose()) - gi.matmul(s_out.transpose())).reshape([b, co, self.m_out()]);
        let loss = (y.clone() * tensor::<B, 3>(&self.r, [b, co, self.m_out()])).sum();
        let grads = loss.backward();
        (
            to_vec(y),
            to_vec(x.grad(&grads).unwrap()),
            to_vec(w.grad(&grads).unwrap()),
        )
    }

    /// The op on `B`: `y` and the same gradients.
    fn ours<B: AutodiffBackend + fno_ops::NufftBackend>(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let (b, ci, co, k) = (self.batch, self.cin, self.cout, self.k());
        let d = self.modes.len();
        // x as a view of rows padded with NaN (as Burn pads rows on CUDA): read in place, padding untouched.
        let (m_in, pad) = (self.m_in(), 3);
        let padded: Vec<f64> = self
            .x
            .chunks(m_in)
            .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(f64::NAN, pad)))
            .collect();
        let padded = tensor::<B, 3>(&padded, [b, ci, m_in + pad]).require_grad();
        let x = padded.clone().narrow(2, 0, m_in);
        let w = tensor::<B, 4>(&self.w, [ci, co, k, 2]).require_grad();
        let points_in = PointCloud::new(self.points_in.clone(), d).unwrap();
        let points_out = PointCloud::new(self.points_out.clone(), d).unwrap();
        let y = nonuniform_spectral_conv(x, w.clone(), &points_in, &points_out, &self.modes, 1e-6);
        let loss = (y.clone() * tensor::<B, 3>(&self.r, [b, co, self.m_out()])).sum();
        let grads = loss.backward();
        (
            to_vec(y),
            to_vec(padded.grad(&grads).unwrap().narrow(2, 0, m_in)),
            to_vec(w.grad(&grads).unwrap()),
        )
    }
}

fn check(case: &Case, seed: u64) {
    let (y, gx, gw) = case.reference();
    for (backend, (oy, ogx, ogw), bound) in [
        ("wgpu", case.ours::<Autodiff<Wgpu>>(), 2e-5),
        ("ndarray f64", case.ours::<Autodiff<Exact>>(), 2e-5),
    ] {
        for (what, got, want) in [("y", &oy, &y), ("dL/dx", &ogx, &gx), ("dL/dW", &ogw, &gw)] {
            let e = relative_l2(got, want);
            println!("{backend} modes {:?}: {what} error {e:.2e} (seed {seed})", case.modes);
            assert!(
                e < bound,
                "{backend} modes {:?}: {what} error {e:e} (seed {seed})",
                case.modes
            );
        }
    }
}

#[test]
fn nonuniform_convolution_and_gradients_match_explicit_sums() {
    let seed = fresh_seed();
    check(&Case::new(&[9], 80, Some(60), [2, 3, 2], seed), seed);
    check(&Case::new(&[6, 5], 150, Some(120), [2, 3, 2], seed), seed);
    check(&Case::new(&[4, 6], 100, None, [2, 3, 2], seed), seed);
    // 12 and 15 vectors a transform: the kernels' interleaved layout, lanes over vectors.
    check(&Case::new(&[5, 6], 90, Some(70), [3, 4, 5], seed), seed);
}

//! PyTorch's exact GELU, `x·Φ(x) = x·(1 + erf(x/√2))/2`, and its derivative
//! `Φ(x) + x·φ(x)` times an output gradient, one pass over memory each. Built of
//! a framework's element-wise ops, the pair takes five passes forward and about
//! a dozen backward. Four floats a thread where the buffers allow (16-byte
//! loads and stores, four independent erfs in flight), else one.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::pairs::four_wide;

const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// `1/√(2π)`.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;
const THREADS: usize = 256;

#[cube]
fn cdf<F: Float>(v: F) -> F {
    F::new(0.5) * (F::new(1.0) + F::erf(v * F::new(FRAC_1_SQRT_2)))
}

#[cube(launch_unchecked)]
fn gelu_kernel<F: Float, N: Size>(x: &Array<Vector<F, N>>, y: &mut Array<Vector<F, N>>, #[comptime] width: usize) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let v = x[i];
        let mut out = Vector::<F, N>::empty();
        #[unroll]
        for q in 0..width {
            out[q] = v[q] * cdf::<F>(v[q]);
        }
        y[i] = out;
    }
}

#[cube(launch_unchecked)]
fn gelu_grad_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    grad: &Array<Vector<F, N>>,
    out: &mut Array<Vector<F, N>>,
    #[comptime] width: usize,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let (v, g) = (x[i], grad[i]);
        let mut result = Vector::<F, N>::empty();
        #[unroll]
        for q in 0..width {
            let pdf = F::exp(F::new(-0.5) * v[q] * v[q]) * F::new(FRAC_1_SQRT_2PI);
            result[q] = g[q] * (cdf::<F>(v[q]) + v[q] * pdf);
        }
        out[i] = result;
    }
}

fn launch_shape(len: usize, width: usize) -> (CubeCount, CubeDim) {
    (
        CubeCount::new_1d((len / width).div_ceil(THREADS) as u32),
        CubeDim::new_1d(THREADS as u32),
    )
}

/// `y = gelu(x)` over `len` f32 values.
pub fn gelu<R: Runtime>(client: &ComputeClient<R>, x: &Handle, y: &Handle, len: usize) {
    if len == 0 {
        return;
    }
    let width = four_wide(len.is_multiple_of(4), &[x, y]);
    let (count, dim) = launch_shape(len, width);
    // SAFETY: every index is checked against the arrays' length in vectors.
    unsafe {
        gelu_kernel::launch_unchecked::<f32, R>(
            client,
            count,
            dim,
            width,
            ArrayArg::from_raw_parts(x.clone(), len),
            ArrayArg::from_raw_parts(y.clone(), len),
            width,
        );
    }
}

/// `out = grad · gelu'(x)` over `len` f32 values.
pub fn gelu_grad<R: Runtime>(client: &ComputeClient<R>, x: &Handle, grad: &Handle, out: &Handle, len: usize) {
    if len == 0 {
        return;
    }
    let width = four_wide(len.is_multiple_of(4), &[x, grad, out]);
    let (count, dim) = launch_shape(len, width);
    // SAFETY: as in `gelu`.
    unsafe {
        gelu_grad_kernel::launch_unchecked::<f32, R>(
            client,
            count,
            dim,
            width,
            ArrayArg::from_raw_parts(x.clone(), len),
            ArrayArg::from_raw_parts(grad.clone(), len),
            ArrayArg::from_raw_parts(out.clone(), len),
            width,
        );
    }
}

/// The CPU oracle of [`gelu`] (f64).
pub fn gelu_cpu(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// The CPU oracle of [`gelu_grad`]'s factor `gelu'(x)` (f64).
pub fn gelu_derivative_cpu(x: f64) -> f64 {
    let cdf = 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    cdf + x * pdf
}

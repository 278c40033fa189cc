//! PyTorch's exact GELU, `x·Φ(x) = x·(1 + erf(x/√2))/2`, and its derivative
//! `Φ(x) + x·φ(x)` times an output gradient, one pass over memory each. Built of
//! a framework's element-wise ops, the pair takes five passes forward and about
//! a dozen backward. One float a thread: consecutive threads' loads are
//! coalesced already.

use cubecl::prelude::*;
use cubecl::server::Handle;

const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// `1/√(2π)`.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;
const THREADS: usize = 256;

#[cube(launch_unchecked)]
fn gelu_kernel<F: Float>(x: &Array<F>, y: &mut Array<F>) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let v = x[i];
        y[i] = F::new(0.5) * v * (F::new(1.0) + F::erf(v * F::new(FRAC_1_SQRT_2)));
    }
}

#[cube(launch_unchecked)]
fn gelu_grad_kernel<F: Float>(x: &Array<F>, grad: &Array<F>, out: &mut Array<F>) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let v = x[i];
        let cdf = F::new(0.5) * (F::new(1.0) + F::erf(v * F::new(FRAC_1_SQRT_2)));
        let pdf = F::exp(F::new(-0.5) * v * v) * F::new(FRAC_1_SQRT_2PI);
        out[i] = grad[i] * (cdf + v * pdf);
    }
}

fn launch_shape(len: usize) -> (CubeCount, CubeDim) {
    (
        CubeCount::new_1d(len.div_ceil(THREADS) as u32),
        CubeDim::new_1d(THREADS as u32),
    )
}

/// `y = gelu(x)` over `len` f32 values.
pub fn gelu<R: Runtime>(client: &ComputeClient<R>, x: &Handle, y: &Handle, len: usize) {
    if len == 0 {
        return;
    }
    let (count, dim) = launch_shape(len);
    // SAFETY: every index is checked against the arrays' length in vectors.
    unsafe {
        gelu_kernel::launch_unchecked::<f32, R>(
            client,
            count,
            dim,
            ArrayArg::from_raw_parts(x.clone(), len),
            ArrayArg::from_raw_parts(y.clone(), len),
        );
    }
}

/// `out = grad · gelu'(x)` over `len` f32 values.
pub fn gelu_grad<R: Runtime>(client: &ComputeClient<R>, x: &Handle, grad: &Handle, out: &Handle, len: usize) {
    if len == 0 {
        return;
    }
    let (count, dim) = launch_shape(len);
    // SAFETY: as in `gelu`.
    unsafe {
        gelu_grad_kernel::launch_unchecked::<f32, R>(
            client,
            count,
            dim,
            ArrayArg::from_raw_parts(x.clone(), len),
            ArrayArg::from_raw_parts(grad.clone(), len),
            ArrayArg::from_raw_parts(out.clone(), len),
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

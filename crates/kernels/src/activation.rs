//! PyTorch's exact GELU, `x·Φ(x) = x·(1 + erf(x/√2))/2`, and its derivative
//! `Φ(x) + x·φ(x)` times an output gradient, one pass over memory each. Built of
//! a framework's element-wise ops, the pair takes five passes forward and about
//! a dozen backward. Four values a thread where the buffers allow (16-byte
//! loads and stores of f32, four independent erfs in flight), else one. The
//! values may be stored in half precision; the arithmetic is f32.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::pairs::four_wide;
use crate::precision::{load_value, store_value, with_storage, Precision, Storage};

const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// `1/√(2π)`.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;
const THREADS: usize = 256;

/// `Φ(v)`, the standard normal distribution function.
#[cube]
pub(crate) fn cdf<F: Float>(v: F) -> F {
    F::new(0.5) * (F::new(1.0) + F::erf(v * F::new(FRAC_1_SQRT_2)))
}

#[cube(launch_unchecked)]
fn gelu_kernel<F: Float, S: Storage, N: Size>(
    x: &Array<Vector<S::Elem, N>>,
    y: &mut Array<Vector<S::Elem, N>>,
    #[comptime] width: usize,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let v = x[i];
        let mut out = Vector::<S::Elem, N>::empty();
        #[unroll]
        for q in 0..width {
            let a = load_value::<F, S>(v[q]);
            out[q] = store_value::<F, S>(a * cdf::<F>(a));
        }
        y[i] = out;
    }
}

#[cube(launch_unchecked)]
fn gelu_grad_kernel<F: Float, S: Storage, N: Size>(
    x: &Array<Vector<S::Elem, N>>,
    grad: &Array<Vector<S::Elem, N>>,
    out: &mut Array<Vector<S::Elem, N>>,
    #[comptime] width: usize,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let (v, g) = (x[i], grad[i]);
        let mut result = Vector::<S::Elem, N>::empty();
        #[unroll]
        for q in 0..width {
            let a = load_value::<F, S>(v[q]);
            let pdf = F::exp(F::new(-0.5) * a * a) * F::new(FRAC_1_SQRT_2PI);
            result[q] = store_value::<F, S>(load_value::<F, S>(g[q]) * (cdf::<F>(a) + a * pdf));
        }
        out[i] = result;
    }
}

fn launch_shape(len: usize, width: usize) -> (CubeCount, CubeDim) {
    (
        crate::grid::cube_count((len / width).div_ceil(THREADS)),
        CubeDim::new_1d(THREADS as u32),
    )
}

/// `y = gelu(x)` over `len` values stored in `precision`.
pub fn gelu<R: Runtime>(client: &ComputeClient<R>, precision: Precision, x: &Handle, y: &Handle, len: usize) {
    if len == 0 {
        return;
    }
    let stored = precision.stored_on(client);
    let width = four_wide(len.is_multiple_of(4), &[x, y], stored.bytes());
    with_storage!(stored, launch_gelu, [], client, x, y, len, width)
}

fn launch_gelu<R: Runtime, S: Storage>(client: &ComputeClient<R>, x: &Handle, y: &Handle, len: usize, width: usize) {
    let (count, dim) = launch_shape(len, width);
    // SAFETY: every index is checked against the arrays' length in vectors.
    unsafe {
        gelu_kernel::launch_unchecked::<f32, S, R>(
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

/// `out = grad · gelu'(x)` over `len` values stored in `precision`.
pub fn gelu_grad<R: Runtime>(
    client: &ComputeClient<R>,
    precision: Precision,
    x: &Handle,
    grad: &Handle,
    out: &Handle,
    len: usize,
) {
    if len == 0 {
        return;
    }
    let stored = precision.stored_on(client);
    let width = four_wide(len.is_multiple_of(4), &[x, grad, out], stored.bytes());
    with_storage!(stored, launch_gelu_grad, [], client, [x, grad, out], len, width)
}

fn launch_gelu_grad<R: Runtime, S: Storage>(
    client: &ComputeClient<R>,
    [x, grad, out]: [&Handle; 3],
    len: usize,
    width: usize,
) {
    let (count, dim) = launch_shape(len, width);
    // SAFETY: as in `gelu`.
    unsafe {
        gelu_grad_kernel::launch_unchecked::<f32, S, R>(
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

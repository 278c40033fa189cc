//! One AdamW step of a parameter tensor in one pass over memory, in
//! neuraloperator's `AdamW` arithmetic: the moments `m ← β₁m + (1−β₁)g`,
//! `v ← β₂v + (1−β₂)g²`, the step `p ← p − lr·(√c₂/c₁)·m/(√v + ε)` with
//! `cᵢ = 1 − βᵢᵗ` (ε added before the bias correction), then the decay
//! `p ← p·(1 − lr·wd)`. Complex parameters stored as interleaved (re, im)
//! pairs share one second moment, `|g|² = g_re² + g_im²`, as its complex
//! tensors do. Built of element-wise ops, a step takes about a dozen launches
//! per parameter tensor, which dominate a small model's training step; here
//! one launch steps many tensors.

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;
use rustfft::num_traits::Float as HostFloat;

const THREADS: usize = 256;

/// The hyper-parameters of one step; `time` counts steps from 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWStep {
    pub lr: f64,
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    pub weight_decay: f32,
    pub time: usize,
    /// The values are complex, (re, im) pairs: each pair shares its second moment.
    pub pairs: bool,
    /// The gradient is multiplied by this first (a loss scale's inverse; 1 otherwise).
    pub grad_scale: f32,
}

impl AdamWStep {
    /// The step's size `lr·√c₂/c₁` with the bias corrections `cᵢ = 1 − βᵢᵗ`, in f64.
    pub fn step_size(&self) -> f64 {
        let t = self.time as i32;
        let (c1, c2) = (1.0 - (self.beta_1 as f64).powi(t), 1.0 - (self.beta_2 as f64).powi(t));
        self.lr * c2.sqrt() / c1
    }

    /// The parameter's factor after the step, `1 − lr·wd`.
    pub fn decay(&self) -> f64 {
        1.0 - self.lr * self.weight_decay as f64
    }
}

/// One tensor's buffers for [`adamw`]: `len` f32s each.
#[derive(Clone, Copy, Debug)]
pub struct AdamWBuffers<'a> {
    pub param: &'a Handle,
    pub grad: &'a Handle,
    /// The moments, after the first step.
    pub moments: Option<(&'a Handle, &'a Handle)>,
    /// The new parameter and moments.
    pub out: [&'a Handle; 3],
    pub len: usize,
}

/// Buffers one tensor's step binds.
const BINDINGS_A_TENSOR: usize = 7;
/// Most cubes of a launch: each thread strides over every tensor.
const MAX_CUBES: usize = 2048;

/// Steps every tensor of `tensors` (all at `step`: the same time, with
/// moments or all without) in as few launches as the device's bindings
/// allow: each thread strides over each tensor in turn, so a model's
/// parameters take one launch where a launch a tensor took about forty.
///
/// # Panics
/// If some tensors have moments and others not, or `step.pairs` with an odd length.
pub fn adamw<R: Runtime>(client: &ComputeClient<R>, step: &AdamWStep, tensors: &[AdamWBuffers<'_>]) {
    let first = tensors.first().is_some_and(|t| t.moments.is_none());
    assert!(
        tensors.iter().all(|t| t.moments.is_none() == first),
        "one launch steps tensors all with moments or all without"
    );
    assert!(
        !step.pairs || tensors.iter().all(|t| t.len.is_multiple_of(2)),
        "complex values come in (re, im) pairs"
    );
    let bindings = client.properties().hardware.max_bindings as usize;
    let group = (bindings.saturating_sub(1) / BINDINGS_A_TENSOR).max(1);
    let tensors: Vec<_> = tensors.iter().filter(|t| t.len > 0).collect();
    for chunk in tensors.chunks(group) {
        launch_group(client, step, chunk, first);
    }
}

fn launch_group<R: Runtime>(client: &ComputeClient<R>, step: &AdamWStep, tensors: &[&AdamWBuffers<'_>], first: bool) {
    let longest = tensors.iter().map(|t| t.len).max().unwrap_or(0);
    let mut seqs: [SequenceArg<R, Array<f32>>; 7] = Default::default();
    for t in tensors {
        // The first step reads no moments: the gradient stands in, never read.
        let (m, v) = t.moments.unwrap_or((t.grad, t.grad));
        for (seq, h) in seqs
            .iter_mut()
            .zip([t.param, t.grad, m, v, t.out[0], t.out[1], t.out[2]])
        {
            seq.push(unsafe { ArrayArg::from_raw_parts(h.clone(), t.len) });
        }
    }
    let [param, grad, m, v, param_out, m_out, v_out] = seqs;
    // SAFETY: every index is checked against its array's length.
    unsafe {
        adamw_kernel::launch_unchecked::<f32, R>(
            client,
            CubeCount::new_1d(longest.div_ceil(THREADS).min(MAX_CUBES) as u32),
            CubeDim::new_1d(THREADS as u32),
            AdamWOperandsLaunch::new(param, grad, m, v),
            AdamWResultsLaunch::new(param_out, m_out, v_out),
            StepScalarsLaunch::new(
                step.step_size() as f32,
                step.beta_1,
                step.beta_2,
                step.epsilon,
                step.decay() as f32,
                step.grad_scale,
            ),
            tensors.len(),
            first,
            step.pairs,
        );
    }
}

/// What a launch reads, one array per tensor: the parameters, their
/// gradients and moments (the gradients again, never read, before the first step).
#[derive(CubeLaunch, CubeType)]
struct AdamWOperands<F: Float> {
    param: Sequence<Array<F>>,
    grad: Sequence<Array<F>>,
    moment_1: Sequence<Array<F>>,
    moment_2: Sequence<Array<F>>,
}

/// What a launch writes, one array per tensor: the new parameters and moments.
#[derive(CubeLaunch, CubeType)]
struct AdamWResults<F: Float> {
    param: Sequence<Array<F>>,
    moment_1: Sequence<Array<F>>,
    moment_2: Sequence<Array<F>>,
}

/// The step's scalars as the kernel reads them.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
struct StepScalars<F: Float + CubeElement> {
    step_size: F,
    beta_1: F,
    beta_2: F,
    epsilon: F,
    decay: F,
    grad_scale: F,
}

#[cube(launch_unchecked)]
fn adamw_kernel<F: Float + CubeElement>(
    operands: &AdamWOperands<F>,
    results: &mut AdamWResults<F>,
    s: StepScalars<F>,
    #[comptime] count: usize,
    #[comptime] first: bool,
    #[comptime] pairs: bool,
) {
    #[unroll]
    for j in 0..count {
        step_tensor::<F>(
            operands.param.index(j),
            operands.grad.index(j),
            operands.moment_1.index(j),
            operands.moment_2.index(j),
            results.param.index_mut(j),
            results.moment_1.index_mut(j),
            results.moment_2.index_mut(j),
            s,
            first,
            pairs,
        );
    }
}

/// One tensor's step, the launch's threads striding over it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn step_tensor<F: Float + CubeElement>(
    param: &Array<F>,
    grad: &Array<F>,
    moment_1: &Array<F>,
    moment_2: &Array<F>,
    param_out: &mut Array<F>,
    moment_1_out: &mut Array<F>,
    moment_2_out: &mut Array<F>,
    s: StepScalars<F>,
    #[comptime] first: bool,
    #[comptime] pairs: bool,
) {
    let mut i = ABSOLUTE_POS;
    while i < param.len() {
        let g = grad[i] * s.grad_scale;
        let g2 = if comptime![pairs] {
            let other = grad[i ^ 1] * s.grad_scale;
            g * g + other * other
        } else {
            g * g
        };
        let (m, v) = if comptime![first] {
            (g * (F::new(1.0) - s.beta_1), g2 * (F::new(1.0) - s.beta_2))
        } else {
            (
                moment_1[i] * s.beta_1 + g * (F::new(1.0) - s.beta_1),
                moment_2[i] * s.beta_2 + g2 * (F::new(1.0) - s.beta_2),
            )
        };
        param_out[i] = (param[i] - s.step_size * m / (F::sqrt(v) + s.epsilon)) * s.decay;
        moment_1_out[i] = m;
        moment_2_out[i] = v;
        i += CUBE_COUNT * CUBE_DIM as usize;
    }
}

/// The step on the CPU: the new parameter and moments, in `F`'s arithmetic
/// (the oracle in f64; the CPU backends' step in f32).
pub fn adamw_cpu<F: HostFloat>(
    step: &AdamWStep,
    param: &[F],
    grad: &[F],
    moments: Option<(&[F], &[F])>,
) -> (Vec<F>, Vec<F>, Vec<F>) {
    let n = grad.len();
    let (mut p, mut m, mut v) = (param.to_vec(), vec![F::zero(); n], vec![F::zero(); n]);
    if let Some((m0, v0)) = moments {
        m.copy_from_slice(m0);
        v.copy_from_slice(v0);
    }
    adamw_in_place(step, grad, (&mut p, &mut m, &mut v));
    (p, m, v)
}

/// [`adamw_cpu`] in place: the parameter and moments (zeros before the first
/// step) updated from `grad`.
pub fn adamw_in_place<F: HostFloat>(step: &AdamWStep, grad: &[F], (p, m, v): (&mut [F], &mut [F], &mut [F])) {
    let n = grad.len();
    assert!(
        p.len() == n && m.len() == n && v.len() == n,
        "AdamW operands of {n} values"
    );
    assert!(!step.pairs || n.is_multiple_of(2), "complex pairs of {n} values");
    let float = |v: f64| F::from(v).expect("a float");
    let (b1, b2) = (float(step.beta_1 as f64), float(step.beta_2 as f64));
    let one = F::one();
    let (step_size, decay, epsilon) = (float(step.step_size()), float(step.decay()), float(step.epsilon as f64));
    let scale = float(step.grad_scale as f64);
    let update = |p: &mut F, m: &mut F, v: &mut F, g: F, g2: F| {
        *m = *m * b1 + g * (one - b1);
        *v = *v * b2 + g2 * (one - b2);
        *p = (*p - step_size * *m / (v.sqrt() + epsilon)) * decay;
    };
    // Written as slices zipped, so that the loops vectorise.
    let width = if step.pairs { 2 } else { 1 };
    let operands = p
        .chunks_exact_mut(width)
        .zip(m.chunks_exact_mut(width))
        .zip(v.chunks_exact_mut(width));
    for (((p, m), v), g) in operands.zip(grad.chunks_exact(width)) {
        // A complex value's moment is of its squared modulus.
        let g2 = g
            .iter()
            .map(|&g| (g * scale) * (g * scale))
            .fold(F::zero(), |a, b| a + b);
        for i in 0..width {
            update(&mut p[i], &mut m[i], &mut v[i], g[i] * scale, g2);
        }
    }
}

//! One AdamW step of a parameter tensor in one pass over memory, in
//! neuraloperator's `AdamW` arithmetic: the moments `m ← β₁m + (1−β₁)g`,
//! `v ← β₂v + (1−β₂)g²`, the step `p ← p − lr·(√c₂/c₁)·m/(√v + ε)` with
//! `cᵢ = 1 − βᵢᵗ` (ε added before the bias correction), then the decay
//! `p ← p·(1 − lr·wd)`. Complex parameters stored as interleaved (re, im)
//! pairs share one second moment, `|g|² = g_re² + g_im²`, as its complex
//! tensors do. Built of element-wise ops, a step takes about a dozen launches
//! per parameter tensor, which dominate a small model's training step.

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

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

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn adamw_kernel<F: Float + CubeElement>(
    param: &Array<F>,
    grad: &Array<F>,
    moment_1: &Array<F>,
    moment_2: &Array<F>,
    param_out: &mut Array<F>,
    moment_1_out: &mut Array<F>,
    moment_2_out: &mut Array<F>,
    step_size: F,
    beta_1: F,
    beta_2: F,
    epsilon: F,
    decay: F,
    grad_scale: F,
    #[comptime] first: bool,
    #[comptime] pairs: bool,
) {
    let i = ABSOLUTE_POS;
    if i < param.len() {
        let g = grad[i] * grad_scale;
        let g2 = if comptime![pairs] {
            let other = grad[i ^ 1] * grad_scale;
            g * g + other * other
        } else {
            g * g
        };
        let (m, v) = if comptime![first] {
            (g * (F::new(1.0) - beta_1), g2 * (F::new(1.0) - beta_2))
        } else {
            (
                moment_1[i] * beta_1 + g * (F::new(1.0) - beta_1),
                moment_2[i] * beta_2 + g2 * (F::new(1.0) - beta_2),
            )
        };
        param_out[i] = (param[i] - step_size * m / (F::sqrt(v) + epsilon)) * decay;
        moment_1_out[i] = m;
        moment_2_out[i] = v;
    }
}

/// One step over `len` f32 values: reads `param`, `grad` and, after the
/// first step, the `moments`; writes the new parameter and moments to `out`.
pub fn adamw<R: Runtime>(
    client: &ComputeClient<R>,
    step: &AdamWStep,
    (param, grad): (&Handle, &Handle),
    moments: Option<(&Handle, &Handle)>,
    out: (&Handle, &Handle, &Handle),
    len: usize,
) {
    if len == 0 {
        return;
    }
    assert!(
        !step.pairs || len.is_multiple_of(2),
        "complex values come in (re, im) pairs, got {len} floats"
    );
    let arr = |h: &Handle| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    // The first step reads no moments: the gradient stands in, never read.
    let (m, v) = moments.unwrap_or((grad, grad));
    // SAFETY: every index is checked against the arrays' length.
    unsafe {
        adamw_kernel::launch_unchecked::<f32, R>(
            client,
            CubeCount::new_1d(len.div_ceil(THREADS) as u32),
            CubeDim::new_1d(THREADS as u32),
            arr(param),
            arr(grad),
            arr(m),
            arr(v),
            arr(out.0),
            arr(out.1),
            arr(out.2),
            step.step_size() as f32,
            step.beta_1,
            step.beta_2,
            step.epsilon,
            step.decay() as f32,
            step.grad_scale,
            moments.is_none(),
            step.pairs,
        );
    }
}

/// The CPU oracle (f64): the new parameter and moments.
pub fn adamw_cpu(
    step: &AdamWStep,
    param: &[f64],
    grad: &[f64],
    moments: Option<(&[f64], &[f64])>,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (b1, b2) = (step.beta_1 as f64, step.beta_2 as f64);
    let (mut p, mut m, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let scale = step.grad_scale as f64;
    for (i, &g) in grad.iter().enumerate() {
        let g = g * scale;
        let g2 = if step.pairs {
            let other = grad[i ^ 1] * scale;
            g * g + other * other
        } else {
            g * g
        };
        let (m0, v0) = moments.map_or((0.0, 0.0), |(m, v)| (m[i], v[i]));
        let (mi, vi) = (m0 * b1 + g * (1.0 - b1), v0 * b2 + g2 * (1.0 - b2));
        p.push((param[i] - step.step_size() * mi / (vi.sqrt() + step.epsilon as f64)) * step.decay());
        m.push(mi);
        v.push(vi);
    }
    (p, m, v)
}

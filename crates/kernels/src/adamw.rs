//! One AdamW step of a parameter tensor in one pass over memory: the moments
//! `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²` and the parameter
//! `p ← p·(1 − lr·wd) − lr·(m/c₁)/(√(v/c₂) + ε)` with `cᵢ = 1 − βᵢᵗ`, in the
//! order Burn's `AdamW` computes them. Built of element-wise ops, a step takes
//! about a dozen launches per parameter tensor, which dominate a small model's
//! training step.

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
}

impl AdamWStep {
    /// `(c₁, c₂)`, the bias corrections, as Burn forms them in f32.
    fn corrections(&self) -> (f32, f32) {
        let t = self.time as i32;
        (1.0 - self.beta_1.powi(t), 1.0 - self.beta_2.powi(t))
    }

    /// The parameter's factor `1 − lr·wd`, formed in f64 as Burn does.
    fn decay(&self) -> f32 {
        (1.0 - self.lr * self.weight_decay as f64) as f32
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
    lr: F,
    beta_1: F,
    beta_2: F,
    epsilon: F,
    decay: F,
    correction_1: F,
    correction_2: F,
    #[comptime] first: bool,
) {
    let i = ABSOLUTE_POS;
    if i < param.len() {
        let g = grad[i];
        let (m, v) = if comptime![first] {
            (g * (F::new(1.0) - beta_1), g * g * (F::new(1.0) - beta_2))
        } else {
            (
                moment_1[i] * beta_1 + g * (F::new(1.0) - beta_1),
                moment_2[i] * beta_2 + g * g * (F::new(1.0) - beta_2),
            )
        };
        let delta = (m / correction_1) / (F::sqrt(v / correction_2) + epsilon);
        param_out[i] = param[i] * decay - delta * lr;
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
    let (c1, c2) = step.corrections();
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
            step.lr as f32,
            step.beta_1,
            step.beta_2,
            step.epsilon,
            step.decay(),
            c1,
            c2,
            moments.is_none(),
        );
    }
}

/// The CPU oracle (f64 arithmetic on the same f32 constants): the new
/// parameter and moments.
pub fn adamw_cpu(
    step: &AdamWStep,
    param: &[f64],
    grad: &[f64],
    moments: Option<(&[f64], &[f64])>,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (c1, c2) = step.corrections();
    let (b1, b2) = (step.beta_1 as f64, step.beta_2 as f64);
    let (mut p, mut m, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &g) in grad.iter().enumerate() {
        let (m0, v0) = moments.map_or((0.0, 0.0), |(m, v)| (m[i], v[i]));
        let (mi, vi) = (m0 * b1 + g * (1.0 - b1), v0 * b2 + g * g * (1.0 - b2));
        let delta = (mi / c1 as f64) / ((vi / c2 as f64).sqrt() + step.epsilon as f64);
        p.push(param[i] * step.decay() as f64 - delta * step.lr);
        m.push(mi);
        v.push(vi);
    }
    (p, m, v)
}

//! The CPU executor of an [`FftPlan`]: straightforward per-axis transforms through
//! rustfft, in f32 or f64. It is the oracle the kernels are tested against and
//! the `cpu` backend of the CLI, so it follows the definitions, not the kernels'
//! algorithms.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use num_complex::Complex;
use rustfft::num_traits::Float;
use rustfft::{Fft, FftNum, FftPlanner};

use super::plan::{AxisKind, AxisStep, FftError, FftPlan};

impl FftPlan {
    /// Runs the plan on the CPU. `input` holds `input_floats()` values
    /// (interleaved re/im for complex input); the result holds `output_floats()`.
    pub fn execute_cpu<T: FftNum + Float>(&self, input: &[T]) -> Result<Vec<T>, FftError> {
        self.check_host_input(input.len())?;
        let mut shape = self.input_shape().to_vec();
        let mut data: Vec<Complex<T>> = if self.input_is_complex() {
            input.chunks_exact(2).map(|c| Complex::new(c[0], c[1])).collect()
        } else {
            input.iter().map(|&r| Complex::new(r, T::zero())).collect()
        };
        for step in self.steps() {
            data = run_step(step, &shape, &data);
            shape[step.axis] = step.out_len;
        }
        Ok(if self.output_is_complex() {
            data.iter().flat_map(|c| [c.re, c.im]).collect()
        } else {
            data.iter().map(|c| c.re).collect()
        })
    }
}

thread_local! {
    /// One planner per thread and planner type (rustfft's and realfft's, per
    /// float type): they cache their plans, twiddles included, so callers that
    /// run a plan many times (training steps, the data generators' time
    /// steppers) plan each length once.
    static PLANNERS: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::new(HashMap::new());
}

/// `f` on the calling thread's planner of type `P`, made by `new` on first use.
pub(super) fn with_planner<P: 'static, R>(new: fn() -> P, f: impl FnOnce(&mut P) -> R) -> R {
    PLANNERS.with(|planners| {
        let mut planners = planners.borrow_mut();
        let planner = planners
            .entry(TypeId::of::<P>())
            .or_insert_with(|| Box::new(new()))
            .downcast_mut::<P>()
            .expect("planners are keyed by their type");
        f(planner)
    })
}

pub(super) fn rustfft_plan<T: FftNum>(n: usize, inverse: bool) -> Arc<dyn Fft<T>> {
    with_planner(FftPlanner::<T>::new, |planner| {
        if inverse {
            planner.plan_fft_inverse(n)
        } else {
            planner.plan_fft_forward(n)
        }
    })
}

fn run_step<T: FftNum + Float>(step: &AxisStep, shape: &[usize], data: &[Complex<T>]) -> Vec<Complex<T>> {
    let outer: usize = shape[..step.axis].iter().product();
    let inner: usize = shape[step.axis + 1..].iter().product();
    let n = step.n;
    let inverse = !matches!(step.kind, AxisKind::R2C | AxisKind::C2C { inverse: false });
    let fft = rustfft_plan::<T>(n, inverse);
    let scale = T::from_f64(step.scale).unwrap();
    let zero = Complex::new(T::zero(), T::zero());
    let mut out = vec![zero; outer * step.out_len * inner];
    let mut buf = vec![zero; n];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| data[(o * step.in_len + j) * inner + i];
            buf.fill(zero);
            match step.kind {
                AxisKind::C2R => {
                    // Hermitian extension of the held bins; DC and Nyquist are real.
                    let bins = n / 2 + 1;
                    for k in 0..bins {
                        if let Some(j) = step.load.position(k, bins) {
                            let mut v = at(j);
                            if k == 0 || 2 * k == n {
                                v.im = T::zero();
                            }
                            buf[k] = v;
                            if k != 0 && 2 * k != n {
                                buf[n - k] = v.conj();
                            }
                        }
                    }
                }
                _ => {
                    for (k, slot) in buf.iter_mut().enumerate() {
                        if let Some(j) = step.load.position(k, n) {
                            *slot = at(j);
                        }
                    }
                }
            }
            fft.process(&mut buf);
            let full_out = if step.kind == AxisKind::R2C { n / 2 + 1 } else { n };
            for j in 0..step.out_len {
                let k = step.store.index(j, full_out);
                let mut v = buf[k] * scale;
                if step.kind == AxisKind::C2R {
                    v.im = T::zero();
                }
                out[(o * step.out_len + j) * inner + i] = v;
            }
        }
    }
    out
}

//! A threaded CPU executor of an [`FftPlan`]: the oracle's steps
//! ([`FftPlan::execute_cpu`]) with each axis's lines split over rayon's
//! threads, real axes through realfft (half a complex FFT's work), the
//! transforms planned once a thread (cached) and the buffers once a call and thread.

use std::sync::Arc;

use num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::num_traits::Float;
use rustfft::FftNum;

use super::cpu::{rustfft_plan, with_planner};
use super::plan::{AxisKind, AxisStep, FftError, FftPlan};
use super::window::Window;
use crate::host_buffers::par_build;

impl FftPlan {
    /// Runs the plan on the CPU's threads; the same contract and results as
    /// [`FftPlan::execute_cpu`] (to rounding).
    pub fn execute_threaded<T: FftNum + Float>(&self, input: &[T]) -> Result<Vec<T>, FftError> {
        self.check_host_input(input.len())?;
        let mut shape = self.input_shape().to_vec();
        let steps = self.steps();
        let mut data: Vec<Complex<T>> = Vec::new();
        for (s, step) in steps.iter().enumerate() {
            let extents = Extents::of(step, &shape);
            match step.kind {
                AxisKind::R2C => {
                    debug_assert_eq!(s, 0, "a forward real transform starts the plan");
                    data = forward_real(step, extents, input);
                }
                AxisKind::C2R => {
                    debug_assert_eq!(s + 1, steps.len(), "an inverse real transform ends the plan");
                    let source = if s == 0 {
                        interleaved(input)
                    } else {
                        std::mem::take(&mut data)
                    };
                    return Ok(inverse_real(step, extents, &source));
                }
                AxisKind::C2C { inverse } => {
                    let source = if s == 0 {
                        interleaved(input)
                    } else {
                        std::mem::take(&mut data)
                    };
                    data = complex(step, extents, &source, inverse);
                }
            }
            shape[step.axis] = step.out_len;
        }
        Ok(data.iter().flat_map(|c| [c.re, c.im]).collect())
    }
}

/// A step's lines: `outer` blocks of `inner` lines, `in_len` values each in,
/// `out_len` out; a line's values lie `inner` apart.
#[derive(Clone, Copy)]
struct Extents {
    outer: usize,
    inner: usize,
    in_len: usize,
    out_len: usize,
}

impl Extents {
    fn of(step: &AxisStep, shape: &[usize]) -> Self {
        Extents {
            outer: shape[..step.axis].iter().product(),
            inner: shape[step.axis + 1..].iter().product(),
            in_len: step.in_len,
            out_len: step.out_len,
        }
    }
}

fn interleaved<T: Float>(values: &[T]) -> Vec<Complex<T>> {
    values.chunks_exact(2).map(|c| Complex::new(c[0], c[1])).collect()
}

/// Runs `transform(state, line in, line out)` on every line, the outer blocks
/// over the threads; `state` is made once a thread. Lines of the last axis
/// (`inner` 1) are read and written in place; others go through a copy.
fn each_line<I, O, S>(
    input: &[I],
    e: Extents,
    (in_zero, zero): (I, O),
    state: impl Fn() -> S + Sync + Send,
    transform: impl Fn(&mut S, &[I], &mut [O]) + Sync + Send,
) -> Vec<O>
where
    I: Copy + Send + Sync,
    O: Copy + Send + Sync,
{
    let init = || (state(), vec![in_zero; e.in_len], vec![zero; e.out_len]);
    let block_len = e.out_len * e.inner;
    par_build(
        (e.outer * block_len, block_len),
        zero,
        init,
        |(state, line_in, line_out), o, block| {
            let source = &input[o * e.in_len * e.inner..(o + 1) * e.in_len * e.inner];
            if e.inner == 1 {
                return transform(state, source, block);
            }
            for i in 0..e.inner {
                for (j, v) in line_in.iter_mut().enumerate() {
                    *v = source[j * e.inner + i];
                }
                transform(state, line_in, line_out);
                for (j, v) in line_out.iter().enumerate() {
                    block[j * e.inner + i] = *v;
                }
            }
        },
    )
}

/// A window's sequence index for each dense position `0..len`, in a sequence
/// of `n` (looked up once a call rather than once a value).
fn indices(window: Window, len: usize, n: usize) -> Vec<usize> {
    (0..len).map(|j| window.index(j, n)).collect()
}

/// Places a line's held values at the sequence indices `at` (from the step's
/// load window) in `buf` of the transform's length: zero elsewhere, indices
/// past it dropped.
fn load<V: Copy>(at: &[usize], line: &[V], buf: &mut [V], zero: V) {
    buf.fill(zero);
    for (&k, &v) in at.iter().zip(line) {
        if let Some(b) = buf.get_mut(k) {
            *b = v;
        }
    }
}

/// A line's output: the values at `at` (from the step's store window), scaled.
fn store<V: Copy + std::ops::Mul<T, Output = V>, T: Copy>(at: &[usize], values: &[V], scale: T, out: &mut [V]) {
    for (o, &k) in out.iter_mut().zip(at) {
        *o = values[k] * scale;
    }
}

fn complex<T: FftNum + Float>(step: &AxisStep, e: Extents, input: &[Complex<T>], inverse: bool) -> Vec<Complex<T>> {
    let fft = rustfft_plan::<T>(step.n, inverse);
    let zero = Complex::new(T::zero(), T::zero());
    let scale = T::from_f64(step.scale).expect("a float scale");
    let state = || (vec![zero; step.n], vec![zero; fft.get_inplace_scratch_len()]);
    let (at_load, at_store) = (
        indices(step.load, step.in_len, step.n),
        indices(step.store, step.out_len, step.n),
    );
    each_line(input, e, (zero, zero), state, |(buf, scratch), line, out| {
        load(&at_load, line, buf, zero);
        fft.process_with_scratch(buf, scratch);
        store(&at_store, buf, scale, out);
    })
}

fn forward_real<T: FftNum + Float>(step: &AxisStep, e: Extents, input: &[T]) -> Vec<Complex<T>> {
    let fft: Arc<dyn RealToComplex<T>> = with_planner(RealFftPlanner::new, |p| p.plan_fft_forward(step.n));
    let zero = Complex::new(T::zero(), T::zero());
    let (bins, scale) = (step.n / 2 + 1, T::from_f64(step.scale).expect("a float scale"));
    let state = || (fft.make_input_vec(), fft.make_output_vec(), fft.make_scratch_vec());
    let (at_load, at_store) = (
        indices(step.load, step.in_len, step.n),
        indices(step.store, step.out_len, bins),
    );
    each_line(
        input,
        e,
        (T::zero(), zero),
        state,
        |(signal, spectrum, scratch), line, out| {
            load(&at_load, line, signal, T::zero());
            fft.process_with_scratch(signal, spectrum, scratch)
                .expect("buffers of the plan's lengths");
            store(&at_store, spectrum, scale, out);
        },
    )
}

fn inverse_real<T: FftNum + Float>(step: &AxisStep, e: Extents, input: &[Complex<T>]) -> Vec<T> {
    let fft: Arc<dyn ComplexToReal<T>> = with_planner(RealFftPlanner::new, |p| p.plan_fft_inverse(step.n));
    let n = step.n;
    let scale = T::from_f64(step.scale).expect("a float scale");
    let state = || (fft.make_input_vec(), fft.make_output_vec(), fft.make_scratch_vec());
    let zero = Complex::new(T::zero(), T::zero());
    let (at_load, at_store) = (
        indices(step.load, step.in_len, n / 2 + 1),
        indices(step.store, step.out_len, n),
    );
    each_line(
        input,
        e,
        (zero, T::zero()),
        state,
        |(spectrum, signal, scratch), line, out| {
            load(&at_load, line, spectrum, zero);
            // The Hermitian projection: DC and (even lengths) Nyquist are real.
            spectrum[0].im = T::zero();
            if n.is_multiple_of(2) {
                spectrum[n / 2].im = T::zero();
            }
            fft.process_with_scratch(spectrum, signal, scratch)
                .expect("buffers of the plan's lengths, real DC and Nyquist");
            store(&at_store, signal, scale, out);
        },
    )
}

#[cfg(test)]
mod tests {
    use crate::fft::{Direction, FftDesc, FftKind, ModeOrder, Norm};
    use fno_testing::{fresh_seed, uniform};

    /// Truncated forward and zero-padded inverse real transforms (1-D to 3-D,
    /// every mode order, crops and pads), complex ones both ways, every norm:
    /// the threaded executor gives the oracle's values, in f64 and f32.
    #[test]
    fn threaded_execution_matches_the_oracle() {
        let seed = fresh_seed();
        println!("seed {seed}");
        let r2c = |shape: &[usize], modes: &[usize], order| {
            let axes: Vec<isize> = (0..modes.len() as isize).map(|d| d - modes.len() as isize).collect();
            FftDesc::new(shape, &axes, FftKind::R2C, Direction::Forward)
                .modes(modes)
                .mode_order(order)
        };
        let c2r = |shape: &[usize], modes: &[usize], lengths: &[usize], order| {
            let axes: Vec<isize> = (0..modes.len() as isize).map(|d| d - modes.len() as isize).collect();
            FftDesc::new(shape, &axes, FftKind::C2R, Direction::Inverse)
                .modes(modes)
                .lengths(lengths)
                .mode_order(order)
        };
        let descs = [
            r2c(&[3, 2, 64], &[9], ModeOrder::Fft),
            r2c(&[2, 3, 15, 12], &[7, 5], ModeOrder::Shifted).norm(Norm::Forward),
            r2c(&[2, 2, 9, 7, 10], &[5, 4, 3], ModeOrder::Shifted).norm(Norm::Ortho),
            c2r(&[2, 3, 7, 5], &[7, 5], &[15, 12], ModeOrder::ShiftedOddLower),
            c2r(&[2, 3, 7, 5], &[7, 5], &[16, 8], ModeOrder::Shifted).norm(Norm::Forward),
            c2r(&[2, 2, 5, 4, 3], &[5, 4, 3], &[9, 7, 10], ModeOrder::ShiftedOddLower).norm(Norm::Ortho),
            c2r(&[4, 7], &[7], &[12], ModeOrder::Fft),
            FftDesc::new(&[3, 20, 6], &[-2, -1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[3, 20, 6], &[-2], FftKind::C2C, Direction::Inverse).norm(Norm::Ortho),
        ];
        for (i, desc) in descs.into_iter().enumerate() {
            let plan = crate::fft::FftPlan::new(desc.clone()).unwrap();
            let input = uniform(plan.input_floats(), seed + i as u64);
            let (want, got) = (
                plan.execute_cpu(&input).unwrap(),
                plan.execute_threaded(&input).unwrap(),
            );
            assert_eq!(got.len(), want.len());
            let e = fno_testing::relative_l2(&got, &want);
            assert!(e < 1e-12, "{desc:?}: f64 {e:e}");
            let input: Vec<f32> = input.iter().map(|&v| v as f32).collect();
            let got = plan.execute_threaded(&input).unwrap();
            let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
            let e = fno_testing::relative_l2(&got, &want);
            assert!(e < 1e-5, "{desc:?}: f32 {e:e}");
        }
        let plan = crate::fft::FftPlan::new(r2c(&[2, 8], &[3], ModeOrder::Fft)).unwrap();
        assert!(plan.execute_threaded(&[0.0f32; 15]).is_err());
    }
}

//! The squared norms behind neuraloperator's relative L2 and H1 losses, per
//! row of `[rows, *grid]` values (a row: one sample's channel), and their
//! gradient, one pass over memory each.
//!
//! With `∂ₐf[j] = (f[j+1] − f[j−1])·nₐ/2` the periodic central difference
//! along grid axis `a` (`nₐ` points, spacing `1/nₐ`), the norms are
//! `N = Σ (x−y)² + Σₐ Σ (∂ₐ(x−y))²` and `D = Σ y² + Σₐ Σ (∂ₐy)²` (the
//! derivative terms only `with derivatives`: H1). The gradient of `s·N` with
//! respect to `x` is `2s·(f − Σₐ (nₐ/2)²·(f[j+2] − 2f[j] + f[j−2]))` with
//! `f = x − y` (the same of `y` alone gives `D`'s gradient). Built of a
//! framework's ops, the rolls, differences, squares and sums of a 2-D H1 loss
//! and its backward take about a hundred launches.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::split_sum::SplitSumProblem;

const THREADS: usize = 256;
/// Points a cube sums (sixteen a thread), so large grids spread over the device.
const CUBE_POINTS: usize = 4096;

/// Rows of a grid of up to three axes (fewer: leading axes of 1 point).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SobolevProblem {
    pub rows: usize,
    pub grid: [usize; 3],
    /// The derivative terms (H1), or the values alone (L2).
    pub derivatives: bool,
}

impl SobolevProblem {
    /// `grid` of one to three axes, outermost first.
    ///
    /// # Panics
    /// With no axis or more than three.
    pub fn new(rows: usize, grid: &[usize], derivatives: bool) -> Self {
        assert!(
            (1..=3).contains(&grid.len()),
            "a grid of 1 to 3 axes, got {}",
            grid.len()
        );
        let mut padded = [1; 3];
        padded[3 - grid.len()..].copy_from_slice(grid);
        SobolevProblem {
            rows,
            grid: padded,
            derivatives,
        }
    }

    pub fn points(&self) -> usize {
        self.grid.iter().product()
    }

    /// Cubes per row in the forward.
    pub fn chunks(&self) -> usize {
        self.points().div_ceil(CUBE_POINTS).max(1)
    }

    /// f32s of scratch the forward needs beside its `[2, rows]` output: the
    /// partial sums of each cube where a row takes several.
    pub fn scratch_len(&self) -> usize {
        let chunks = self.chunks();
        if chunks > 1 {
            2 * self.rows * chunks
        } else {
            0
        }
    }

    /// Runs on a CubeCL device: `x` and `y` hold `rows · points` f32s; writes
    /// `[N, D]` of each row to `out` (`2 · rows` f32s: all `N` first), with
    /// `scratch` of [`scratch_len`](Self::scratch_len) f32s (unused at 0).
    pub fn launch<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        (x, y): (&Handle, &Handle),
        out: &Handle,
        scratch: &Handle,
    ) {
        let (len, chunks) = (self.rows * self.points(), self.chunks());
        if len == 0 {
            return;
        }
        let partial = if chunks > 1 { scratch } else { out };
        let [n0, n1, n2] = self.grid;
        // SAFETY: loads are of points below `points` in rows below `rows`
        // (neighbours wrap within the row), stores of one partial a cube.
        unsafe {
            norms_kernel::launch_unchecked::<f32, R>(
                client,
                CubeCount::Static(chunks as u32, self.rows as u32, 1),
                CubeDim::new_1d(THREADS as u32),
                ArrayArg::from_raw_parts(x.clone(), len),
                ArrayArg::from_raw_parts(y.clone(), len),
                ArrayArg::from_raw_parts(partial.clone(), 2 * self.rows * chunks),
                n0,
                n1,
                n2,
                self.rows,
                chunks,
                self.derivatives,
            );
        }
        if chunks > 1 {
            let sum = SplitSumProblem {
                splits: chunks,
                p: 1,
                q: 2 * self.rows,
                k: 1,
                width: 1,
                strides: crate::cgemm::Strides {
                    row: 0,
                    col: 1,
                    mode: 0,
                },
            };
            sum.launch(client, scratch, out);
        }
    }

    /// Runs on a CubeCL device: `out = 2·scale[row]·(f − Σₐ (nₐ/2)²·Δₐf)` with
    /// `f = x − y` where `y` is given, else `x`; `scale` holds `rows` f32s.
    pub fn launch_grad<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        (x, y): (&Handle, Option<&Handle>),
        scale: &Handle,
        out: &Handle,
    ) {
        let len = self.rows * self.points();
        if len == 0 {
            return;
        }
        let [n0, n1, n2] = self.grid;
        let arr = |h: &Handle| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // SAFETY: every index is checked against the length; neighbours wrap
        // within the row.
        unsafe {
            norms_grad_kernel::launch_unchecked::<f32, R>(
                client,
                crate::grid::cube_count(len.div_ceil(THREADS)),
                CubeDim::new_1d(THREADS as u32),
                arr(x),
                arr(y.unwrap_or(x)),
                ArrayArg::from_raw_parts(scale.clone(), self.rows),
                arr(out),
                n0,
                n1,
                n2,
                self.derivatives,
                y.is_some(),
            );
        }
    }
}

/// The point `shift` places along an axis of `n` points at `stride` from `p`, periodic.
#[cube]
fn wrapped(p: usize, n: usize, stride: usize, shift: usize) -> usize {
    let c = (p / stride) % n;
    p - c * stride + ((c + shift) % n) * stride
}

/// `Σ (∂f)²` terms of point `p` along one axis, for `f = x − y` and `y`.
#[cube]
fn axis_terms<F: Float>(x: &Array<F>, y: &Array<F>, base: usize, p: usize, n: usize, stride: usize) -> (F, F) {
    let up = base + wrapped(p, n, stride, 1);
    let down = base + wrapped(p, n, stride, n - 1);
    let s = F::cast_from(n) * F::new(0.5);
    let (yu, yd) = (y[up], y[down]);
    let dd = ((x[up] - yu) - (x[down] - yd)) * s;
    let dy = (yu - yd) * s;
    (dd * dd, dy * dy)
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn norms_kernel<F: Float>(
    x: &Array<F>,
    y: &Array<F>,
    partial: &mut Array<F>,
    n0: usize,
    n1: usize,
    n2: usize,
    rows: usize,
    chunks: usize,
    #[comptime] derivatives: bool,
) {
    let lane = UNIT_POS as usize;
    let (chunk, row) = (CUBE_POS_X as usize, CUBE_POS_Y as usize);
    let points = n0 * n1 * n2;
    let base = row * points;
    let mut num = F::new(0.0);
    let mut den = F::new(0.0);
    let mut p = chunk * THREADS + lane;
    while p < points {
        let (xv, yv) = (x[base + p], y[base + p]);
        num += (xv - yv) * (xv - yv);
        den += yv * yv;
        if comptime![derivatives] {
            let (a, b) = axis_terms::<F>(x, y, base, p, n2, 1);
            let (c, d) = axis_terms::<F>(x, y, base, p, n1, n2);
            let (e, f) = axis_terms::<F>(x, y, base, p, n0, n1 * n2);
            num += a + c + e;
            den += b + d + f;
        }
        p += chunks * THREADS;
    }
    let mut shared = SharedMemory::<F>::new(2 * THREADS);
    shared[lane] = num;
    shared[THREADS + lane] = den;
    sync_cube();
    let mut half = CUBE_DIM as usize / 2;
    while half > 0 {
        if lane < half {
            shared[lane] = shared[lane] + shared[lane + half];
            shared[THREADS + lane] = shared[THREADS + lane] + shared[THREADS + lane + half];
        }
        sync_cube();
        half /= 2;
    }
    if lane == 0 {
        // Split-sum layout: chunk-major partials of the `[2, rows]` output.
        let at = chunk * 2 * rows + row;
        partial[at] = shared[0];
        partial[at + rows] = shared[THREADS];
    }
}

/// `(f[j+2] − 2f[j] + f[j−2])·(n/2)²` at point `p` along one axis.
#[cube]
fn second_difference<F: Float>(
    x: &Array<F>,
    y: &Array<F>,
    base: usize,
    p: usize,
    n: usize,
    stride: usize,
    #[comptime] difference: bool,
) -> F {
    let up = base + wrapped(p, n, stride, 2 % n);
    let down = base + wrapped(p, n, stride, (2 * n - 2) % n);
    let s = F::cast_from(n) * F::new(0.5);
    let centre = value_at::<F>(x, y, base + p, difference);
    (value_at::<F>(x, y, up, difference) - F::new(2.0) * centre + value_at::<F>(x, y, down, difference)) * s * s
}

/// `f[q]`: `x[q] − y[q]`, or `x[q]` alone.
#[cube]
fn value_at<F: Float>(x: &Array<F>, y: &Array<F>, q: usize, #[comptime] difference: bool) -> F {
    if comptime![difference] {
        x[q] - y[q]
    } else {
        x[q]
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn norms_grad_kernel<F: Float>(
    x: &Array<F>,
    y: &Array<F>,
    scale: &Array<F>,
    out: &mut Array<F>,
    n0: usize,
    n1: usize,
    n2: usize,
    #[comptime] derivatives: bool,
    #[comptime] difference: bool,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        let points = n0 * n1 * n2;
        let (row, p) = (i / points, i % points);
        let base = row * points;
        let mut g = value_at::<F>(x, y, i, difference);
        if comptime![derivatives] {
            g -= second_difference::<F>(x, y, base, p, n2, 1, difference);
            g -= second_difference::<F>(x, y, base, p, n1, n2, difference);
            g -= second_difference::<F>(x, y, base, p, n0, n1 * n2, difference);
        }
        out[i] = F::new(2.0) * scale[row] * g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_pad_to_three_axes_and_split_large_rows() {
        let p = SobolevProblem::new(3, &[128, 128], true);
        assert_eq!(p.grid, [1, 128, 128]);
        assert_eq!((p.chunks(), p.scratch_len()), (4, 24));
        assert_eq!(SobolevProblem::new(2, &[64], false).scratch_len(), 0);
    }
}

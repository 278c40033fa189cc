//! The same algorithm on the CPU, in f64: spreading by scattering (one thread,
//! no races), the FFT through [`FftPlan::execute_cpu`]. `fno nufft --backend
//! cpu` runs it; it costs `O(M·w^d + n^d log n)` where the oracle costs `O(M·N^d)`.

use super::plan::{NufftDesc, NufftError, NufftType};
use super::points::SortedPoints;
use crate::fft::FftPlan;

impl NufftDesc {
    /// The transform of `input` (interleaved (re, im): `[batch, M]` for type
    /// 1, `[batch, N…]` for type 2) at `points` (`[M, d]`), in f64.
    pub fn execute_cpu(&self, points: &[f64], input: &[f64]) -> Result<Vec<f64>, NufftError> {
        let layout = self.layout()?;
        let sorted = SortedPoints::new(points, &layout)?;
        let m = sorted.len();
        let batch = self.batch;
        let modes: usize = self.modes.iter().product();
        let expected = 2 * batch * if self.kind == NufftType::One { m } else { modes };
        if input.len() != expected {
            return Err(NufftError::Invalid(format!(
                "{} input values, the transform takes {expected}",
                input.len()
            )));
        }
        let fft = FftPlan::new(self.fft(&layout, false)).map_err(|e| NufftError::Fft(e.to_string()))?;
        let fft_error = |e: crate::fft::FftError| NufftError::Fft(e.to_string());
        let grid = &layout.grid;
        let cells: usize = grid.iter().product();
        let width = layout.spreader.width;
        let d = grid.len();
        // Each point's covered cells (flat indices) and kernel weights.
        let footprint = |p: usize| -> Vec<(usize, f64)> {
            let mut start = [0usize; 3];
            let mut rest = sorted.start[p] as usize;
            for dim in (0..d).rev() {
                start[dim] = rest % grid[dim];
                rest /= grid[dim];
            }
            let mut cells = vec![(0usize, 1.0f64)];
            for dim in 0..d {
                let offset = sorted.offset[p * d + dim] as f64;
                cells = cells
                    .iter()
                    .flat_map(|&(flat, weight)| {
                        (0..width).map(move |a| {
                            let cell = (start[dim] + a) % grid[dim];
                            (
                                flat * grid[dim] + cell,
                                weight * layout.spreader.at_offset(a as f64 + offset),
                            )
                        })
                    })
                    .collect();
            }
            cells
        };
        let factor = |flat: usize| -> f64 {
            let mut rest = flat;
            let mut f = 1.0;
            for dim in (0..d).rev() {
                f *= layout.correction[dim][rest % self.modes[dim]];
                rest /= self.modes[dim];
            }
            f
        };
        let deconvolve = |values: &[f64]| -> Vec<f64> {
            values
                .chunks_exact(2)
                .enumerate()
                .flat_map(|(i, c)| {
                    let f = factor(i % modes);
                    [c[0] * f, c[1] * f]
                })
                .collect()
        };
        match self.kind {
            NufftType::One => {
                let mut fine = vec![0.0; 2 * batch * cells];
                for p in 0..m {
                    let source = sorted.order[p] as usize;
                    for (cell, weight) in footprint(p) {
                        for b in 0..batch {
                            let (v, g) = (2 * (b * m + source), 2 * (b * cells + cell));
                            fine[g] += weight * input[v];
                            fine[g + 1] += weight * input[v + 1];
                        }
                    }
                }
                Ok(deconvolve(&fft.execute_cpu(&fine).map_err(fft_error)?))
            }
            NufftType::Two => {
                let fine = fft.execute_cpu(&deconvolve(input)).map_err(fft_error)?;
                let mut out = vec![0.0; 2 * batch * m];
                for p in 0..m {
                    let target = sorted.order[p] as usize;
                    for (cell, weight) in footprint(p) {
                        for b in 0..batch {
                            let (o, g) = (2 * (b * m + target), 2 * (b * cells + cell));
                            out[o] += weight * fine[g];
                            out[o + 1] += weight * fine[g + 1];
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::nufft::{nufft_direct, NufftDesc, NufftType};
    use fno_testing::{relative_l2, uniform};

    #[test]
    fn the_cpu_path_meets_the_tolerance() {
        // Batches of 2 and of 12 (planar on the host whatever the device's layout).
        for (kind, modes, eps, batch) in [
            (NufftType::One, vec![30], 1e-6, 2),
            (NufftType::Two, vec![30], 1e-4, 2),
            (NufftType::One, vec![12, 10], 1e-5, 2),
            (NufftType::Two, vec![6, 8, 7], 1e-3, 2),
            (NufftType::One, vec![7, 6], 1e-4, 12),
            (NufftType::Two, vec![9], 1e-4, 12),
        ] {
            let desc = NufftDesc::new(kind, &modes, eps).batch(batch);
            let m = 150;
            let points: Vec<f64> = uniform(m * modes.len(), 5).iter().map(|v| 3.0 * v).collect();
            let count = batch
                * if kind == NufftType::One {
                    m
                } else {
                    modes.iter().product()
                };
            let input = uniform(2 * count, 6);
            let pairs: Vec<(f64, f64)> = input.chunks(2).map(|c| (c[0], c[1])).collect();
            let want: Vec<f64> = nufft_direct(&desc, &points, &pairs)
                .into_iter()
                .flat_map(|(re, im)| [re, im])
                .collect();
            let got = desc.execute_cpu(&points, &input).unwrap();
            let e = relative_l2(&got, &want);
            assert!(e <= 3.0 * eps, "{kind:?} {modes:?} ε {eps}: error {e:e}");
        }
    }
}

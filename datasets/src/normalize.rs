//! neuraloperator's `UnitGaussianNormalizer`: `(x − mean) / (std + eps)` with
//! eps = 1e-7, mean and (unbiased) std fitted on the training set either per
//! channel (over samples and grid points: any resolution) or per pixel (over
//! samples only: the training grid). Stored as neuraloperator stores it: `mean`
//! and `std` with the batch dim kept, `[1, C, 1, …]` or `[1, C, *grid]`.

use crate::dataset::Array;
use crate::DataError;

/// What the statistics are shared over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// One mean and std per channel (neuraloperator's `channel-wise`).
    ChannelWise,
    /// One per channel and grid point (`pixel-wise`).
    PixelWise,
}

#[derive(Clone, Debug, PartialEq)]
pub struct UnitGaussianNormalizer {
    /// `[1, C, 1, …]` (channel-wise) or `[1, C, *grid]` (pixel-wise).
    pub mean: Array,
    pub std: Array,
    pub eps: f32,
}

/// neuraloperator's default.
pub const EPS: f32 = 1e-7;

impl UnitGaussianNormalizer {
    /// Fits mean and unbiased std of `data` (`[N, C, *grid]`), in f64.
    pub fn fit(data: &Array, encoding: Encoding) -> Result<Self, DataError> {
        if data.shape.len() < 3 || data.shape[0] == 0 {
            return Err(DataError::Shape(format!(
                "normalizer: expected non-empty [samples, channels, *grid], got {:?}",
                data.shape
            )));
        }
        let (n, c) = (data.shape[0], data.shape[1]);
        let points: usize = data.shape[2..].iter().product();
        let mut shape = vec![1, c];
        match encoding {
            Encoding::ChannelWise => shape.extend(std::iter::repeat_n(1, data.shape.len() - 2)),
            Encoding::PixelWise => shape.extend(&data.shape[2..]),
        }
        let stats: usize = shape.iter().product();
        // Statistic index of element (sample, channel, point).
        let slot = |ch: usize, p: usize| match encoding {
            Encoding::ChannelWise => ch,
            Encoding::PixelWise => ch * points + p,
        };
        let (mut sum, mut count) = (vec![0.0f64; stats], vec![0usize; stats]);
        let each = |f: &mut dyn FnMut(usize, f64)| {
            for s in 0..n {
                for ch in 0..c {
                    let row = &data.data[(s * c + ch) * points..][..points];
                    for (p, &v) in row.iter().enumerate() {
                        f(slot(ch, p), v as f64);
                    }
                }
            }
        };
        each(&mut |i, v| {
            sum[i] += v;
            count[i] += 1;
        });
        let mean: Vec<f64> = sum.iter().zip(&count).map(|(s, &k)| s / k as f64).collect();
        let mut squares = vec![0.0f64; stats];
        each(&mut |i, v| squares[i] += (v - mean[i]).powi(2));
        // torch.std's Bessel correction; one value has no spread.
        let std: Vec<f32> = squares
            .iter()
            .zip(&count)
            .map(|(q, &k)| if k > 1 { (q / (k - 1) as f64).sqrt() as f32 } else { 0.0 })
            .collect();
        Ok(UnitGaussianNormalizer {
            mean: Array::new(shape.clone(), mean.iter().map(|&m| m as f32).collect())?,
            std: Array::new(shape, std)?,
            eps: EPS,
        })
    }

    /// A normalizer from stored statistics (e.g. a checkpoint's), which must
    /// share a `[1, C, …]` shape.
    pub fn from_stats(mean: Array, std: Array) -> Result<Self, DataError> {
        if mean.shape != std.shape || mean.shape.len() < 3 || mean.shape[0] != 1 {
            return Err(DataError::Shape(format!(
                "normalizer mean {:?} and std {:?} must share a [1, C, ...] shape",
                mean.shape, std.shape
            )));
        }
        Ok(UnitGaussianNormalizer { mean, std, eps: EPS })
    }

    /// The statistics' index for every value of a `[N, C, *grid]` array, or an
    /// error when the array does not fit them.
    fn broadcast(&self, shape: &[usize]) -> Result<impl Fn(usize) -> usize + '_, DataError> {
        let fits = shape.len() == self.mean.shape.len()
            && shape[1] == self.mean.shape[1]
            && self.mean.shape[2..]
                .iter()
                .zip(&shape[2..])
                .all(|(&m, &g)| m == 1 || m == g);
        if !fits {
            return Err(DataError::Shape(format!(
                "normalizer fitted on {:?} cannot apply to data of shape {shape:?}{}",
                self.mean.shape,
                if self.mean.shape[2..].iter().any(|&m| m != 1) {
                    " (pixel-wise statistics hold at the training grid only)"
                } else {
                    ""
                }
            )));
        }
        let points: usize = shape[2..].iter().product();
        let per_channel = self.mean.sample_len() / shape[1];
        let channels = shape[1];
        Ok(move |i: usize| {
            let ch = (i / points) % channels;
            if per_channel == 1 {
                ch
            } else {
                ch * points + i % points
            }
        })
    }

    /// `(x − mean) / (std + eps)` in place.
    pub fn encode(&self, x: &mut Array) -> Result<(), DataError> {
        let at = self.broadcast(&x.shape)?;
        for (i, v) in x.data.iter_mut().enumerate() {
            let k = at(i);
            *v = (*v - self.mean.data[k]) / (self.std.data[k] + self.eps);
        }
        Ok(())
    }

    /// `x · (std + eps) + mean` in place.
    pub fn decode(&self, x: &mut Array) -> Result<(), DataError> {
        let at = self.broadcast(&x.shape)?;
        for (i, v) in x.data.iter_mut().enumerate() {
            let k = at(i);
            *v = *v * (self.std.data[k] + self.eps) + self.mean.data[k];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Array {
        // [3, 2, 4]: channel 1 is channel 0 scaled by 10 and shifted by 5.
        let base = [1.0, 2.0, 3.0, 4.0, 0.0, -1.0, 2.0, 5.0, 3.0, 3.0, 1.0, 0.0];
        let mut v = Vec::new();
        for s in 0..3 {
            let row = &base[4 * s..][..4];
            v.extend(row);
            v.extend(row.iter().map(|x| 10.0 * x + 5.0));
        }
        Array::new(vec![3, 2, 4], v).unwrap()
    }

    #[test]
    fn channel_wise_statistics_match_torch() {
        let n = UnitGaussianNormalizer::fit(&data(), Encoding::ChannelWise).unwrap();
        assert_eq!(n.mean.shape, vec![1, 2, 1]);
        // torch.mean / torch.std (unbiased) of the 12 base values.
        let base = [1.0f64, 2.0, 3.0, 4.0, 0.0, -1.0, 2.0, 5.0, 3.0, 3.0, 1.0, 0.0];
        let m = base.iter().sum::<f64>() / 12.0;
        let s = (base.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 11.0).sqrt();
        assert!((n.mean.data[0] as f64 - m).abs() < 1e-6 && (n.std.data[0] as f64 - s).abs() < 1e-6);
        assert!((n.mean.data[1] as f64 - (10.0 * m + 5.0)).abs() < 1e-5);
        assert!((n.std.data[1] as f64 - 10.0 * s).abs() < 1e-5);
    }

    #[test]
    fn encode_then_decode_is_the_identity_and_gives_unit_statistics() {
        for encoding in [Encoding::ChannelWise, Encoding::PixelWise] {
            let x = data();
            let n = UnitGaussianNormalizer::fit(&x, encoding).unwrap();
            let mut y = x.clone();
            n.encode(&mut y).unwrap();
            let refit = UnitGaussianNormalizer::fit(&y, encoding).unwrap();
            assert!(refit.mean.data.iter().all(|m| m.abs() < 1e-5), "{encoding:?}");
            assert!(refit.std.data.iter().all(|s| (s - 1.0).abs() < 1e-5), "{encoding:?}");
            n.decode(&mut y).unwrap();
            assert!(
                y.data.iter().zip(&x.data).all(|(a, b)| (a - b).abs() < 1e-5),
                "{encoding:?}"
            );
        }
    }

    #[test]
    fn pixel_wise_statistics_refuse_other_grids() {
        let pixel = UnitGaussianNormalizer::fit(&data(), Encoding::PixelWise).unwrap();
        let channel = UnitGaussianNormalizer::fit(&data(), Encoding::ChannelWise).unwrap();
        let mut finer = Array::new(vec![1, 2, 8], vec![0.5; 16]).unwrap();
        let e = pixel.encode(&mut finer).unwrap_err().to_string();
        assert!(e.contains("pixel-wise"), "{e}");
        channel.encode(&mut finer).unwrap();
        assert!(UnitGaussianNormalizer::fit(&Array::new(vec![0, 1, 4], vec![]).unwrap(), Encoding::PixelWise).is_err());
    }
}

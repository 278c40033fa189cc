//! The one in-memory form every loader and generator produces: inputs
//! `[N, Cin, *grid]` and outputs `[N, Cout, *grid]` in f32, plus free-form
//! metadata (the PDE, its parameters, where the data came from).

use std::collections::BTreeMap;
use std::ops::Range;

use crate::DataError;

/// A dense f32 array in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Array {
    /// Checks that `data` holds `prod(shape)` values.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Self, DataError> {
        let want: usize = shape.iter().product();
        if want != data.len() {
            return Err(DataError::Shape(format!(
                "shape {shape:?} needs {want} values, got {}",
                data.len()
            )));
        }
        Ok(Array { shape, data })
    }

    /// Values per sample (the product of every dim but the first).
    pub fn sample_len(&self) -> usize {
        self.shape[1..].iter().product()
    }

    /// The smallest and largest value (NaN when empty).
    pub fn range(&self) -> (f32, f32) {
        self.data
            .iter()
            .fold((f32::NAN, f32::NAN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
    }

    /// Samples `range` with every `stride`-th point of each spatial dim (dims
    /// 2.. of `[N, C, *grid]`), starting at the first, as `x[a:b, :, ::s, ::s]`.
    pub fn select(&self, range: Range<usize>, stride: usize) -> Result<Array, DataError> {
        if self.shape.len() < 3 {
            return Err(DataError::Shape(format!(
                "expected [samples, channels, *grid], got shape {:?}",
                self.shape
            )));
        }
        if stride == 0 {
            return Err(DataError::Shape("subsampling stride must be positive".into()));
        }
        if range.start > range.end || range.end > self.shape[0] {
            return Err(DataError::Shape(format!(
                "samples {range:?} out of the {} there are",
                self.shape[0]
            )));
        }
        let grid = &self.shape[2..];
        let kept: Vec<usize> = grid.iter().map(|&n| n.div_ceil(stride)).collect();
        let mut shape = vec![range.len(), self.shape[1]];
        shape.extend(&kept);
        let kept_points: usize = kept.iter().product();
        let points: usize = grid.iter().product();
        let mut data = Vec::with_capacity(shape.iter().product());
        for row in range.start * self.shape[1]..range.end * self.shape[1] {
            let src = &self.data[row * points..][..points];
            for k in 0..kept_points {
                // Unravel k over the kept grid, then ravel stride·index over the full one.
                let (mut rest, mut at) = (k, 0);
                let mut scale = 1;
                for d in (0..grid.len()).rev() {
                    at += (rest % kept[d]) * stride * scale;
                    rest /= kept[d];
                    scale *= grid[d];
                }
                data.push(src[at]);
            }
        }
        Array::new(shape, data)
    }
}

/// Input/output pairs of one PDE problem.
#[derive(Clone, Debug, PartialEq)]
pub struct PdeDataset {
    /// `[N, Cin, *grid]`.
    pub inputs: Array,
    /// `[N, Cout, *grid]`, on the same grid.
    pub outputs: Array,
    pub metadata: BTreeMap<String, String>,
}

impl PdeDataset {
    /// Checks that inputs and outputs pair up: same sample count and grid.
    pub fn new(inputs: Array, outputs: Array) -> Result<Self, DataError> {
        let ok = inputs.shape.len() >= 3
            && inputs.shape.len() == outputs.shape.len()
            && inputs.shape[0] == outputs.shape[0]
            && inputs.shape[2..] == outputs.shape[2..];
        if !ok {
            return Err(DataError::Shape(format!(
                "inputs {:?} and outputs {:?} must be [N, C, *grid] with the same N and grid",
                inputs.shape, outputs.shape
            )));
        }
        Ok(PdeDataset {
            inputs,
            outputs,
            metadata: BTreeMap::new(),
        })
    }

    pub fn len(&self) -> usize {
        self.inputs.shape[0]
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn grid(&self) -> &[usize] {
        &self.inputs.shape[2..]
    }

    /// Samples `range`, every `stride`-th grid point (see [`Array::select`]).
    pub fn select(&self, range: Range<usize>, stride: usize) -> Result<PdeDataset, DataError> {
        Ok(PdeDataset {
            inputs: self.inputs.select(range.clone(), stride)?,
            outputs: self.outputs.select(range, stride)?,
            metadata: self.metadata.clone(),
        })
    }

    /// Sample `i`: its input `[Cin, *grid]` and output `[Cout, *grid]` values.
    pub fn sample(&self, i: usize) -> (&[f32], &[f32]) {
        let (ni, no) = (self.inputs.sample_len(), self.outputs.sample_len());
        (&self.inputs.data[i * ni..][..ni], &self.outputs.data[i * no..][..no])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_takes_sample_ranges_and_every_stride_th_point() {
        // [3, 2, 3, 5] with value = its flat index.
        let shape = vec![3, 2, 3, 5];
        let a = Array::new(shape.clone(), (0..90).map(|v| v as f32).collect()).unwrap();
        let s = a.select(1..3, 2).unwrap();
        assert_eq!(s.shape, vec![2, 2, 2, 3]);
        let want: Vec<f32> = (1..3)
            .flat_map(|n| (0..2).map(move |c| (n, c)))
            .flat_map(|(n, c)| {
                [0, 2].into_iter().flat_map(move |i| {
                    [0, 2, 4]
                        .into_iter()
                        .map(move |j| (((n * 2 + c) * 3 + i) * 5 + j) as f32)
                })
            })
            .collect();
        assert_eq!(s.data, want);
        assert!(a.select(2..4, 1).is_err());
        assert!(a.select(0..1, 0).is_err());
    }

    #[test]
    fn datasets_pair_inputs_and_outputs_on_one_grid() {
        let x = Array::new(vec![4, 1, 6], vec![0.0; 24]).unwrap();
        let y = Array::new(vec![4, 2, 6], vec![1.0; 48]).unwrap();
        let d = PdeDataset::new(x.clone(), y).unwrap();
        assert_eq!((d.len(), d.grid()), (4, &[6][..]));
        assert_eq!(d.sample(3).1.len(), 12);
        let short = Array::new(vec![3, 1, 6], vec![0.0; 18]).unwrap();
        assert!(PdeDataset::new(x, short).is_err());
    }
}

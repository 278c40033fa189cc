//! Burn's `Dataset` over our datasets (in memory, or read on demand from a
//! safetensors file) and a `Batcher` that stacks samples into `[B, C, points]`
//! tensors, normalised as neuraloperator's data processor does (inputs and
//! outputs encoded; predictions decoded with the output normalizer).

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use crate::dataset::{Array, PdeDataset};
use crate::normalize::UnitGaussianNormalizer;
use crate::safetensors_file::SafetensorsSamples;

/// One sample: input `[Cin, *grid]` and output `[Cout, *grid]` values.
#[derive(Clone, Debug, PartialEq)]
pub struct PdeItem {
    pub input: Vec<f32>,
    pub output: Vec<f32>,
}

impl Dataset<PdeItem> for PdeDataset {
    fn get(&self, index: usize) -> Option<PdeItem> {
        (index < self.len()).then(|| {
            let (input, output) = self.sample(index);
            PdeItem {
                input: input.to_vec(),
                output: output.to_vec(),
            }
        })
    }

    fn len(&self) -> usize {
        PdeDataset::len(self)
    }
}

impl Dataset<PdeItem> for SafetensorsSamples {
    /// `None` past the end; a read error (the file changed or went away under
    /// us) panics, as Burn's `Dataset` has no error channel.
    fn get(&self, index: usize) -> Option<PdeItem> {
        (index < self.len()).then(|| {
            let (input, output) = SafetensorsSamples::get(self, index).unwrap_or_else(|e| panic!("{e}"));
            PdeItem { input, output }
        })
    }

    fn len(&self) -> usize {
        SafetensorsSamples::len(self)
    }
}

/// A batch: `[B, Cin, points]` and `[B, Cout, points]` on one grid.
#[derive(Clone, Debug)]
pub struct PdeBatch<B: Backend> {
    pub inputs: Tensor<B, 3>,
    pub outputs: Tensor<B, 3>,
    pub grid: Vec<usize>,
}

impl<B: Backend> PdeBatch<B> {
    /// `t` (`[B, C, points]`) as `[B, C, *grid]`; `D` is 2 + the grid's dims.
    pub fn unflatten<const D: usize>(&self, t: Tensor<B, 3>) -> Tensor<B, D> {
        let [b, c, _] = t.dims();
        let shape: [usize; D] = [&[b, c][..], &self.grid]
            .concat()
            .try_into()
            .unwrap_or_else(|_| panic!("a {}-dim grid needs D = {}", self.grid.len(), self.grid.len() + 2));
        t.reshape(shape)
    }
}

/// Stacks samples of `[C, *grid]` shapes into batches, encoding them with the
/// normalizers when given.
#[derive(Clone, Debug)]
pub struct PdeBatcher {
    input_channels: usize,
    output_channels: usize,
    grid: Vec<usize>,
    input_normalizer: Option<UnitGaussianNormalizer>,
    output_normalizer: Option<UnitGaussianNormalizer>,
}

impl PdeBatcher {
    /// A batcher for samples shaped like `data`'s.
    pub fn new(data: &PdeDataset) -> Self {
        PdeBatcher {
            input_channels: data.inputs.shape[1],
            output_channels: data.outputs.shape[1],
            grid: data.grid().to_vec(),
            input_normalizer: None,
            output_normalizer: None,
        }
    }

    /// Encodes inputs and outputs with these normalizers (fitted on the
    /// training set, for any of the datasets batched).
    pub fn normalized(mut self, input: Option<UnitGaussianNormalizer>, output: Option<UnitGaussianNormalizer>) -> Self {
        self.input_normalizer = input;
        self.output_normalizer = output;
        self
    }

    fn stack(
        &self,
        values: Vec<f32>,
        count: usize,
        channels: usize,
        normalizer: &Option<UnitGaussianNormalizer>,
    ) -> (Vec<usize>, Vec<f32>) {
        let mut shape = vec![count, channels];
        shape.extend(&self.grid);
        let mut a = Array::new(shape, values).expect("samples of the batcher's shape");
        if let Some(n) = normalizer {
            n.encode(&mut a).unwrap_or_else(|e| panic!("{e}"));
        }
        let points = self.grid.iter().product();
        (vec![count, channels, points], a.data)
    }
}

impl<B: Backend> Batcher<B, PdeItem, PdeBatch<B>> for PdeBatcher {
    fn batch(&self, items: Vec<PdeItem>, device: &B::Device) -> PdeBatch<B> {
        let count = items.len();
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for item in items {
            xs.extend(item.input);
            ys.extend(item.output);
        }
        let tensor = |(shape, data): (Vec<usize>, Vec<f32>)| {
            let shape: [usize; 3] = shape.try_into().expect("three dims");
            Tensor::from_data(TensorData::new(data, shape), device)
        };
        PdeBatch {
            inputs: tensor(self.stack(xs, count, self.input_channels, &self.input_normalizer)),
            outputs: tensor(self.stack(ys, count, self.output_channels, &self.output_normalizer)),
            grid: self.grid.clone(),
        }
    }
}

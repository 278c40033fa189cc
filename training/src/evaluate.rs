//! Evaluation: a model's de-normalised predictions on a data set and their
//! relative L2 and H1 errors per sample.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use fno_datasets::PdeDataset;
use fno_models::Fno;
use fno_ops::{PointwiseBackend, SpectralConvBackend};

use crate::checkpoint::TestMetrics;
use crate::data::PreparedData;
use crate::loss::Loss;
use crate::TrainError;

/// Predictions for every sample of `data`, de-normalised: `[N, Cout, *grid]`.
pub fn predict<B: SpectralConvBackend>(
    model: &Fno<B>,
    data: &PdeDataset,
    prepared: &PreparedData,
    device: &B::Device,
) -> Result<fno_datasets::Array, TrainError> {
    crate::inference::predict(
        model,
        &data.inputs,
        prepared.input_normalizer.as_ref(),
        prepared.output_normalizer.as_ref(),
        EVAL_BATCH,
        device,
        |_, _| {},
    )
}

/// Samples per forward pass in evaluation.
const EVAL_BATCH: usize = 50;

/// The errors per sample of the model's predictions on `data`.
pub fn evaluate<B: SpectralConvBackend, const D: usize>(
    model: &Fno<B>,
    name: &str,
    data: &PdeDataset,
    prepared: &PreparedData,
    device: &B::Device,
) -> Result<TestMetrics, TrainError> {
    let predicted = predict(model, data, prepared, device)?;
    let (l2, h1) = relative_errors::<B, D>(&predicted, &data.outputs, device);
    let l2_normalized = match &prepared.output_normalizer {
        Some(n) => {
            let (mut p, mut t) = (predicted, data.outputs.clone());
            n.encode(&mut p)?;
            n.encode(&mut t)?;
            relative_errors::<B, D>(&p, &t, device).0
        }
        None => l2,
    };
    Ok(TestMetrics {
        name: name.to_string(),
        l2,
        h1,
        l2_normalized,
    })
}

/// Relative L2 and H1 per sample of `predicted` against `truth`.
pub fn relative_errors<B: PointwiseBackend, const D: usize>(
    predicted: &fno_datasets::Array,
    truth: &fno_datasets::Array,
    device: &B::Device,
) -> (f64, f64) {
    let tensor = |a: &fno_datasets::Array| {
        let shape: [usize; D] = a.shape.clone().try_into().expect("a D-dim array");
        Tensor::<B, D>::from_data(TensorData::new(a.data.clone(), shape), device)
    };
    let n = truth.shape[0] as f64;
    let (p, t) = (tensor(predicted), tensor(truth));
    (
        scalar(Loss::L2.compute(p.clone(), t.clone())) / n,
        scalar(Loss::H1.compute(p, t)) / n,
    )
}

/// A one-element tensor's value.
pub(crate) fn scalar<B: Backend>(t: Tensor<B, 1>) -> f64 {
    t.into_data().convert::<f64>().to_vec::<f64>().expect("a scalar")[0]
}

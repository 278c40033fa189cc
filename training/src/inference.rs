//! Predictions in the data's own units. A checkpoint of `fno train` carries
//! the normalisers its model was trained with (in its `training` metadata):
//! inputs are encoded with them before the model and outputs decoded after
//! it, as evaluation does, so `fno infer` returns what `fno eval` scores.

use burn::tensor::backend::Backend;
use fno_datasets::normalize::UnitGaussianNormalizer;
use fno_datasets::Array;
use fno_models::checkpoint::SafeTensorsFile;
use fno_models::{Fno, FnoConfig};
use fno_ops::SpectralConvBackend;

use crate::checkpoint::{NormalizerState, TrainingState};
use crate::TrainError;

/// The metadata key under which `fno train` stores its [`TrainingState`].
pub const TRAINING_KEY: &str = "training";

/// The training state a checkpoint of `fno train` carries; `None` for other
/// checkpoints (neuraloperator exports, models saved directly).
pub fn training_state(checkpoint: &[u8]) -> Result<Option<TrainingState>, TrainError> {
    if fno_models::neuralop_files::is_torch_file(checkpoint) {
        return Ok(None);
    }
    let file = SafeTensorsFile::parse(checkpoint).map_err(|e| TrainError::Checkpoint(e.to_string()))?;
    file.metadata
        .get(TRAINING_KEY)
        .map(|json| {
            serde_json::from_str(json).map_err(|e| TrainError::Checkpoint(format!("{TRAINING_KEY} metadata: {e}")))
        })
        .transpose()
}

/// The input and output normalisers a checkpoint of `fno train` carries
/// (none for other checkpoints).
pub fn checkpoint_normalizers(
    checkpoint: &[u8],
) -> Result<(Option<UnitGaussianNormalizer>, Option<UnitGaussianNormalizer>), TrainError> {
    let state = training_state(checkpoint)?;
    let normalizer = |n: Option<&NormalizerState>| n.map(NormalizerState::normalizer).transpose();
    Ok((
        normalizer(state.as_ref().and_then(|s| s.input_normalizer.as_ref()))?,
        normalizer(state.as_ref().and_then(|s| s.output_normalizer.as_ref()))?,
    ))
}

/// A model with the normalisers of its training data, if any.
pub struct Predictor<B: Backend> {
    pub model: Fno<B>,
    pub input_normalizer: Option<UnitGaussianNormalizer>,
    pub output_normalizer: Option<UnitGaussianNormalizer>,
}

impl<B: SpectralConvBackend> Predictor<B> {
    /// Loads a checkpoint: ours carry their configuration (and, from `fno
    /// train`, their normalisers); neuraloperator exports need `config`.
    pub fn load(checkpoint: &[u8], config: Option<&FnoConfig>, device: &B::Device) -> Result<Self, TrainError> {
        let (input_normalizer, output_normalizer) = checkpoint_normalizers(checkpoint)?;
        Ok(Predictor {
            model: Fno::<B>::load_checkpoint(checkpoint, config, device)?,
            input_normalizer,
            output_normalizer,
        })
    }

    /// `[N, out_channels, *grid]` for `inputs` `[N, in_channels, *grid]` in
    /// the data's units, in batches of `batch_size`; `progress(done, total)`
    /// after each batch.
    pub fn predict(
        &self,
        inputs: &Array,
        batch_size: usize,
        device: &B::Device,
        progress: impl FnMut(usize, usize),
    ) -> Result<Array, TrainError> {
        predict(
            &self.model,
            inputs,
            self.input_normalizer.as_ref(),
            self.output_normalizer.as_ref(),
            batch_size,
            device,
            progress,
        )
    }
}

/// `model` on `inputs` `[N, in_channels, *grid]`: encoded with
/// `input_normalizer`, outputs decoded with `output_normalizer`.
pub fn predict<B: SpectralConvBackend>(
    model: &Fno<B>,
    inputs: &Array,
    input_normalizer: Option<&UnitGaussianNormalizer>,
    output_normalizer: Option<&UnitGaussianNormalizer>,
    batch_size: usize,
    device: &B::Device,
    progress: impl FnMut(usize, usize),
) -> Result<Array, TrainError> {
    let normalizers = (input_normalizer, output_normalizer);
    predict_with(inputs, normalizers, model.config().out_channels, |x, shape| {
        Ok(fno_models::infer(model, x, shape, batch_size, device, progress)?)
    })
}

/// `run(values, shape)`, any engine's model, on `inputs` `[N, in_channels,
/// *grid]`: encoded with the input normaliser first, its `[N, out_channels,
/// *grid]` outputs decoded with the output normaliser after.
pub fn predict_with(
    inputs: &Array,
    (input_normalizer, output_normalizer): (Option<&UnitGaussianNormalizer>, Option<&UnitGaussianNormalizer>),
    out_channels: usize,
    run: impl FnOnce(&[f32], &[usize]) -> Result<Vec<f32>, TrainError>,
) -> Result<Array, TrainError> {
    let mut inputs = inputs.clone();
    if let Some(n) = input_normalizer {
        n.encode(&mut inputs)?;
    }
    let values = run(&inputs.data, &inputs.shape)?;
    let mut shape = inputs.shape.clone();
    shape[1] = out_channels;
    let mut outputs = Array::new(shape, values)?;
    if let Some(n) = output_normalizer {
        n.decode(&mut outputs)?;
    }
    Ok(outputs)
}

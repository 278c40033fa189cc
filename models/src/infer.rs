//! Batched inference on flat data: what `fno infer` runs, usable as a library.

use burn::tensor::{Tensor, TensorData};
use fno_ops::SpectralConvBackend;

pub use fno_core::input::{check_input, in_batches};

use crate::{Fno, ModelError};

/// Runs `model` on `x` (`[N, in_channels, *grid]`, row-major f32) in batches of
/// at most `batch_size` samples; `progress(done, total)` after each batch.
/// Returns `[N, out_channels, *grid]`, row-major.
pub fn infer<B: SpectralConvBackend>(
    model: &Fno<B>,
    x: &[f32],
    shape: &[usize],
    batch_size: usize,
    device: &B::Device,
    progress: impl FnMut(usize, usize),
) -> Result<Vec<f32>, ModelError> {
    check_input(model.config(), x, shape, batch_size)?;
    in_batches(x, shape, batch_size, progress, |chunk, batch_shape| {
        let chunk = TensorData::new(chunk.to_vec(), batch_shape);
        let y = match shape.len() {
            3 => model.forward(Tensor::<B, 3>::from_data(chunk, device))?.into_data(),
            4 => model.forward(Tensor::<B, 4>::from_data(chunk, device))?.into_data(),
            _ => model.forward(Tensor::<B, 5>::from_data(chunk, device))?.into_data(),
        };
        y.convert::<f32>()
            .to_vec::<f32>()
            .map_err(|e| ModelError::Input(format!("reading the output back: {e:?}")))
    })
}

//! Batched inference on flat data: what `fno infer` runs, usable as a library.

use burn::tensor::{Tensor, TensorData};
use fno_ops::SpectralConvBackend;

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
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<f32>, ModelError> {
    let cfg = model.config();
    if shape.len() != cfg.dims() + 2 {
        return Err(ModelError::Input(format!(
            "input of shape {shape:?}: a {}-D FNO takes [samples, {} channels, {} grid dims]",
            cfg.dims(),
            cfg.in_channels,
            cfg.dims()
        )));
    }
    if shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(x.len()) {
        return Err(ModelError::Input(format!("{} values for shape {shape:?}", x.len())));
    }
    if batch_size == 0 {
        return Err(ModelError::Input("the batch size must be positive".into()));
    }
    if shape.contains(&0) {
        return Err(ModelError::Input(format!(
            "input of shape {shape:?}: samples, channels and every grid dim must be non-empty"
        )));
    }
    let samples = shape[0];
    let per_sample: usize = shape[1..].iter().product();
    let mut out = Vec::new();
    let mut done = 0;
    while done < samples {
        let n = batch_size.min(samples - done);
        let mut batch_shape = shape.to_vec();
        batch_shape[0] = n;
        let chunk = TensorData::new(x[done * per_sample..(done + n) * per_sample].to_vec(), batch_shape);
        let y = match shape.len() {
            3 => model.forward(Tensor::<B, 3>::from_data(chunk, device))?.into_data(),
            4 => model.forward(Tensor::<B, 4>::from_data(chunk, device))?.into_data(),
            _ => model.forward(Tensor::<B, 5>::from_data(chunk, device))?.into_data(),
        };
        out.extend(
            y.convert::<f32>()
                .to_vec::<f32>()
                .map_err(|e| ModelError::Input(format!("reading the output back: {e:?}")))?,
        );
        done += n;
        progress(done, samples);
    }
    Ok(out)
}

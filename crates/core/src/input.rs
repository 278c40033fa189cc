//! Inputs to a model as flat data: checked against its configuration, and
//! run in batches by whichever engine runs the model.

use crate::config::FnoConfig;
use crate::error::ModelError;

/// Checks that `x` holds `shape`, a non-empty `[N, in_channels, *grid]` input
/// of a model of `cfg`, and that `batch_size` is positive.
pub fn check_input(cfg: &FnoConfig, x: &[f32], shape: &[usize], batch_size: usize) -> Result<(), ModelError> {
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
    Ok(())
}

/// `run(values, shape)` on consecutive batches of at most `batch_size`
/// samples of `x` (`shape`, checked by [`check_input`]), its outputs
/// concatenated; `progress(done, total)` after each batch. Any engine's
/// model runs through it.
pub fn in_batches<E>(
    x: &[f32],
    shape: &[usize],
    batch_size: usize,
    mut progress: impl FnMut(usize, usize),
    mut run: impl FnMut(&[f32], Vec<usize>) -> Result<Vec<f32>, E>,
) -> Result<Vec<f32>, E> {
    let samples = shape[0];
    let per_sample: usize = shape[1..].iter().product();
    let mut out = Vec::new();
    let mut done = 0;
    while done < samples {
        let n = batch_size.min(samples - done);
        let mut batch_shape = shape.to_vec();
        batch_shape[0] = n;
        out.extend(run(&x[done * per_sample..(done + n) * per_sample], batch_shape)?);
        done += n;
        progress(done, samples);
    }
    Ok(out)
}

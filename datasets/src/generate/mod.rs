//! Offline PDE data generators: Darcy flow, Burgers 1-D and Navier–Stokes 2-D,
//! each deterministic from a seed, at any resolution, with progress reports.
//!
//! Every generator draws sample `i` from [`Rng::new`]`(seed, i)`, so the data do
//! not depend on the thread count or the order samples finish in, and runs its
//! samples on all cores. Spectral work goes through the project's FFT plan API
//! (CPU path), planned once per run.

pub mod burgers;
pub mod darcy;
mod grf;
pub mod navier_stokes;
mod rng;
mod spec;

pub use burgers::BurgersConfig;
pub use darcy::DarcyConfig;
pub use grf::GaussianRandomField;
pub use navier_stokes::NavierStokesConfig;
pub use rng::Rng;
pub use spec::{default_darcy_fine, limits, GenerateSpec, Pde};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use fno_kernels::fft::FftError;

use crate::{Array, DataError, PdeDataset};

fn fft_error(e: FftError) -> DataError {
    DataError::Invalid(format!("generator FFT: {e}"))
}

/// Fails with `DataError::Invalid` unless `value` is finite and positive.
fn require_positive(name: &str, value: f64) -> Result<(), DataError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(DataError::Invalid(format!(
            "{name} must be positive and finite, got {value}"
        )))
    }
}

/// Fails with `DataError::Invalid` when `value` is zero.
fn require_nonzero(name: &str, value: usize) -> Result<(), DataError> {
    if value == 0 {
        Err(DataError::Invalid(format!("{name} must be positive")))
    } else {
        Ok(())
    }
}

/// The number of steps of size `dt` in `duration`, which must be a whole number.
fn whole_steps(duration: f64, dt: f64) -> Result<usize, DataError> {
    require_positive("the time step", dt)?;
    let steps = (duration / dt).round();
    if steps < 1.0 || ((steps * dt - duration) / duration).abs() > 1e-9 {
        return Err(DataError::Invalid(format!(
            "the time step {dt} must divide the time {duration} into a whole number of steps"
        )));
    }
    Ok(steps as usize)
}

/// Advances `state` by `step` (one step of `dt`) to each of `times`
/// (increasing, each a whole number of steps) and takes `snapshot` there.
fn snapshots_at<S>(
    state: &mut S,
    times: &[f64],
    dt: f64,
    step: impl Fn(&mut S) -> Result<(), DataError>,
    snapshot: impl Fn(&S) -> Result<Vec<f64>, DataError>,
) -> Result<Vec<Vec<f64>>, DataError> {
    let mut snapshots = Vec::with_capacity(times.len());
    let mut steps_done = 0;
    for &time in times {
        let steps = whole_steps(time, dt)?;
        if steps < steps_done {
            return Err(DataError::Invalid(format!(
                "snapshot times must increase, got {times:?}"
            )));
        }
        for _ in steps_done..steps {
            step(state)?;
        }
        steps_done = steps;
        snapshots.push(snapshot(state)?);
    }
    Ok(snapshots)
}

/// Every `stride`-th point of a C-order grid `shape` (all axes), from the first.
fn subsample(field: &[f64], shape: &[usize], stride: usize) -> Vec<f32> {
    let kept: Vec<usize> = shape.iter().map(|&n| n.div_ceil(stride)).collect();
    let count: usize = kept.iter().product();
    (0..count)
        .map(|k| {
            let (mut rest, mut at, mut scale) = (k, 0, 1);
            for d in (0..shape.len()).rev() {
                at += (rest % kept[d]) * stride * scale;
                rest /= kept[d];
                scale *= shape[d];
            }
            field[at] as f32
        })
        .collect()
}

/// One sample's input and output values, each in C order over `[C, *grid]`.
type Sample = (Vec<f32>, Vec<f32>);

/// Runs `make(i)` for `i in 0..n` on all cores, reporting `progress(done, n)`
/// on the calling thread as samples finish, and stacks the results into a
/// dataset of the given per-sample shapes (`[C, *grid]`). The first error stops
/// the remaining work and is returned.
fn generate_samples<F>(
    n: usize,
    input_shape: &[usize],
    output_shape: &[usize],
    metadata: BTreeMap<String, String>,
    progress: &mut dyn FnMut(usize, usize),
    make: F,
) -> Result<PdeDataset, DataError>
where
    F: Fn(usize) -> Result<Sample, DataError> + Sync,
{
    let workers = std::thread::available_parallelism()
        .map_or(1, |p| p.get())
        .min(n)
        .max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let mut samples: Vec<Option<Sample>> = vec![None; n];
    let mut first_error = None;
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel();
        for _ in 0..workers {
            let sender = sender.clone();
            let (next, failed, make) = (&next, &failed, &make);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || failed.load(Ordering::Relaxed) {
                    break;
                }
                let result = make(i);
                if result.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                if sender.send((i, result)).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let mut done = 0;
        for (i, result) in receiver {
            match result {
                Ok(sample) => {
                    samples[i] = Some(sample);
                    done += 1;
                    progress(done, n);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for (input, output) in samples.into_iter().flatten() {
        inputs.extend(input);
        outputs.extend(output);
    }
    let stacked = |per_sample: &[usize]| [&[n][..], per_sample].concat();
    let mut dataset = PdeDataset::new(
        Array::new(stacked(input_shape), inputs)?,
        Array::new(stacked(output_shape), outputs)?,
    )?;
    dataset.metadata = metadata;
    Ok(dataset)
}

/// Dataset metadata: the PDE's name under `pde`, then `entries` as given.
fn metadata(pde: &str, entries: &[(&str, String)]) -> BTreeMap<String, String> {
    let mut map = BTreeMap::from([("pde".to_string(), pde.to_string())]);
    map.extend(entries.iter().map(|(k, v)| (k.to_string(), v.clone())));
    map
}

//! The data a run trains and evaluates on: files loaded, generated sets made
//! once and cached, normalisers fitted on the training set.

use std::path::Path;

use fno_datasets::normalize::{Encoding, UnitGaussianNormalizer};
use fno_datasets::{LoadOptions, PdeDataset};

use crate::config::{DataSource, TrainConfig};
use crate::TrainError;

pub struct PreparedData {
    pub train: PdeDataset,
    pub tests: Vec<(String, PdeDataset)>,
    pub input_normalizer: Option<UnitGaussianNormalizer>,
    pub output_normalizer: Option<UnitGaussianNormalizer>,
}

/// Reports what data preparation is doing: `(label, done, total)` while
/// generating, and one-line messages.
pub trait DataProgress {
    fn generating(&mut self, label: &str, done: usize, total: usize);
    fn message(&mut self, text: &str);
}

fn cache_key(source: &DataSource) -> String {
    let spec = serde_json::to_vec(&source.generate).expect("specs serialise");
    let hash = spec.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "{}_{:08x}",
        source.generate.as_ref().expect("a generated set").label(),
        hash as u32
    )
}

/// Loads or generates (through `cache_dir`) one set.
pub fn load_source(
    source: &DataSource,
    cache_dir: &Path,
    progress: &mut dyn DataProgress,
) -> Result<PdeDataset, TrainError> {
    source.validate().map_err(TrainError::Data)?;
    let options = LoadOptions {
        input_key: source.input_key.clone(),
        output_key: source.output_key.clone(),
        samples: source.samples.map(|n| 0..n),
        stride: source.stride.unwrap_or(1),
        ..LoadOptions::default()
    };
    if let Some(file) = &source.file {
        let data = fno_datasets::load(file, &options)?;
        if data.is_empty() {
            return Err(TrainError::Data(format!("{}: no samples", file.display())));
        }
        check_loaded(&source.label(), &data, options.stride, progress)?;
        return Ok(data);
    }
    let spec = source.generate.as_ref().expect("validated: file or generate");
    let cached = cache_dir.join(format!("{}.safetensors", cache_key(source)));
    if cached.exists() {
        match fno_datasets::load(&cached, &options) {
            Ok(data) => return Ok(data),
            Err(e) => progress.message(&format!("regenerating {} ({e})", cached.display())),
        }
    }
    let label = source.label();
    let data = spec.generate(&mut |done, total| progress.generating(&label, done, total))?;
    std::fs::create_dir_all(cache_dir).map_err(|e| TrainError::Io(format!("{}: {e}", cache_dir.display())))?;
    fno_datasets::save(&cached, &data)?;
    progress.message(&format!("cached {label} in {}", cached.display()));
    let data = fno_datasets::load(&cached, &options)?;
    check_loaded(&label, &data, options.stride, progress)?;
    Ok(data)
}

/// A loaded set's checks: values that are not finite (NaN, ±inf: nothing
/// trains on or scores them) are an error; so is a grid the stride left
/// below 2 points a side (nothing to learn), and below 8 a warning.
fn check_loaded(
    label: &str,
    data: &PdeDataset,
    stride: usize,
    progress: &mut dyn DataProgress,
) -> Result<(), TrainError> {
    for (what, array) in [("inputs", &data.inputs), ("outputs", &data.outputs)] {
        if let Some(at) = array.data.iter().position(|v| !v.is_finite()) {
            let sample = at / (array.data.len() / array.shape[0].max(1)).max(1);
            return Err(TrainError::Data(format!(
                "{label}: sample {sample}'s {what} hold {}, which cannot be trained on or scored",
                array.data[at]
            )));
        }
    }
    let grid = data.grid();
    let least = grid.iter().copied().min().unwrap_or(0);
    if least < 2 {
        return Err(TrainError::Data(format!(
            "{label}: stride {stride} leaves a grid of {grid:?}; use a smaller stride"
        )));
    }
    if least < 8 {
        progress.message(&format!(
            "warning: {label}: stride {stride} leaves a grid of {grid:?}, fewer than 8 points a side"
        ));
    }
    Ok(())
}

impl PreparedData {
    pub fn prepare(cfg: &TrainConfig, cache_dir: &Path, progress: &mut dyn DataProgress) -> Result<Self, TrainError> {
        let train = load_source(&cfg.data.train, cache_dir, progress)?;
        let mut tests = Vec::new();
        for source in &cfg.data.tests {
            tests.push((source.label(), load_source(source, cache_dir, progress)?));
        }
        let (cin, cout) = (cfg.model.in_channels, cfg.model.out_channels);
        for (name, data) in std::iter::once(("train", &train)).chain(tests.iter().map(|(n, d)| (n.as_str(), d))) {
            let (i, o) = (data.inputs.shape[1], data.outputs.shape[1]);
            if (i, o) != (cin, cout) || data.grid().len() != cfg.model.dims() {
                return Err(TrainError::Data(format!(
                    "data set {name}: inputs {:?} / outputs {:?} do not fit a {}-D model with {cin} input and {cout} output channels",
                    data.inputs.shape,
                    data.outputs.shape,
                    cfg.model.dims()
                )));
            }
            if data.is_empty() {
                return Err(TrainError::Data(format!("data set {name} is empty")));
            }
        }
        let encoding = if cfg.data.encoding == "pixel-wise" {
            Encoding::PixelWise
        } else {
            Encoding::ChannelWise
        };
        let fit = |yes: bool, a| yes.then(|| UnitGaussianNormalizer::fit(a, encoding)).transpose();
        Ok(PreparedData {
            input_normalizer: fit(cfg.data.encode_input, &train.inputs)?,
            output_normalizer: fit(cfg.data.encode_output, &train.outputs)?,
            train,
            tests,
        })
    }
}

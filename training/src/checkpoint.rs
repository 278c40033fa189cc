//! Training checkpoints. `<name>.state` holds everything a resumed run needs
//! (Burn records of the model and the optimiser, which keep parameter ids so
//! AdamW's moments find their parameters again, plus the JSON state: epoch,
//! schedule, normalisers, history, configuration), checksummed and written
//! atomically; `<name>.safetensors` is the same model for `fno infer` / `fno
//! eval`, with the training state in its metadata.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::optim::Optimizer;
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::AutodiffBackend;
use fno_datasets::normalize::UnitGaussianNormalizer;
use fno_datasets::Array;
use fno_models::Fno;
use fno_ops::SpectralConvBackend;
use serde::{Deserialize, Serialize};

use crate::config::TrainConfig;
use crate::schedule::Scheduler;
use crate::TrainError;

/// The format's tag; version 2 stores the spectral weights as `[Cin, Cout·M·2]`.
const MAGIC: &[u8; 8] = b"FNOSTAT2";
/// Version 1's tag: Burn records with the spectral weights as `[Cin, Cout, M, 2]`.
const MAGIC_V1: &[u8; 8] = b"FNOSTAT1";

/// A normaliser's statistics, serialisable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormalizerState {
    pub shape: Vec<usize>,
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    pub eps: f32,
}

impl NormalizerState {
    pub fn of(n: &UnitGaussianNormalizer) -> Self {
        NormalizerState {
            shape: n.mean.shape.clone(),
            mean: n.mean.data.clone(),
            std: n.std.data.clone(),
            eps: n.eps,
        }
    }

    pub fn normalizer(&self) -> Result<UnitGaussianNormalizer, TrainError> {
        let array = |data: &[f32]| Array::new(self.shape.clone(), data.to_vec());
        let mut n = UnitGaussianNormalizer::from_stats(array(&self.mean)?, array(&self.std)?)?;
        n.eps = self.eps;
        Ok(n)
    }
}

/// One epoch's metrics: a line of `metrics.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochMetrics {
    pub epoch: usize,
    pub lr: f64,
    /// The training loss per sample, on normalised outputs.
    pub train_loss: f64,
    pub seconds: f64,
    #[serde(default)]
    pub tests: Vec<TestMetrics>,
    /// Device memory at the epoch's end, evaluation included (GPU backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryMetrics>,
}

/// Device memory in MiB at the epoch's end (live tensors, what the memory
/// pools hold) and its peaks, sampled before and after the backward passes
/// of the epoch's first two steps and of every step whose loss is read.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryMetrics {
    pub in_use_mib: f64,
    pub reserved_mib: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_use_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved_mib: Option<f64>,
}

/// Errors on one test set, per sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestMetrics {
    pub name: String,
    /// Relative L2 and H1 of the de-normalised prediction against the raw truth
    /// (neuraloperator's Trainer evaluates so).
    pub l2: f64,
    pub h1: f64,
    /// Relative L2 with prediction and truth both in normalised units (what a
    /// loop that leaves the data processor in training mode reports, such as
    /// the shared anchor script).
    pub l2_normalized: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingState {
    /// Epochs finished.
    pub epoch: usize,
    pub scheduler: Scheduler,
    pub best: Option<f64>,
    pub input_normalizer: Option<NormalizerState>,
    pub output_normalizer: Option<NormalizerState>,
    pub history: Vec<EpochMetrics>,
    pub config: TrainConfig,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes `bytes` to `path` through [`fno_datasets::output`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), TrainError> {
    fno_datasets::output::write_bytes(path, bytes).map_err(|e| TrainError::Io(format!("{}: {e}", path.display())))
}

pub fn state_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.state"))
}

pub fn model_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.safetensors"))
}

/// Saves `<dir>/<name>.state` and `<dir>/<name>.safetensors`.
pub fn save<B, O>(
    dir: &Path,
    name: &str,
    model: &Fno<B>,
    optimizer: &O,
    state: &TrainingState,
) -> Result<(), TrainError>
where
    B: AutodiffBackend + SpectralConvBackend,
    O: Optimizer<Fno<B>, B>,
{
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    let record_error = |e: burn::record::RecorderError| TrainError::Io(format!("recording the state: {e}"));
    let model_bytes = Recorder::<B>::record(&recorder, model.clone().into_record(), ()).map_err(record_error)?;
    let optim_bytes = Recorder::<B>::record(&recorder, optimizer.to_record(), ()).map_err(record_error)?;
    let json = serde_json::to_vec(state).expect("states serialise");
    let mut bytes = MAGIC.to_vec();
    for blob in [&json, &model_bytes, &optim_bytes] {
        bytes.extend((blob.len() as u64).to_le_bytes());
        bytes.extend(fnv1a(blob).to_le_bytes());
        bytes.extend(blob.iter());
    }
    write_atomic(&state_path(dir, name), &bytes)?;
    let mut file = fno_models::checkpoint::SafeTensorsFile::parse(&model.save_safetensors())
        .map_err(|e| TrainError::Io(e.to_string()))?;
    let mut summary = state.clone();
    summary.history.clear();
    file.metadata.insert(
        "training".into(),
        serde_json::to_string(&summary).expect("states serialise"),
    );
    write_atomic(&model_path(dir, name), &file.to_bytes())
}

/// Reads a `.state` file: the JSON state and the two Burn records' bytes,
/// each checked against its checksum (Burn's decoder panics on bad bytes).
pub fn read_state(path: &Path) -> Result<(TrainingState, Vec<u8>, Vec<u8>), TrainError> {
    let bad = |reason: &str| TrainError::Checkpoint(format!("{}: {reason}", path.display()));
    let bytes = std::fs::read(path).map_err(|e| TrainError::Io(format!("{}: {e}", path.display())))?;
    if bytes.get(..8) == Some(&MAGIC_V1[..]) {
        return Err(bad(
            "a training state of an earlier fno, whose spectral weights had another shape: it cannot be \
             resumed (its .safetensors model still loads)",
        ));
    }
    if bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(bad("not an fno training state"));
    }
    let mut at = 8;
    let mut blobs = Vec::new();
    for _ in 0..3 {
        let word = |at: usize| {
            bytes
                .get(at..at + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let (len, sum) = word(at).zip(word(at + 8)).ok_or_else(|| bad("truncated"))?;
        let blob = bytes
            .get(at + 16..(at + 16).saturating_add(len as usize))
            .ok_or_else(|| bad("truncated"))?;
        if fnv1a(blob) != sum {
            return Err(bad("corrupt (checksum mismatch)"));
        }
        blobs.push(blob.to_vec());
        at += 16 + len as usize;
    }
    let optim = blobs.pop().expect("three blobs");
    let model = blobs.pop().expect("three blobs");
    let state = serde_json::from_slice(&blobs[0]).map_err(|e| bad(&format!("state: {e}")))?;
    Ok((state, model, optim))
}

/// Restores the model and optimiser records saved by [`save`].
pub fn restore<B, O>(
    model: Fno<B>,
    optimizer: O,
    model_bytes: Vec<u8>,
    optim_bytes: Vec<u8>,
    device: &B::Device,
) -> Result<(Fno<B>, O), TrainError>
where
    B: AutodiffBackend + SpectralConvBackend,
    O: Optimizer<Fno<B>, B>,
{
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    let record_error = |e: burn::record::RecorderError| TrainError::Checkpoint(format!("loading the state: {e}"));
    let model_record = Recorder::<B>::load(&recorder, model_bytes, device).map_err(record_error)?;
    let optim_record = Recorder::<B>::load(&recorder, optim_bytes, device).map_err(record_error)?;
    Ok((model.load_record(model_record), optimizer.load_record(optim_record)))
}

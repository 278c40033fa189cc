//! The fuzz targets: one function per entry point that takes bytes from a
//! user (a data file of each format, a model configuration, a training
//! configuration, a checkpoint, an inference input). A target returns `Ok` or
//! a clean `Err`; anything else (a panic, an abort, a hang, an allocation
//! beyond the limit) is a failure. A few properties are asserted on what
//! loads, so that breaking them is a failure too.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use fno_datasets::LoadOptions;
use fno_models::{Fno, FnoConfig};
use fno_training::TrainConfig;

use crate::mutate::Format;
use crate::seeds;

type Run = fn(&Path, &[u8]) -> Result<(), String>;

pub struct Target {
    pub name: &'static str,
    /// Extension of the file the input is written to (and saved under).
    pub ext: &'static str,
    pub format: Format,
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub run: Run,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

macro_rules! file_target {
    ($name:literal, $ext:literal, $format:expr, $seeds:path, $run:path) => {
        Target {
            name: $name,
            ext: $ext,
            format: $format,
            seeds: $seeds,
            run: |dir, bytes| $run(&write_case(dir, $ext, bytes)?, bytes),
        }
    };
}

static TARGETS: &[Target] = &[
    file_target!("read_tensors.npy", "npy", Format::Npy, seeds::npy_seeds, read_tensors),
    file_target!("read_tensors.npz", "npz", Format::Zip, seeds::npz_seeds, read_tensors),
    file_target!(
        "read_tensors.safetensors",
        "safetensors",
        Format::Safetensors,
        seeds::safetensors_seeds,
        read_tensors
    ),
    file_target!("read_tensors.pt", "pt", Format::Zip, seeds::pt_seeds, read_tensors),
    file_target!(
        "read_tensors.mat",
        "mat",
        Format::Binary,
        seeds::mat_seeds,
        read_tensors
    ),
    file_target!("read_tensors.h5", "h5", Format::Binary, seeds::h5_seeds, read_tensors),
    file_target!("load.npz", "npz", Format::Zip, seeds::npz_seeds, load),
    file_target!(
        "load.safetensors",
        "safetensors",
        Format::Safetensors,
        seeds::safetensors_seeds,
        load
    ),
    file_target!("load.pt", "pt", Format::Zip, seeds::pt_seeds, load),
    file_target!("load.mat", "mat", Format::Binary, seeds::mat_seeds, load),
    file_target!("load.h5", "h5", Format::Binary, seeds::h5_seeds, load),
    file_target!(
        "samples.safetensors",
        "safetensors",
        Format::Safetensors,
        seeds::safetensors_seeds,
        samples
    ),
    Target {
        name: "config.json",
        ext: "json",
        format: Format::Text,
        seeds: seeds::config_seeds,
        run: config_json,
    },
    file_target!("train.toml", "toml", Format::Text, seeds::toml_seeds, train_toml),
    Target {
        name: "checkpoint",
        ext: "safetensors",
        format: Format::Safetensors,
        seeds: seeds::checkpoint_seeds,
        run: checkpoint,
    },
    Target {
        name: "checkpoint.pt",
        ext: "pt",
        format: Format::Zip,
        seeds: seeds::torch_checkpoint_seeds,
        run: torch_checkpoint,
    },
    Target {
        name: "infer",
        ext: "bin",
        format: Format::Binary,
        seeds: seeds::infer_seeds,
        run: infer,
    },
];

/// Every target this build can run (the `.h5` ones need the HDF5 feature).
pub fn all() -> Vec<&'static Target> {
    TARGETS
        .iter()
        .filter(|t| fno_datasets::HDF5 || !t.name.ends_with(".h5"))
        .collect()
}

pub fn by_name(name: &str) -> Option<&'static Target> {
    all().into_iter().find(|t| t.name == name)
}

/// Index of a target in the static table (for the crash report).
pub fn index_of(target: &Target) -> usize {
    TARGETS
        .iter()
        .position(|t| std::ptr::eq(t, target))
        .unwrap_or(usize::MAX)
}

pub fn name_of(index: usize) -> &'static str {
    TARGETS.get(index).map_or("?", |t| t.name)
}

pub fn ext_of(index: usize) -> &'static str {
    TARGETS.get(index).map_or("?", |t| t.ext)
}

fn write_case(dir: &Path, ext: &str, bytes: &[u8]) -> Result<std::path::PathBuf, String> {
    let path = dir.join(format!("case.{ext}"));
    std::fs::write(&path, bytes).map_err(|e| format!("harness: writing {}: {e}", path.display()))?;
    Ok(path)
}

/// FNV-1a: options and model choices derived from the input itself, so that
/// an input alone reproduces its case.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn read_tensors(path: &Path, _: &[u8]) -> Result<(), String> {
    fno_datasets::read_tensors(path).map(drop).map_err(|e| e.to_string())
}

/// Load options drawn from the input's hash: defaults, a sample range
/// (sometimes empty, reversed or past the end) with a stride, a forced channel
/// layout, swapped keys, time steps.
pub fn load_options(bytes: &[u8]) -> LoadOptions {
    let h = fnv(bytes);
    let field = |shift: u32, n: u64| ((h >> shift) % n) as usize;
    let mut o = LoadOptions::default();
    match h % 5 {
        0 => {}
        1 => {
            o.samples = Some(field(8, 4)..field(12, 6));
            o.stride = 1 + field(16, 3);
        }
        2 => o.channel_dim = Some(h >> 20 & 1 == 1),
        3 => {
            o.input_key = Some("y".into());
            o.output_key = Some("x".into());
        }
        _ => {
            o.time = Some((field(24, 3), field(28, 4)));
            o.stride = 1 + field(32, 5);
        }
    }
    o
}

fn load(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let data = fno_datasets::load(path, &load_options(bytes)).map_err(|e| e.to_string())?;
    if !data.is_empty() {
        let _ = data.sample(0);
        let _ = data.sample(data.len() - 1);
    }
    Ok(())
}

fn samples(path: &Path, _: &[u8]) -> Result<(), String> {
    let s = fno_datasets::safetensors_file::SafetensorsSamples::open(path).map_err(|e| e.to_string())?;
    let _ = s.sample_shapes();
    if !s.is_empty() {
        s.get(0).map_err(|e| e.to_string())?;
        s.get(s.len() - 1).map_err(|e| e.to_string())?;
    }
    assert!(
        s.get(s.len()).is_err(),
        "SafetensorsSamples::get past the end succeeded"
    );
    Ok(())
}

fn train_toml(path: &Path, _: &[u8]) -> Result<(), String> {
    TrainConfig::from_file(path).map(drop).map_err(|e| e.to_string())
}

type Model = Fno<NdArray>;

/// A forward pass on a small input (7 points per dim, batch 1), when the
/// model's input is small enough to make one cheaply.
fn forward_small(model: &Model) -> Result<(), String> {
    let cfg = model.config();
    if cfg.in_channels > 64 || cfg.parameter_count().map_or(true, |n| n > 1_000_000) {
        return Ok(());
    }
    let dev = Default::default();
    let n = cfg.in_channels * 7usize.pow(cfg.dims() as u32);
    let values: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 0.1).collect();
    let shape = [&[1, cfg.in_channels][..], &vec![7; cfg.dims()]].concat();
    let data = TensorData::new(values, shape);
    let out = match cfg.dims() {
        1 => model
            .forward(Tensor::<NdArray, 3>::from_data(data, &dev))
            .map(|t| t.dims().to_vec()),
        2 => model
            .forward(Tensor::<NdArray, 4>::from_data(data, &dev))
            .map(|t| t.dims().to_vec()),
        3 => model
            .forward(Tensor::<NdArray, 5>::from_data(data, &dev))
            .map(|t| t.dims().to_vec()),
        _ => return Ok(()),
    };
    let dims = out.map_err(|e| e.to_string())?;
    let expected = [&[1, cfg.out_channels][..], &vec![7; cfg.dims()]].concat();
    assert_eq!(dims, expected, "the forward pass's output shape");
    Ok(())
}

fn config_json(_: &Path, bytes: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(bytes);
    let cfg = FnoConfig::from_json(&text).map_err(|e| e.to_string())?;
    // Property: what validates survives the trip through a checkpoint's metadata.
    let again = FnoConfig::from_json(&cfg.to_json())
        .unwrap_or_else(|e| panic!("a valid configuration does not read back from its JSON: {e}"));
    assert!(
        again.to_json() == cfg.to_json(),
        "the configuration changed through JSON: {} vs {}",
        cfg.to_json(),
        again.to_json()
    );
    if cfg.parameter_count().is_ok_and(|n| n <= 1_000_000) && cfg.in_channels <= 64 {
        let model = Model::new(&cfg, &Default::default()).map_err(|e| e.to_string())?;
        forward_small(&model)?;
    }
    Ok(())
}

fn checkpoint(_: &Path, bytes: &[u8]) -> Result<(), String> {
    let dev = Default::default();
    // With an explicit configuration (neuraloperator's exports come with a config.json).
    let cfg = seeds::small_config(1 + (fnv(bytes) % 3) as usize);
    if let Ok(model) = Model::load_checkpoint(bytes, Some(&cfg), &dev) {
        forward_small(&model)?;
    }
    // With the configuration in the metadata (our checkpoints).
    let model = Model::load_checkpoint(bytes, None, &dev).map_err(|e| e.to_string())?;
    forward_small(&model)?;
    // Property: a loaded model saves into a checkpoint that loads.
    let saved = model.save_safetensors();
    if let Err(e) = Model::load_checkpoint(&saved, None, &dev) {
        panic!("a loaded checkpoint, saved again, does not load: {e}");
    }
    Ok(())
}

/// neuraloperator's `torch.save` files: a state dict loads with the
/// configuration it carries (or fails cleanly), and one that loads, written
/// back in neuraloperator's format, loads again; a metadata pickle reads or
/// fails cleanly.
fn torch_checkpoint(_: &Path, bytes: &[u8]) -> Result<(), String> {
    let _ = fno_models::neuralop_files::read_metadata(bytes);
    let dev = Default::default();
    let model = Model::load_checkpoint(bytes, None, &dev).map_err(|e| e.to_string())?;
    forward_small(&model)?;
    let written = fno_models::neuralop_files::write_checkpoint(&model.state_dict(), model.config(), "model");
    let (state_dict, _) = written.unwrap_or_else(|e| panic!("a loaded model does not write: {e}"));
    if let Err(e) = Model::load_checkpoint(&state_dict, None, &dev) {
        panic!("a loaded state dict, written again, does not load: {e}");
    }
    Ok(())
}

thread_local! {
    static MODELS: RefCell<BTreeMap<usize, Model>> = const { RefCell::new(BTreeMap::new()) };
}

/// Inference input (see [`seeds::infer_input`]): model dims (1 to 3), shape
/// rank, the shape as u32s, the batch size, then f32 values.
fn infer(_: &Path, bytes: &[u8]) -> Result<(), String> {
    let short = || "harness: input too short for its header".to_string();
    let dims = *bytes.first().ok_or_else(short)? as usize;
    if !(1..=3).contains(&dims) {
        return Err("harness: model dims must be 1 to 3".into());
    }
    let rank = *bytes.get(1).ok_or_else(short)? as usize;
    let u32_at = |i: usize| -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            bytes.get(i..i + 4).ok_or_else(short)?.try_into().unwrap(),
        ))
    };
    let shape: Vec<usize> = (0..rank)
        .map(|i| u32_at(2 + 4 * i).map(|d| d as usize))
        .collect::<Result<_, _>>()?;
    let batch = u32_at(2 + 4 * rank)? as usize;
    let values: Vec<f32> = bytes[6 + 4 * rank..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let dev = Default::default();
    MODELS.with(|models| {
        let mut models = models.borrow_mut();
        let model = models
            .entry(dims)
            .or_insert_with(|| Model::new(&seeds::small_config(dims), &dev).expect("a valid configuration"));
        let out = fno_models::infer(model, &values, &shape, batch, &dev, |_, _| {}).map_err(|e| e.to_string())?;
        let cfg = model.config();
        let expected = shape[0] * cfg.out_channels * shape[2..].iter().product::<usize>();
        assert_eq!(out.len(), expected, "infer's output length for shape {shape:?}");
        Ok(())
    })
}

//! Checkpoints under neuraloperator's state_dict key names, whatever engine
//! loads them: which tensors an FNO of a configuration holds (names and
//! shapes), and a file's tensors checked against them ([`checked_tensors`]):
//! safetensors (neuraloperator exports, complex weights as native C64 or as
//! F32 `[..., 2]`; our own files, the configuration as JSON in the header's
//! metadata) or neuraloperator's own `torch.save` state dicts
//! ([`crate::neuralop_files`]). Missing, unexpected and mis-shaped keys are
//! all reported together, and nothing is loaded unless all match.

use std::collections::HashMap;

use crate::config::{FnoConfig, NormKind, SkipKind};
use crate::error::ModelError;
use crate::forward::{self, Mlp, Skip};
use crate::neuralop_files;
use crate::safetensors_file::{SafeTensorsFile, StoredTensor};

fn bad(m: impl Into<String>) -> ModelError {
    ModelError::Checkpoint(m.into())
}

fn spectral_weight_prefix(layer: usize) -> String {
    format!("fno_blocks.convs.{layer}.weight")
}

/// A key a checkpoint must hold, with its shape (complex values with a trailing 2).
type ExpectedKey = (String, Vec<usize>);

/// The parameters of an FNO under neuraloperator's names, with their shapes.
pub fn expected_keys(cfg: &FnoConfig) -> Result<Vec<ExpectedKey>, ModelError> {
    let h = cfg.hidden_channels;
    let ones = vec![1usize; cfg.dims()];
    let mut keys: Vec<ExpectedKey> = Vec::new();
    let spectral = cfg.weight_form()?;
    let mlp = |mlp: &Mlp, keys: &mut Vec<ExpectedKey>| {
        for (i, w) in mlp.channels.windows(2).enumerate() {
            keys.push((format!("{}.fcs.{i}.weight", mlp.name), vec![w[1], w[0], 1]));
            keys.push((format!("{}.fcs.{i}.bias", mlp.name), vec![w[1]]));
        }
    };
    let skip = |skip: &Option<Skip>, keys: &mut Vec<ExpectedKey>| match skip.as_ref().map(|s| (&s.name, s.kind)) {
        Some((name, SkipKind::Linear)) => keys.push((format!("{name}.conv.weight"), vec![h, h, 1])),
        Some((name, SkipKind::SoftGating)) => keys.push((format!("{name}.weight"), [&[1, h][..], &ones].concat())),
        Some((_, SkipKind::Identity)) | None => {}
    };
    mlp(&forward::lifting(cfg), &mut keys);
    for i in 0..cfg.n_layers {
        let block = forward::block(cfg, i);
        keys.extend(spectral.keys(&spectral_weight_prefix(i)));
        keys.push((format!("fno_blocks.convs.{i}.bias"), [&[h][..], &ones].concat()));
        skip(&block.fno_skip, &mut keys);
        if let Some(channel_mlp) = &block.channel_mlp {
            mlp(channel_mlp, &mut keys);
            skip(&block.channel_mlp_skip, &mut keys);
        }
    }
    if cfg.norm_kind() == Some(NormKind::Group) {
        for k in 0..2 * cfg.n_layers {
            keys.push((format!("fno_blocks.norm.{k}.weight"), vec![h]));
            keys.push((format!("fno_blocks.norm.{k}.bias"), vec![h]));
        }
    }
    mlp(&forward::projection(cfg), &mut keys);
    Ok(keys)
}

/// Checks every key of `file` against `cfg`; returns the tensors by name.
fn matched_tensors(cfg: &FnoConfig, file: &SafeTensorsFile) -> Result<HashMap<String, StoredTensor>, ModelError> {
    let expected = expected_keys(cfg)?;
    let mut problems = Vec::new();
    let mut found = HashMap::new();
    for (name, shape) in &expected {
        match file.tensors.get(name) {
            None => problems.push(format!("missing {name} {shape:?}")),
            Some(t) if &t.shape != shape => problems.push(format!(
                "{name} has shape {:?}, the configuration needs {shape:?}",
                t.shape
            )),
            Some(t) => {
                found.insert(name.clone(), t.clone());
            }
        }
    }
    let unexpected: Vec<&String> = file
        .tensors
        .keys()
        .filter(|k| !expected.iter().any(|(name, _)| name == *k))
        .collect();
    for name in unexpected {
        problems.push(format!("unexpected {name}"));
    }
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(bad(format!(
            "the checkpoint does not match the configuration: {}",
            problems.join("; ")
        )))
    }
}

/// A checkpoint's (safetensors, or neuraloperator's `torch.save` state dict)
/// configuration (from `config` or, when absent, from the file: our
/// checkpoints' metadata, a state dict's `_metadata`) and its tensors by
/// neuraloperator's names, every name and shape checked against that
/// configuration: what any engine builds an FNO from.
pub fn checked_tensors(
    bytes: &[u8],
    config: Option<&FnoConfig>,
) -> Result<(FnoConfig, HashMap<String, StoredTensor>), ModelError> {
    let (file, own) = match neuralop_files::is_torch_file(bytes) {
        true => {
            let state_dict = neuralop_files::read_state_dict(bytes)?;
            (state_dict.file, state_dict.config)
        }
        false => (SafeTensorsFile::parse(bytes)?, None),
    };
    let config = match (config, own) {
        (Some(c), _) => c.clone(),
        (None, Some(own)) => own?,
        (None, None) => {
            let json = file.metadata.get("config").ok_or_else(|| {
                bad(
                    "the checkpoint carries no configuration; pass the config.json (or neuraloperator's \
                     NAME_metadata.pkl) it was trained with",
                )
            })?;
            FnoConfig::from_json(json)?
        }
    };
    config.validate()?;
    let tensors = matched_tensors(&config, &file)?;
    Ok((config, tensors))
}

/// The name of layer `layer`'s stored spectral tensor `name` (one of
/// [`crate::WeightForm::tensors`]' names).
pub fn spectral_tensor_name(layer: usize, name: &str) -> String {
    format!("{}.{name}", spectral_weight_prefix(layer))
}

//! Checkpoints under neuraloperator's state_dict key names.
//!
//! Safetensors serves both directions: [`Fno::load_checkpoint`] reads
//! neuraloperator exports (complex weights as native C64 or as F32 `[..., 2]`),
//! neuraloperator's own `torch.save` state dicts ([`crate::neuralop_files`])
//! and our own files, which [`Fno::save_safetensors`] writes with the same
//! names and shapes, native C64 spectral weights (dense or tltorch's factors,
//! so `load_state_dict(safetensors.torch.load_file(…))` takes them) and the
//! configuration as JSON in the header's metadata. Every key is checked:
//! missing, unexpected and mis-shaped keys are all reported together, and
//! nothing is loaded unless all match.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use fno_ops::SpectralConvBackend;
use safetensors::{Dtype, SafeTensorError, SafeTensors, View};

use crate::config::{FnoConfig, SkipKind};
use crate::factorized;
use crate::fno::{ChannelMlp, Fno, Pointwise, Skip};
use crate::ModelError;

/// A tensor read from a safetensors file, widened to f32; complex values are
/// interleaved with a trailing dim of 2.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Tensors and header metadata of a safetensors file, read and written
/// through the `safetensors` crate.
#[derive(Clone, Debug, Default)]
pub struct SafeTensorsFile {
    pub tensors: BTreeMap<String, StoredTensor>,
    pub metadata: HashMap<String, String>,
    /// The tensors stored (or to store) as native C64: their values are
    /// (re, im) pairs, the trailing 2 of their shape not written.
    pub complex: BTreeSet<String>,
}

fn bad(m: impl Into<String>) -> ModelError {
    ModelError::Checkpoint(m.into())
}

/// The safetensors crate's error, said of a checkpoint (`bytes`, when read).
fn unreadable(e: SafeTensorError, bytes: &[u8]) -> ModelError {
    use SafeTensorError::*;
    let declared = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    bad(match (&e, declared) {
        (HeaderTooSmall, _) => "not a safetensors file (shorter than its header length)".to_string(),
        (HeaderTooLarge | InvalidHeaderLength, Some(n)) if n > bytes.len() as u64 - 8 => {
            format!("header of {n} bytes runs past the end of the file (truncated or not safetensors)")
        }
        (MetadataIncompleteBuffer, _) => {
            "the data do not fill the file as its header declares (truncated or corrupt)".to_string()
        }
        _ => format!("not a readable safetensors file: {e}"),
    })
}

/// A tensor to write, F32 or (`complex`) C64 pairs: its values' bytes
/// borrowed on little-endian machines.
struct F32View<'a> {
    tensor: &'a StoredTensor,
    complex: bool,
}

impl View for F32View<'_> {
    fn dtype(&self) -> Dtype {
        if self.complex {
            Dtype::C64
        } else {
            Dtype::F32
        }
    }

    fn shape(&self) -> &[usize] {
        let shape = &self.tensor.shape;
        if self.complex {
            &shape[..shape.len() - 1]
        } else {
            shape
        }
    }

    fn data(&self) -> Cow<'_, [u8]> {
        let data = &self.tensor.data;
        if cfg!(target_endian = "little") {
            Cow::Borrowed(bytemuck::cast_slice(data))
        } else {
            Cow::Owned(data.iter().flat_map(|v| v.to_le_bytes()).collect())
        }
    }

    fn data_len(&self) -> usize {
        4 * self.tensor.data.len()
    }
}

impl SafeTensorsFile {
    /// Parses a safetensors file (header and offsets validated by the
    /// `safetensors` crate); every floating-point dtype is widened to f32, C64
    /// kept as interleaved pairs.
    pub fn parse(bytes: &[u8]) -> Result<Self, ModelError> {
        let (header_len, header) = SafeTensors::read_metadata(bytes).map_err(|e| unreadable(e, bytes))?;
        // Validated: every tensor's offsets lie in the data, which end the file.
        let data = &bytes[8 + header_len..];
        let mut file = SafeTensorsFile {
            metadata: header.metadata().clone().unwrap_or_default(),
            ..Default::default()
        };
        for (name, info) in header.tensors() {
            let (start, end) = info.data_offsets;
            let (values, complex) = decode(info.dtype, &data[start..end]).map_err(|m| bad(format!("{name}: {m}")))?;
            let mut shape = info.shape.clone();
            if complex {
                shape.push(2);
                file.complex.insert(name.clone());
            }
            file.tensors.insert(name, StoredTensor { shape, data: values });
        }
        Ok(file)
    }

    /// Serialises the tensors as F32, or C64 where [`Self::complex`] names
    /// them (sorted by name), with the metadata; or names a tensor whose values
    /// do not fill its shape.
    pub fn try_to_bytes(&self) -> Result<Vec<u8>, ModelError> {
        for (name, t) in &self.tensors {
            let count = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if count != Some(t.data.len()) {
                return Err(bad(format!("{name}: {} values for shape {:?}", t.data.len(), t.shape)));
            }
            if self.complex.contains(name) && t.shape.last() != Some(&2) {
                return Err(bad(format!(
                    "{name}: shape {:?} has no trailing (re, im) pair",
                    t.shape
                )));
            }
        }
        let views = self.tensors.iter().map(|(name, t)| {
            let complex = self.complex.contains(name);
            (name, F32View { tensor: t, complex })
        });
        safetensors::serialize(views, Some(self.metadata.clone()))
            .map_err(|e| bad(format!("cannot write the checkpoint: {e}")))
    }

    /// [`Self::try_to_bytes`] of tensors known to fill their shapes.
    ///
    /// # Panics
    /// If a tensor's values do not fill its shape.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.try_to_bytes().unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Little-endian values of `dtype` as f32; complex dtypes interleaved (and flagged).
/// The crate has checked that `raw` holds exactly the shape's values.
fn decode(dtype: Dtype, raw: &[u8]) -> Result<(Vec<f32>, bool), String> {
    let f32s = || {
        raw.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    };
    Ok(match dtype {
        Dtype::F32 => (f32s(), false),
        Dtype::C64 => (f32s(), true),
        Dtype::F64 => (
            raw.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()) as f32)
                .collect(),
            false,
        ),
        Dtype::F16 => (
            raw.chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            false,
        ),
        Dtype::BF16 => (
            raw.chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            false,
        ),
        other => return Err(format!("dtype {other} is not a floating-point type")),
    })
}

fn spectral_weight_prefix(layer: usize) -> String {
    format!("fno_blocks.convs.{layer}.weight")
}

/// A key a checkpoint must hold, with its shape (complex values with a trailing 2).
type ExpectedKey = (String, Vec<usize>);

/// The parameters of an FNO under neuraloperator's names, with their shapes.
fn expected_keys(cfg: &FnoConfig) -> Result<Vec<ExpectedKey>, ModelError> {
    let h = cfg.hidden_channels;
    let ones = vec![1usize; cfg.dims()];
    let mut keys: Vec<ExpectedKey> = Vec::new();
    let spectral = cfg.weight_form()?;
    let mlp = |prefix: &str, channels: &[usize], keys: &mut Vec<ExpectedKey>| {
        for (i, w) in channels.windows(2).enumerate() {
            keys.push((format!("{prefix}.fcs.{i}.weight"), vec![w[1], w[0], 1]));
            keys.push((format!("{prefix}.fcs.{i}.bias"), vec![w[1]]));
        }
    };
    let lifting = match cfg.lifting_channels() {
        0 => vec![cfg.lifting_in_channels(), h],
        l => vec![cfg.lifting_in_channels(), l, h],
    };
    mlp("lifting", &lifting, &mut keys);
    let skip = |prefix: String, kind: Option<SkipKind>, keys: &mut Vec<ExpectedKey>| match kind {
        Some(SkipKind::Linear) => keys.push((format!("{prefix}.conv.weight"), vec![h, h, 1])),
        Some(SkipKind::SoftGating) => keys.push((format!("{prefix}.weight"), [&[1, h][..], &ones].concat())),
        Some(SkipKind::Identity) | None => {}
    };
    for i in 0..cfg.n_layers {
        keys.extend(factorized::keys(&spectral, &spectral_weight_prefix(i)));
        keys.push((format!("fno_blocks.convs.{i}.bias"), [&[h][..], &ones].concat()));
        skip(format!("fno_blocks.fno_skips.{i}"), cfg.fno_skip_kind(), &mut keys);
        if cfg.use_channel_mlp {
            mlp(
                &format!("fno_blocks.channel_mlp.{i}"),
                &[h, cfg.channel_mlp_channels(), h],
                &mut keys,
            );
            skip(
                format!("fno_blocks.channel_mlp_skips.{i}"),
                cfg.channel_mlp_skip_kind(),
                &mut keys,
            );
        }
    }
    if cfg.norm_kind() == Some(crate::config::NormKind::Group) {
        for k in 0..2 * cfg.n_layers {
            keys.push((format!("fno_blocks.norm.{k}.weight"), vec![h]));
            keys.push((format!("fno_blocks.norm.{k}.bias"), vec![h]));
        }
    }
    mlp(
        "projection",
        &[h, cfg.projection_channels(), cfg.out_channels],
        &mut keys,
    );
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
    let (file, own) = match crate::neuralop_files::is_torch_file(bytes) {
        true => {
            let state_dict = crate::neuralop_files::read_state_dict(bytes)?;
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
/// [`fno_ops::WeightForm::tensors`]' names).
pub fn spectral_tensor_name(layer: usize, name: &str) -> String {
    format!("{}.{name}", spectral_weight_prefix(layer))
}

impl<B: SpectralConvBackend> Fno<B> {
    /// Loads a checkpoint: safetensors, or neuraloperator's `torch.save`
    /// state dict. The configuration comes from `config` or, when absent,
    /// from the file (our checkpoints' metadata, the state dict's `_metadata`).
    pub fn load_checkpoint(bytes: &[u8], config: Option<&FnoConfig>, device: &B::Device) -> Result<Self, ModelError> {
        // Everything the file holds is checked against the validated
        // configuration before the model is allocated.
        let (config, mut tensors) = checked_tensors(bytes, config)?;
        let mut model = Fno::new(&config, device)?;
        let form = model.weight_form().clone();
        let spectral: Vec<Vec<Param<Tensor<B, 2>>>> = (0..config.n_layers)
            .map(|i| {
                form.tensors()
                    .iter()
                    .map(|(name, shape)| {
                        let t = tensors.remove(&spectral_tensor_name(i, name)).expect("matched above");
                        let values = t.data.len();
                        let flat = Tensor::from_data(TensorData::new(t.data, [values]), device);
                        leaf_param(factorized::stored_tensor(flat, shape))
                    })
                    .collect()
            })
            .collect();
        let mut take = |name: String| -> Param<Tensor<B, 1>> {
            let t = tensors.remove(&name).expect("matched above");
            Param::from_tensor(Tensor::from_data(
                TensorData::new(t.data, [t.shape.iter().product::<usize>()]),
                device,
            ))
        };
        load_mlp(&mut model.lifting, "lifting", &mut take);
        for ((i, block), weights) in model.blocks.iter_mut().enumerate().zip(spectral) {
            block.spectral_weights = weights;
            block.spectral_bias = take(format!("fno_blocks.convs.{i}.bias"));
            if let Some(skip) = &mut block.fno_skip {
                load_skip(skip, &format!("fno_blocks.fno_skips.{i}"), &mut take);
            }
            if let Some(mlp) = &mut block.channel_mlp {
                load_mlp(mlp, &format!("fno_blocks.channel_mlp.{i}"), &mut take);
            }
            if let Some(skip) = &mut block.channel_mlp_skip {
                load_skip(skip, &format!("fno_blocks.channel_mlp_skips.{i}"), &mut take);
            }
            for (j, norm) in block.norms.iter_mut().enumerate() {
                if norm.weight.is_some() {
                    norm.weight = Some(take(format!("fno_blocks.norm.{}.weight", 2 * i + j)));
                    norm.bias = Some(take(format!("fno_blocks.norm.{}.bias", 2 * i + j)));
                }
            }
        }
        load_mlp(&mut model.projection, "projection", &mut take);
        Ok(model)
    }

    /// Our checkpoint: neuraloperator's key names and shapes, F32 values and
    /// C64 spectral weights (in the model's form, dense or factorized), the
    /// configuration in the metadata.
    pub fn save_safetensors(&self) -> Vec<u8> {
        self.state_dict().to_bytes()
    }

    /// The model's tensors under neuraloperator's key names and shapes, the
    /// spectral weights complex, and the configuration in the metadata.
    pub fn state_dict(&self) -> SafeTensorsFile {
        let cfg = self.config();
        let mut file = SafeTensorsFile::default();
        file.metadata.insert("config".into(), cfg.to_json());
        file.metadata.insert("format".into(), "fno-models".into());
        let mut complex = Vec::new();
        let mut put = |name: String, t: Tensor<B, 1>, shape: Vec<usize>| {
            let data = t.into_data().convert::<f32>().to_vec::<f32>().expect("f32 data");
            file.tensors.insert(name, StoredTensor { shape, data });
        };
        let flat = |p: &Param<Tensor<B, 2>>| p.val().flatten::<1>(0, 1);
        let mlp = |prefix: &str, m: &ChannelMlp<B>, put: &mut dyn FnMut(String, Tensor<B, 1>, Vec<usize>)| {
            for (i, fc) in m.fcs.iter().enumerate() {
                let [cout, cin] = fc.weight.dims();
                put(format!("{prefix}.fcs.{i}.weight"), flat(&fc.weight), vec![cout, cin, 1]);
                if let Some(b) = &fc.bias {
                    put(format!("{prefix}.fcs.{i}.bias"), b.val(), vec![cout]);
                }
            }
        };
        let expected: HashMap<String, Vec<usize>> = expected_keys(cfg)
            .expect("a built model's configuration has its keys")
            .into_iter()
            .collect();
        let shape = |name: &str| expected[name].clone();
        mlp("lifting", &self.lifting, &mut put);
        for (i, block) in self.blocks.iter().enumerate() {
            for ((name, _), w) in self.weight_form().tensors().iter().zip(&block.spectral_weights) {
                let name = spectral_tensor_name(i, name);
                put(name.clone(), flat(w), shape(&name));
                complex.push(name);
            }
            let name = format!("fno_blocks.convs.{i}.bias");
            put(name.clone(), block.spectral_bias.val(), shape(&name));
            let skip = |prefix: String, s: &Skip<B>, put: &mut dyn FnMut(String, Tensor<B, 1>, Vec<usize>)| {
                if let Some(l) = &s.linear {
                    let name = format!("{prefix}.conv.weight");
                    put(name.clone(), flat(&l.weight), shape(&name));
                }
                if let Some(g) = &s.gate {
                    let name = format!("{prefix}.weight");
                    put(name.clone(), g.val(), shape(&name));
                }
            };
            if let Some(s) = &block.fno_skip {
                skip(format!("fno_blocks.fno_skips.{i}"), s, &mut put);
            }
            if let Some(m) = &block.channel_mlp {
                mlp(&format!("fno_blocks.channel_mlp.{i}"), m, &mut put);
            }
            if let Some(s) = &block.channel_mlp_skip {
                skip(format!("fno_blocks.channel_mlp_skips.{i}"), s, &mut put);
            }
            for (j, norm) in block.norms.iter().enumerate() {
                if let (Some(w), Some(b)) = (&norm.weight, &norm.bias) {
                    put(
                        format!("fno_blocks.norm.{}.weight", 2 * i + j),
                        w.val(),
                        shape("fno_blocks.norm.0.weight"),
                    );
                    put(
                        format!("fno_blocks.norm.{}.bias", 2 * i + j),
                        b.val(),
                        shape("fno_blocks.norm.0.bias"),
                    );
                }
            }
        }
        mlp("projection", &self.projection, &mut put);
        file.complex.extend(complex);
        file
    }
}

/// A parameter of a reshaped tensor, detached first: on an autodiff backend a
/// reshape's result is no leaf, and only leaves can be tracked parameters.
fn leaf_param<B: SpectralConvBackend, const D: usize>(t: Tensor<B, D>) -> Param<Tensor<B, D>> {
    Param::from_tensor(t.detach())
}

fn load_mlp<B: SpectralConvBackend>(
    mlp: &mut ChannelMlp<B>,
    prefix: &str,
    take: &mut impl FnMut(String) -> Param<Tensor<B, 1>>,
) {
    for (i, fc) in mlp.fcs.iter_mut().enumerate() {
        load_pointwise(fc, &format!("{prefix}.fcs.{i}"), take);
    }
}

fn load_pointwise<B: SpectralConvBackend>(
    fc: &mut Pointwise<B>,
    prefix: &str,
    take: &mut impl FnMut(String) -> Param<Tensor<B, 1>>,
) {
    let dims = fc.weight.dims();
    fc.weight = leaf_param(take(format!("{prefix}.weight")).val().reshape(dims));
    if fc.bias.is_some() {
        fc.bias = Some(take(format!("{prefix}.bias")));
    }
}

fn load_skip<B: SpectralConvBackend>(
    skip: &mut Skip<B>,
    prefix: &str,
    take: &mut impl FnMut(String) -> Param<Tensor<B, 1>>,
) {
    if let Some(l) = &mut skip.linear {
        let dims = l.weight.dims();
        l.weight = leaf_param(take(format!("{prefix}.conv.weight")).val().reshape(dims));
    }
    if skip.gate.is_some() {
        skip.gate = Some(take(format!("{prefix}.weight")));
    }
}

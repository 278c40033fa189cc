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

use std::collections::HashMap;

use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use fno_core::checkpoint::expected_keys;
use fno_ops::SpectralConvBackend;

pub use fno_core::checkpoint::{checked_tensors, spectral_tensor_name};
pub use fno_core::safetensors_file::{SafeTensorsFile, StoredTensor};

use crate::config::FnoConfig;
use crate::factorized;
use crate::fno::{ChannelMlp, Fno, Pointwise, Skip};
use crate::ModelError;

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

//! neuraloperator 2.0's FNO as a candle-nn model: the forward of
//! `fno_models::Fno` on Candle tensors. It is built from the same
//! [`FnoConfig`] through a [`VarBuilder`], under neuraloperator's parameter
//! names, so a `VarMap` trains it and the same safetensors checkpoints load
//! into it ([`Fno::load`]).
//!
//! The spectral weights are dense: a factorized checkpoint (Tucker, CP, tensor
//! train, separable) is rebuilt into its dense weight when loaded, and a fresh
//! factorized model is refused (factorized training runs on the Burn model).
//! Every block computes in the tensors' float type, whatever the
//! configuration's `fno_block_precision`.

use std::cell::RefCell;
use std::collections::HashMap;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Init, VarBuilder};
use fno_core::checkpoint::{checked_tensors, spectral_tensor_name};
use fno_core::config::{NormKind, SkipKind};
use fno_core::forward::{self, Step};
use fno_core::safetensors_file::{SafeTensorsFile, StoredTensor};
use fno_core::{Factorization, FnoConfig, Precision};

use crate::factorized::dense_weight;
use crate::spectral::spectral_conv;

/// Normalisation's epsilon, as PyTorch's.
const NORM_EPS: f64 = 1e-5;

/// The name under which a dense spectral weight is stored (tltorch's).
fn dense_weight_name(layer: usize) -> String {
    spectral_tensor_name(layer, "tensor")
}

/// The parameters a model takes from its [`VarBuilder`], by full name.
struct Params<'a> {
    vb: &'a VarBuilder<'a>,
    taken: RefCell<Vec<(String, Tensor)>>,
}

impl Params<'_> {
    fn get(&self, shape: &[usize], name: String, init: Init) -> Result<Tensor> {
        let t = self.vb.get_with_hints(shape, &name, init)?;
        self.taken.borrow_mut().push((name, t.clone()));
        Ok(t)
    }
}

/// A 1×1 convolution over channels: `[B, Cin, S] → [B, Cout, S]`.
struct Pointwise {
    /// `[Cout, Cin]`.
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Pointwise {
    /// PyTorch's Conv1d initialisation: uniform in ±1/sqrt(Cin).
    fn new(p: &Params, prefix: &str, cin: usize, cout: usize, bias: bool) -> Result<Self> {
        let bound = 1.0 / (cin as f64).sqrt();
        let uniform = Init::Uniform { lo: -bound, up: bound };
        Ok(Pointwise {
            weight: p
                .get(&[cout, cin, 1], format!("{prefix}.weight"), uniform)?
                .squeeze(2)?,
            bias: bias
                .then(|| p.get(&[cout], format!("{prefix}.bias"), uniform))
                .transpose()?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        // Contiguous: Candle's CUDA matmul takes no strided operands (an unpadded grid is a view).
        let y = self.weight.broadcast_matmul(&x.contiguous()?)?;
        match &self.bias {
            Some(b) => y.broadcast_add(&b.reshape((1, (), 1))?),
            None => Ok(y),
        }
    }
}

/// neuraloperator's `ChannelMLP`: 1×1 convolutions with GELU between them and
/// dropout after each while training.
struct ChannelMlp {
    fcs: Vec<Pointwise>,
    dropout: f32,
}

impl ChannelMlp {
    fn new(p: &Params, prefix: &str, channels: &[usize], dropout: f64) -> Result<Self> {
        let fcs = channels
            .windows(2)
            .enumerate()
            .map(|(i, w)| Pointwise::new(p, &format!("{prefix}.fcs.{i}"), w[0], w[1], true))
            .collect::<Result<_>>()?;
        Ok(ChannelMlp {
            fcs,
            dropout: dropout as f32,
        })
    }

    fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let last = self.fcs.len() - 1;
        let mut x = x.clone();
        for (i, fc) in self.fcs.iter().enumerate() {
            x = fc.forward(&x)?;
            if i < last {
                x = gelu(&x)?;
            }
            if train && self.dropout > 0.0 {
                x = candle_nn::ops::dropout(&x, self.dropout)?;
            }
        }
        Ok(x)
    }
}

/// A skip connection: a 1×1 convolution, a per-channel gate, or the identity.
enum Skip {
    Linear(Pointwise),
    Gate(Tensor),
    Identity,
}

impl Skip {
    fn new(p: &Params, prefix: &str, kind: SkipKind, channels: usize, dims: usize) -> Result<Self> {
        Ok(match kind {
            SkipKind::Linear => Skip::Linear(Pointwise::new(p, &format!("{prefix}.conv"), channels, channels, false)?),
            SkipKind::SoftGating => {
                let shape = [&[1, channels][..], &vec![1; dims]].concat();
                Skip::Gate(
                    p.get(&shape, format!("{prefix}.weight"), Init::Const(1.0))?
                        .reshape((1, channels, 1))?,
                )
            }
            SkipKind::Identity => Skip::Identity,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Skip::Linear(l) => l.forward(x),
            Skip::Gate(g) => x.broadcast_mul(g),
            Skip::Identity => Ok(x.clone()),
        }
    }
}

/// Group norm with one group (an affine map per channel), or instance norm,
/// of `[B, C, S]`; biased variance, as PyTorch.
enum Normalization {
    Group { weight: Tensor, bias: Tensor },
    Instance,
}

impl Normalization {
    fn new(p: &Params, index: usize, kind: NormKind, channels: usize) -> Result<Self> {
        Ok(match kind {
            NormKind::Group => Normalization::Group {
                weight: p.get(&[channels], format!("fno_blocks.norm.{index}.weight"), Init::Const(1.0))?,
                bias: p.get(&[channels], format!("fno_blocks.norm.{index}.bias"), Init::Const(0.0))?,
            },
            NormKind::Instance => Normalization::Instance,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let standardise = |t: &Tensor, dim: usize| -> Result<Tensor> {
            let centred = t.broadcast_sub(&t.mean_keepdim(dim)?)?;
            let var = centred.sqr()?.mean_keepdim(dim)?;
            centred.broadcast_div(&(var + NORM_EPS)?.sqrt()?)
        };
        match self {
            Normalization::Group { weight, bias } => {
                let (b, c, s) = x.dims3()?;
                let normed = standardise(&x.reshape((b, c * s))?, 1)?.reshape((b, c, s))?;
                normed
                    .broadcast_mul(&weight.reshape((1, c, 1))?)?
                    .broadcast_add(&bias.reshape((1, c, 1))?)
            }
            Normalization::Instance => standardise(x, 2),
        }
    }
}

/// One FNO layer.
struct Block {
    /// `[H, H, *weight_modes, 2]`.
    spectral_weight: Tensor,
    spectral_bias: Tensor,
    fno_skip: Option<Skip>,
    channel_mlp: Option<ChannelMlp>,
    channel_mlp_skip: Option<Skip>,
    norms: Vec<Normalization>,
}

/// neuraloperator 2.0's FNO on Candle tensors.
pub struct Fno {
    config: FnoConfig,
    lifting: ChannelMlp,
    blocks: Vec<Block>,
    projection: ChannelMlp,
    /// Every parameter by neuraloperator's name, in creation order.
    params: Vec<(String, Tensor)>,
}

impl Fno {
    /// A model of `config` taking its parameters from `vb`: existing tensors
    /// under neuraloperator's names, or, from a `VarMap`, new ones with
    /// neuraloperator's initialisation. Dense spectral weights only.
    pub fn new(config: &FnoConfig, vb: VarBuilder) -> Result<Self> {
        config.validate().map_err(candle_core::Error::wrap)?;
        let form = config.weight_form().map_err(candle_core::Error::wrap)?;
        if form.factorization != Factorization::Dense || form.separable {
            candle_core::bail!(
                "the Candle FNO holds dense spectral weights: a factorized or separable model \
                 ({:?}, separable {}) loads from a checkpoint (Fno::load), and trains on the Burn model",
                form.factorization,
                form.separable
            );
        }
        Self::build(config, &vb)
    }

    /// Loads a safetensors checkpoint, ours or a neuraloperator export, as
    /// `fno_models::Fno::load_checkpoint` does (the configuration from
    /// `config` or the file's metadata, every name and shape checked), with
    /// values in `dtype` on `device`. Factorized spectral weights are rebuilt
    /// into dense ones.
    pub fn load(bytes: &[u8], config: Option<&FnoConfig>, dtype: DType, device: &Device) -> Result<Self> {
        let (config, mut stored) = checked_tensors(bytes, config).map_err(candle_core::Error::wrap)?;
        let form = config.weight_form().map_err(candle_core::Error::wrap)?;
        let mut tensors = HashMap::new();
        for layer in 0..config.n_layers {
            let parts = form
                .tensors()
                .iter()
                .map(|(name, _)| {
                    let t = stored.remove(&spectral_tensor_name(layer, name));
                    t.expect("checked against the configuration").data
                })
                .collect();
            tensors.insert(dense_weight_name(layer), dense_weight(&form, parts, device)?);
        }
        for (name, t) in stored {
            tensors.insert(name, Tensor::from_vec(t.data, t.shape, device)?);
        }
        Self::build(&config, &VarBuilder::from_tensors(tensors, dtype, device))
    }

    fn build(config: &FnoConfig, vb: &VarBuilder) -> Result<Self> {
        let p = Params {
            vb,
            taken: RefCell::new(Vec::new()),
        };
        let h = config.hidden_channels;
        let dims = config.dims();
        let mlp = |m: forward::Mlp| ChannelMlp::new(&p, &m.name, &m.channels, m.dropout);
        let skip = |s: Option<forward::Skip>| s.map(|s| Skip::new(&p, &s.name, s.kind, h, dims)).transpose();
        let lifting = mlp(forward::lifting(config))?;
        // neuraloperator's complex normal with std sqrt(2 / (Cin + Cout)): each part has that over √2.
        let std = (2.0 / (2 * h) as f64).sqrt();
        let mut blocks = Vec::with_capacity(config.n_layers);
        for i in 0..config.n_layers {
            let step = forward::block(config, i);
            let mut weight_shape = vec![h, h];
            weight_shape.extend(config.weight_modes());
            weight_shape.push(2);
            let part = Init::Randn {
                mean: 0.0,
                stdev: std * std::f64::consts::FRAC_1_SQRT_2,
            };
            let bias_shape = [&[h][..], &vec![1; dims]].concat();
            let bias_init = Init::Randn { mean: 0.0, stdev: std };
            blocks.push(Block {
                spectral_weight: p.get(&weight_shape, dense_weight_name(i), part)?,
                spectral_bias: p
                    .get(&bias_shape, format!("fno_blocks.convs.{i}.bias"), bias_init)?
                    .flatten_all()?,
                fno_skip: skip(step.fno_skip)?,
                channel_mlp: step.channel_mlp.map(mlp).transpose()?,
                channel_mlp_skip: skip(step.channel_mlp_skip)?,
                norms: match step.norm {
                    Some(kind) => (0..2)
                        .map(|j| Normalization::new(&p, 2 * i + j, kind, h))
                        .collect::<Result<_>>()?,
                    None => Vec::new(),
                },
            });
        }
        let projection = mlp(forward::projection(config))?;
        Ok(Fno {
            config: config.clone(),
            lifting,
            blocks,
            projection,
            params: p.taken.into_inner(),
        })
    }

    pub fn config(&self) -> &FnoConfig {
        &self.config
    }

    /// `x: [B, in_channels, *grid]` (any grid) → `[B, out_channels, *grid]`;
    /// `train` turns the channel MLPs' dropout on.
    pub fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let cfg = &self.config;
        let dims = x.dims().to_vec();
        if dims.len() != cfg.dims() + 2 || dims[1] != cfg.in_channels || dims.contains(&0) {
            candle_core::bail!(
                "a {}-D FNO takes [batch, {} channels, {} non-empty grid dims], got {dims:?}",
                cfg.dims(),
                cfg.in_channels,
                cfg.dims()
            );
        }
        let steps = forward::steps(cfg, &dims[2..]);
        steps.iter().try_fold(x.clone(), |x, step| self.step(step, x, train))
    }

    /// One step of the forward on `[B, C, *grid]`.
    fn step(&self, step: &Step, x: Tensor, train: bool) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let mlp = |m: &ChannelMlp, x: Tensor| unflatten(&m.forward(&x.flatten_from(2)?, train)?, &dims[2..]);
        match step {
            Step::GridEmbedding => {
                let embedding = grid_embedding(dims[0], &dims[2..], x.dtype(), x.device())?;
                Tensor::cat(&[&x, &embedding], 1)
            }
            Step::Lift(_) => mlp(&self.lifting, x),
            Step::Pad(padding) => padding
                .iter()
                .enumerate()
                .try_fold(x, |x, (d, &p)| x.pad_with_zeros(d + 2, p, p)),
            Step::Block(block) => self.block_forward(&self.blocks[block.index], &x, block, train),
            Step::Unpad(padding) => padding
                .iter()
                .enumerate()
                .try_fold(x, |x, (d, &p)| x.narrow(d + 2, p, dims[d + 2] - 2 * p)),
            Step::Project(_) => mlp(&self.projection, x),
        }
    }

    /// One block, post-activation (neuraloperator's default) or pre-activation.
    fn block_forward(&self, block: &Block, x: &Tensor, step: &forward::Block, train: bool) -> Result<Tensor> {
        let spatial = x.dims()[2..].to_vec();
        let pre = step.preactivation;
        let norm = |i: usize, y: Tensor| match block.norms.get(i) {
            Some(n) => n.forward(&y),
            None => Ok(y),
        };
        let x = if pre {
            unflatten(&norm(0, gelu(x)?.flatten_from(2)?)?, &spatial)?
        } else {
            x.clone()
        };
        let flat = x.flatten_from(2)?;
        let fno_skip = block.fno_skip.as_ref().map(|s| s.forward(&flat)).transpose()?;
        let mlp_skip = block.channel_mlp_skip.as_ref().map(|s| s.forward(&flat)).transpose()?;
        let input = if step.stabilizer { x.tanh()? } else { x };
        // Every block computes in the tensors' float type.
        let spec = step.spectral.clone().spectrum_precision(Precision::F32);
        let mut y =
            spectral_conv(&input, &block.spectral_weight, Some(&block.spectral_bias), &spec)?.flatten_from(2)?;
        if !pre {
            y = norm(0, y)?;
        }
        if let Some(skip) = fno_skip {
            y = (y + skip)?;
        }
        if step.activation {
            y = gelu(&y)?;
        }
        if pre {
            y = norm(1, y)?;
        }
        if let Some(mlp) = &block.channel_mlp {
            y = mlp.forward(&y, train)?;
            if let Some(skip) = mlp_skip {
                y = (y + skip)?;
            }
        }
        if !pre {
            y = norm(1, y)?;
            if step.activation {
                y = gelu(&y)?;
            }
        }
        unflatten(&y, &spatial)
    }

    /// Every parameter by neuraloperator's name (the spectral weights as
    /// dense `….weight.tensor`, `[H, H, *modes, 2]`).
    pub fn named_parameters(&self) -> &[(String, Tensor)] {
        &self.params
    }

    /// The model as our checkpoint: neuraloperator's names and shapes, F32
    /// values, C64 spectral weights and the configuration in the metadata, as
    /// `fno_models::Fno::save_safetensors` writes it (so `fno infer` and
    /// neuraloperator load it). The weights are saved dense, with a dense
    /// configuration, also for a model loaded from a factorized checkpoint.
    pub fn save_safetensors(&self) -> Result<Vec<u8>> {
        // The weights are dense whatever the loaded checkpoint's factorization was.
        let config = FnoConfig {
            factorization: None,
            separable: false,
            ..self.config.clone()
        };
        let mut file = SafeTensorsFile::default();
        file.metadata.insert("config".into(), config.to_json());
        file.metadata.insert("format".into(), "fno-models".into());
        // The parameters were recorded in neuraloperator's shapes ([Cout, Cin, 1] convolutions, [H, 1, …] biases).
        for (name, t) in &self.params {
            let data = t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            let shape = t.dims().to_vec();
            file.tensors.insert(name.clone(), StoredTensor { shape, data });
            if name.ends_with(".weight.tensor") {
                file.complex.insert(name.clone());
            }
        }
        file.try_to_bytes().map_err(candle_core::Error::wrap)
    }
}

/// neuraloperator's `GridEmbeddingND` ([`forward::grid_embedding`]) for a batch.
fn grid_embedding(batch: usize, grid: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
    let values = forward::grid_embedding(grid);
    let one = Tensor::from_vec(values, [&[1, grid.len()][..], grid].concat(), device)?.to_dtype(dtype)?;
    one.broadcast_as([&[batch, grid.len()][..], grid].concat())?
        .contiguous()
}

/// The exact GELU, `x·(1 + erf(x/√2))/2`, from Candle's `erf`: its gradient
/// is exact in f64, where `gelu_erf`'s backward rounds 1/√(2π) to six digits.
fn gelu(x: &Tensor) -> Result<Tensor> {
    let cdf = ((x * std::f64::consts::FRAC_1_SQRT_2)?.erf()? + 1.0)?;
    (x * 0.5)? * cdf
}

/// `[B, C, S]` → `[B, C, *spatial]`.
fn unflatten(x: &Tensor, spatial: &[usize]) -> Result<Tensor> {
    let (b, c, _) = x.dims3()?;
    x.reshape([&[b, c][..], spatial].concat())
}

/// Runs `model` on `x` (`[N, in_channels, *grid]`, row-major f32) in batches
/// of at most `batch_size` samples of `dtype` on `device`, as
/// `fno_models::infer` runs the Burn model; `progress(done, total)` after
/// each batch. Returns `[N, out_channels, *grid]`, row-major.
pub fn infer(
    model: &Fno,
    x: &[f32],
    shape: &[usize],
    batch_size: usize,
    (dtype, device): (DType, &Device),
    progress: impl FnMut(usize, usize),
) -> Result<Vec<f32>> {
    fno_core::input::check_input(model.config(), x, shape, batch_size).map_err(candle_core::Error::wrap)?;
    fno_core::input::in_batches(x, shape, batch_size, progress, |chunk, batch_shape| {
        let x = Tensor::from_slice(chunk, batch_shape, device)?.to_dtype(dtype)?;
        model
            .forward(&x, false)?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()
    })
}

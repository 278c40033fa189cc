//! The FNO: grid embedding, lifting channel-MLP, FNO blocks (spectral
//! convolution + skip, GELU, channel-MLP + its skip), projection — the forward
//! of neuraloperator 2.0's `FNO`, post- or pre-activation blocks, as
//! `fno_core::forward` lists its steps, run with our Burn ops.

use burn::module::{Module, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, FloatDType, Tensor};
use fno_kernels::fft::Planning;
use fno_ops::rounding::round_to;
use fno_ops::{
    channel_scale, factorized_spectral_conv, gelu, pointwise_conv, pointwise_conv_finished, FactorizedWeight,
    FaultTolerance, MatmulPrecision, Precision, Residual, SpectralConvBackend, SpectralConvSpec, SpectralImpl,
    WeightForm,
};

/// A tensor a convolution adds to its output, gated per channel or not.
type Added<B> = Residual<Tensor<B, 3>, Tensor<B, 1>>;

/// `y + r` by element-wise ops (where no convolution takes it).
fn add<B: SpectralConvBackend>(y: Tensor<B, 3>, r: Added<B>) -> Tensor<B, 3> {
    y + match r.gate {
        Some(g) => channel_scale(r.values, g),
        None => r.values,
    }
}

use fno_core::forward::{self, Step};

use crate::config::{BlockPrecision, FnoConfig, NormKind, SkipKind};
use crate::factorized::initial_tensors;
use crate::ModelError;

/// A 1×1 convolution over channels: `[B, Cin, S] → [B, Cout, S]`, its products
/// in f32, or TF32 where asked for and the device has it ([`pointwise_conv`]).
#[derive(Module, Debug)]
pub struct Pointwise<B: Backend> {
    /// `[Cout, Cin]`.
    pub weight: Param<Tensor<B, 2>>,
    pub bias: Option<Param<Tensor<B, 1>>>,
}

impl<B: SpectralConvBackend> Pointwise<B> {
    /// PyTorch's Conv1d initialisation: uniform in ±1/sqrt(Cin).
    pub(crate) fn new(cin: usize, cout: usize, bias: bool, device: &B::Device) -> Self {
        let bound = 1.0 / (cin as f64).sqrt();
        let dist = Distribution::Uniform(-bound, bound);
        Pointwise {
            weight: Param::from_tensor(Tensor::random([cout, cin], dist, device)),
            bias: bias.then(|| Param::from_tensor(Tensor::random([cout], dist, device))),
        }
    }

    pub(crate) fn forward(&self, x: Tensor<B, 3>, precision: MatmulPrecision) -> Tensor<B, 3> {
        pointwise_conv(x, self.weight.val(), self.bias.as_ref().map(|b| b.val()), precision)
    }

    /// `gelu(W·x + bias + r)` (GELU where asked), in the convolution's kernel.
    fn forward_finished(
        &self,
        x: Tensor<B, 3>,
        residual: Option<Added<B>>,
        gelu: bool,
        precision: MatmulPrecision,
    ) -> Tensor<B, 3> {
        let bias = self.bias.as_ref().map(|b| b.val());
        pointwise_conv_finished(x, self.weight.val(), bias, residual, gelu, precision)
    }
}

/// neuraloperator's `ChannelMLP`: 1×1 convolutions with GELU between them.
#[derive(Module, Debug)]
pub struct ChannelMlp<B: Backend> {
    pub fcs: Vec<Pointwise<B>>,
    dropout: f64,
}

impl<B: SpectralConvBackend> ChannelMlp<B> {
    pub(crate) fn new(channels: &[usize], dropout: f64, device: &B::Device) -> Self {
        ChannelMlp {
            fcs: channels
                .windows(2)
                .map(|w| Pointwise::new(w[0], w[1], true, device))
                .collect(),
            dropout,
        }
    }

    pub(crate) fn forward(&self, x: Tensor<B, 3>, precision: MatmulPrecision) -> Tensor<B, 3> {
        self.forward_finished(x, None, false, precision)
    }

    /// The MLP, then `residual` added and GELU where `gelu_last`: each GELU
    /// and the residual in a convolution's kernel, except where dropout (after
    /// every layer, as neuraloperator; only while training) comes between.
    fn forward_finished(
        &self,
        mut x: Tensor<B, 3>,
        mut residual: Option<Added<B>>,
        gelu_last: bool,
        precision: MatmulPrecision,
    ) -> Tensor<B, 3> {
        let dropout = self.dropout > 0.0 && B::ad_enabled(&x.device());
        let last = self.fcs.len() - 1;
        for (i, fc) in self.fcs.iter().enumerate() {
            x = match (i < last, dropout) {
                (true, _) => fc.forward_finished(x, None, true, precision),
                (false, false) => fc.forward_finished(x, residual.take(), gelu_last, precision),
                (false, true) => fc.forward(x, precision),
            };
            if dropout {
                x = burn::nn::DropoutConfig::new(self.dropout).init().forward(x);
            }
        }
        if let Some(r) = residual {
            x = add(x, r);
        }
        if dropout && gelu_last {
            x = gelu(x);
        }
        x
    }
}

/// A skip connection; `linear` holds the 1×1 convolution, `gate` the soft-gating weight.
#[derive(Module, Debug)]
pub struct Skip<B: Backend> {
    pub linear: Option<Pointwise<B>>,
    pub gate: Option<Param<Tensor<B, 1>>>,
}

impl<B: SpectralConvBackend> Skip<B> {
    fn new(kind: SkipKind, channels: usize, device: &B::Device) -> Self {
        Skip {
            linear: (kind == SkipKind::Linear).then(|| Pointwise::new(channels, channels, false, device)),
            gate: (kind == SkipKind::SoftGating).then(|| Param::from_tensor(Tensor::ones([channels], device))),
        }
    }

    fn forward(&self, x: Tensor<B, 3>, precision: MatmulPrecision) -> Tensor<B, 3> {
        match (&self.linear, &self.gate) {
            (Some(l), _) => l.forward(x, precision),
            (None, Some(g)) => channel_scale(x, g.val()),
            (None, None) => x,
        }
    }

    /// The skip as a convolution's residual: `x` gated, or as it is, or
    /// through the skip's own convolution.
    fn residual(&self, x: Tensor<B, 3>, precision: MatmulPrecision) -> Added<B> {
        match (&self.linear, &self.gate) {
            (Some(l), _) => Residual {
                values: l.forward(x, precision),
                gate: None,
            },
            (None, gate) => Residual {
                values: x,
                gate: gate.as_ref().map(|g| g.val()),
            },
        }
    }
}

/// Normalisation of `[B, C, S]` (eps 1e-5, biased variance, as PyTorch).
#[derive(Module, Debug)]
pub struct Normalization<B: Backend> {
    /// Group norm's affine map; instance norm has none.
    pub weight: Option<Param<Tensor<B, 1>>>,
    pub bias: Option<Param<Tensor<B, 1>>>,
}

const NORM_EPS: f64 = 1e-5;

impl<B: Backend> Normalization<B> {
    fn new(kind: NormKind, channels: usize, device: &B::Device) -> Self {
        let group = kind == NormKind::Group;
        Normalization {
            weight: group.then(|| Param::from_tensor(Tensor::ones([channels], device))),
            bias: group.then(|| Param::from_tensor(Tensor::zeros([channels], device))),
        }
    }

    /// Statistics and affine map in f32 whatever `x` holds; the result in `x`'s dtype.
    fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let dtype = x.dtype();
        let half = matches!(dtype, burn::tensor::DType::F16 | burn::tensor::DType::BF16);
        let x = if half { x.cast(FloatDType::F32) } else { x };
        let y = self.forward_f32(x);
        if half {
            y.cast(dtype)
        } else {
            y
        }
    }

    fn forward_f32(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let [b, c, s] = x.dims();
        match (&self.weight, &self.bias) {
            (Some(w), Some(bias)) => {
                let flat = x.reshape([b, c * s]);
                let (var, mean) = flat.clone().var_mean_bias(1);
                let normed = ((flat - mean) / (var + NORM_EPS).sqrt()).reshape([b, c, s]);
                normed * w.val().reshape([1, c, 1]) + bias.val().reshape([1, c, 1])
            }
            _ => {
                let (var, mean) = x.clone().var_mean_bias(2);
                (x - mean) / (var + NORM_EPS).sqrt()
            }
        }
    }
}

/// One FNO layer's parameters.
#[derive(Module, Debug)]
pub struct FnoBlock<B: Backend> {
    /// The spectral weight's stored tensors in the model's [`WeightForm`]
    /// (`Fno::weight_form`): dense, one tensor `[Cin, Cout, M, 2]` (the mode
    /// dims flattened, (re, im) pairs); factorized, tltorch's core and factors.
    /// Each is stored as `[shape₀, rest·2]`: CUDA's allocator pads each row of
    /// a tensor (a row of one (re, im) pair to 16 bytes, which would double the
    /// bytes the contraction reads); long rows keep the padding negligible.
    pub spectral_weights: Vec<Param<Tensor<B, 2>>>,
    pub spectral_bias: Param<Tensor<B, 1>>,
    pub fno_skip: Option<Skip<B>>,
    pub channel_mlp: Option<ChannelMlp<B>>,
    pub channel_mlp_skip: Option<Skip<B>>,
    pub norms: Vec<Normalization<B>>,
}

/// The forward's steps for one input's grid ([`fno_core::forward::steps`]).
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    steps: Vec<Step>,
}

impl Layout {
    /// The steps before the blocks, the blocks, and the steps after them.
    fn parts(&self) -> [&[Step]; 3] {
        let is_block = |s: &Step| matches!(s, Step::Block(_));
        let first = self.steps.iter().position(is_block).unwrap_or(self.steps.len());
        let end = self.steps.iter().rposition(is_block).map_or(first, |i| i + 1);
        [&self.steps[..first], &self.steps[first..end], &self.steps[end..]]
    }
}

/// How a model runs beyond its parameters: its 1×1 products' precision, what
/// its spectral convolutions hold (where given; else its configuration's) and
/// their fault tolerance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelSettings {
    pub matmul: MatmulPrecision,
    pub block: Option<BlockPrecision>,
    pub fault_tolerance: FaultTolerance,
    /// How the kernel path lowers its FFT plans ([`SpectralConvSpec::fft_planning`]).
    pub fft_planning: Planning,
}

/// neuraloperator 2.0's FNO as a Burn module.
#[derive(Module, Debug)]
pub struct Fno<B: Backend> {
    pub lifting: ChannelMlp<B>,
    pub blocks: Vec<FnoBlock<B>>,
    pub projection: ChannelMlp<B>,
    config: FnoConfig,
    weight_form: WeightForm,
    spectral_impl: SpectralImpl,
    matmul_precision: MatmulPrecision,
    fault_tolerance: FaultTolerance,
    fft_planning: Planning,
}

/// `[B, C, *spatial]` → `[B, C, S]`.
fn flatten<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, 3> {
    let dims = x.dims();
    x.reshape([dims[0], dims[1], dims[2..].iter().product()])
}

fn unflatten<B: Backend, const D: usize>(x: Tensor<B, 3>, spatial: &[usize]) -> Tensor<B, D> {
    let [b, c, _] = x.dims();
    let mut shape = [0usize; D];
    shape[0] = b;
    shape[1] = c;
    shape[2..].copy_from_slice(spatial);
    x.reshape(shape)
}

impl<B: SpectralConvBackend> Fno<B> {
    /// A freshly initialised FNO (PyTorch-like initialisation; the spectral
    /// weights as neuraloperator's: dense, complex normal with std `sqrt(2 /
    /// (Cin + Cout))`, so each of the real and imaginary parts has that over
    /// √2, as torch's `normal_` draws complex values; factorized, tltorch's
    /// spread of that std over the factors).
    pub fn new(config: &FnoConfig, device: &B::Device) -> Result<Self, ModelError> {
        config.validate()?;
        let h = config.hidden_channels;
        let weight_form = config.weight_form()?;
        let std = (2.0 / (2 * h) as f64).sqrt();
        let mlp = |m: forward::Mlp| ChannelMlp::new(&m.channels, m.dropout, device);
        let skip = |s: Option<forward::Skip>| s.map(|s| Skip::new(s.kind, h, device));
        let blocks = (0..config.n_layers)
            .map(|i| {
                let step = forward::block(config, i);
                FnoBlock {
                    spectral_weights: initial_tensors(&weight_form, h, device)
                        .into_iter()
                        .map(Param::from_tensor)
                        .collect(),
                    spectral_bias: Param::from_tensor(Tensor::random([h], Distribution::Normal(0.0, std), device)),
                    fno_skip: skip(step.fno_skip),
                    channel_mlp: step.channel_mlp.map(mlp),
                    channel_mlp_skip: skip(step.channel_mlp_skip),
                    norms: step
                        .norm
                        .map(|k| (0..2).map(|_| Normalization::new(k, h, device)).collect())
                        .unwrap_or_default(),
                }
            })
            .collect();
        Ok(Fno {
            lifting: mlp(forward::lifting(config)),
            blocks,
            projection: mlp(forward::projection(config)),
            config: config.clone(),
            weight_form,
            spectral_impl: SpectralImpl::Reference,
            matmul_precision: MatmulPrecision::F32,
            fault_tolerance: FaultTolerance::Off,
            fft_planning: Planning::Rules,
        })
    }

    pub fn config(&self) -> &FnoConfig {
        &self.config
    }

    /// How the spectral weights are stored: dense or factorized, with their ranks.
    pub fn weight_form(&self) -> &WeightForm {
        &self.weight_form
    }

    /// The parameters holding complex values as (re, im) pairs: the spectral
    /// weights' tensors (an optimizer that treats complex values as such, as
    /// neuraloperator's AdamW does, needs them).
    pub fn complex_params(&self) -> Vec<ParamId> {
        self.blocks
            .iter()
            .flat_map(|b| b.spectral_weights.iter().map(|p| p.id))
            .collect()
    }

    pub fn spectral_impl(&self) -> SpectralImpl {
        self.spectral_impl
    }

    /// Chooses the spectral convolution's implementation (any time: the
    /// parameters do not change).
    pub fn with_spectral_impl(mut self, imp: SpectralImpl) -> Self {
        self.spectral_impl = imp;
        self
    }

    pub fn matmul_precision(&self) -> MatmulPrecision {
        self.matmul_precision
    }

    /// Chooses the 1×1 convolutions' precision (any time).
    pub fn with_matmul_precision(mut self, precision: MatmulPrecision) -> Self {
        self.matmul_precision = precision;
        self
    }

    /// What the spectral convolutions hold: the configuration's
    /// `fno_block_precision`.
    pub fn block_precision(&self) -> BlockPrecision {
        self.config.fno_block_precision
    }

    /// Chooses what the spectral convolutions hold (any time): sets the
    /// configuration's `fno_block_precision`, which checkpoints record.
    pub fn with_block_precision(mut self, precision: BlockPrecision) -> Self {
        self.config.fno_block_precision = precision;
        self
    }

    pub fn fault_tolerance(&self) -> FaultTolerance {
        self.fault_tolerance
    }

    /// Checks the spectral convolutions by checksums (any time; the unfused
    /// kernel path only): faults are counted on the device
    /// ([`SpectralConvBackend::fault_counts`]) and, under `Correct`, computed
    /// again (docs/abft.md).
    pub fn with_fault_tolerance(mut self, tolerance: FaultTolerance) -> Self {
        self.fault_tolerance = tolerance;
        self
    }

    pub fn fft_planning(&self) -> Planning {
        self.fft_planning
    }

    /// Chooses how the kernel path lowers its FFT plans (any time; plans
    /// already built keep their lowering, and both compute the same transform).
    pub fn with_fft_planning(mut self, planning: Planning) -> Self {
        self.fft_planning = planning;
        self
    }

    /// Every setting of [`ModelSettings`] at once (the block precision where given).
    pub fn with_settings(self, settings: ModelSettings) -> Self {
        let model = self
            .with_matmul_precision(settings.matmul)
            .with_fault_tolerance(settings.fault_tolerance)
            .with_fft_planning(settings.fft_planning);
        match settings.block {
            Some(block) => model.with_block_precision(block),
            None => model,
        }
    }

    /// `x: [B, in_channels, *grid]` (any grid: the FNO is discretisation
    /// invariant) → `[B, out_channels, *grid]`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Result<Tensor<B, D>, ModelError> {
        let (x, layout) = self.stem(x)?;
        let x = layout.parts()[1].iter().try_fold(x, |x, step| self.step(step, x))?;
        self.head(x, &layout)
    }

    /// The input checked, embedded, lifted and padded: the first block's input.
    pub(crate) fn stem<const D: usize>(&self, x: Tensor<B, D>) -> Result<(Tensor<B, D>, Layout), ModelError> {
        let cfg = &self.config;
        let dims = x.dims();
        if D != cfg.dims() + 2 {
            return Err(ModelError::Input(format!(
                "a {}-D FNO takes [batch, channels, {} spatial dims], got {D} dims",
                cfg.dims(),
                cfg.dims()
            )));
        }
        if dims[1] != cfg.in_channels {
            return Err(ModelError::Input(format!(
                "the FNO takes {} input channels, got {}",
                cfg.in_channels, dims[1]
            )));
        }
        let grid = dims[2..].to_vec();
        if dims[0] == 0 || grid.contains(&0) {
            return Err(ModelError::Input(format!(
                "input of shape {dims:?}: the batch and every grid dim must be non-empty"
            )));
        }
        let padding = cfg.padding_for(&grid);
        let widest = cfg.widest_channels();
        let last = grid.len() - 1;
        // The last dim two longer: a spectrum of its n/2 + 1 bins in (re, im).
        let elements = grid
            .iter()
            .zip(&padding)
            .enumerate()
            .fold(dims[0] as u128 * widest as u128, |n, (d, (&g, &p))| {
                n * (g + 2 * p + if d == last { 2 } else { 0 }) as u128
            });
        let limit = crate::config::limits::ACTIVATION_ELEMENTS;
        if elements > limit || dims[0] > crate::config::limits::BATCH {
            return Err(ModelError::Input(format!(
                "input of shape {dims:?}: one activation of this batch ({elements} values over {widest} channels \
                 of the padded grid) exceeds {limit}, or the batch exceeds {}; use smaller batches",
                crate::config::limits::BATCH
            )));
        }
        // "half" on the kernel paths: f16 activations from the lifting's input
        // to the projection's output (f32 weights and sums in the kernels).
        let x = if self.half_activations(&x.device()) {
            x.cast(FloatDType::F16)
        } else {
            x
        };
        let layout = Layout {
            steps: forward::steps(cfg, &grid),
        };
        let x = layout.parts()[0].iter().try_fold(x, |x, step| self.step(step, x))?;
        Ok((x, layout))
    }

    /// Block `i` of [`Self::blocks`] on its input.
    pub(crate) fn block<const D: usize>(&self, i: usize, x: Tensor<B, D>) -> Result<Tensor<B, D>, ModelError> {
        self.block_forward(&self.blocks[i], x, &forward::block(&self.config, i))
    }

    /// The last block's output unpadded and projected: the model's output.
    pub(crate) fn head<const D: usize>(&self, x: Tensor<B, D>, layout: &Layout) -> Result<Tensor<B, D>, ModelError> {
        let y = layout.parts()[2].iter().try_fold(x, |x, step| self.step(step, x))?;
        Ok(if self.half_activations(&y.device()) {
            y.cast(FloatDType::F32)
        } else {
            y
        })
    }

    /// One step of the forward on `[B, C, *grid]`.
    fn step<const D: usize>(&self, step: &Step, x: Tensor<B, D>) -> Result<Tensor<B, D>, ModelError> {
        let dims = x.dims();
        let mlp =
            |m: &ChannelMlp<B>, x: Tensor<B, D>| unflatten(m.forward(flatten(x), self.matmul_precision), &dims[2..]);
        Ok(match step {
            Step::GridEmbedding => {
                let embedding = grid_embedding::<B, D>(dims[0], &dims[2..], &x.device()).cast(x.dtype());
                Tensor::cat(vec![x, embedding], 1)
            }
            Step::Lift(_) => mlp(&self.lifting, x),
            Step::Pad(padding) => pad(x, padding),
            Step::Block(block) => self.block_forward(&self.blocks[block.index], x, block)?,
            Step::Unpad(padding) => unpad(x, padding),
            Step::Project(_) => mlp(&self.projection, x),
        })
    }

    /// Whether activations are f16 tensors: `half` on the kernel paths of a
    /// device with f16 tensors (elsewhere, the CPU's backends and the
    /// reference path, `half` rounds the spectral blocks' inputs and outputs).
    fn half_activations(&self, device: &B::Device) -> bool {
        self.block_precision() == BlockPrecision::Half
            && self.spectral_impl != SpectralImpl::Reference
            && B::supports_dtype(device, burn::tensor::DType::F16)
    }

    /// One block, post-activation (neuraloperator's default) or pre-activation.
    fn block_forward<const D: usize>(
        &self,
        block: &FnoBlock<B>,
        x: Tensor<B, D>,
        step: &forward::Block,
    ) -> Result<Tensor<B, D>, ModelError> {
        if step.preactivation || step.norm.is_some() {
            return self.normed_block_forward(block, x, step);
        }
        // Post-activation without norms, neuraloperator's default: each skip
        // addition and GELU in the epilogue of a 1×1 convolution's kernel.
        let spatial = x.dims()[2..].to_vec();
        let flat = flatten(x.clone());
        let precision = self.matmul_precision;
        let input = if step.stabilizer { x.tanh() } else { x };
        let spectral = flatten(self.spectral(block, input, &step.spectral)?);
        let y = match &block.fno_skip {
            Some(Skip { linear: Some(conv), .. }) => {
                let residual = Residual {
                    values: spectral,
                    gate: None,
                };
                conv.forward_finished(flat.clone(), Some(residual), step.activation, precision)
            }
            skip => {
                let y = match skip {
                    Some(s) => add(spectral, s.residual(flat.clone(), precision)),
                    None => spectral,
                };
                if step.activation {
                    gelu(y)
                } else {
                    y
                }
            }
        };
        // As neuraloperator: the MLP's skip only with an MLP, GELU again either way.
        let y = match &block.channel_mlp {
            Some(mlp) => {
                let skip = block.channel_mlp_skip.as_ref().map(|s| s.residual(flat, precision));
                mlp.forward_finished(y, skip, step.activation, precision)
            }
            None if step.activation => gelu(y),
            None => y,
        };
        Ok(unflatten(y, &spatial))
    }

    /// A block with norms, or pre-activation: element-wise ops between the norms.
    fn normed_block_forward<const D: usize>(
        &self,
        block: &FnoBlock<B>,
        x: Tensor<B, D>,
        step: &forward::Block,
    ) -> Result<Tensor<B, D>, ModelError> {
        let spatial = x.dims()[2..].to_vec();
        let pre = step.preactivation;
        // Pre-activation blocks activate (and normalise) before everything else.
        let x = if pre {
            let x = flatten(gelu(x));
            unflatten(
                match block.norms.first() {
                    Some(norm) => norm.forward(x),
                    None => x,
                },
                &spatial,
            )
        } else {
            x
        };
        let flat = flatten(x.clone());
        let precision = self.matmul_precision;
        let fno_skip = block.fno_skip.as_ref().map(|s| s.forward(flat.clone(), precision));
        let mlp_skip = block.channel_mlp_skip.as_ref().map(|s| s.forward(flat, precision));
        let input = if step.stabilizer { x.tanh() } else { x };
        let mut y = flatten(self.spectral(block, input, &step.spectral)?);
        if let (false, Some(norm)) = (pre, block.norms.first()) {
            y = norm.forward(y);
        }
        if let Some(skip) = fno_skip {
            y = y + skip;
        }
        if step.activation {
            y = gelu(y);
        }
        if let (true, Some(norm)) = (pre, block.norms.get(1)) {
            y = norm.forward(y);
        }
        if let Some(mlp) = &block.channel_mlp {
            y = mlp.forward(y, precision);
            if let Some(skip) = mlp_skip {
                y = y + skip;
            }
        }
        if !pre {
            if let Some(norm) = block.norms.get(1) {
                y = norm.forward(y);
            }
            if step.activation {
                y = gelu(y);
            }
        }
        Ok(unflatten(y, &spatial))
    }

    fn spectral<const D: usize>(
        &self,
        block: &FnoBlock<B>,
        x: Tensor<B, D>,
        spec: &SpectralConvSpec,
    ) -> Result<Tensor<B, D>, ModelError> {
        let precision = self.block_precision();
        let spec = spec
            .clone()
            .fault_tolerance(self.fault_tolerance)
            .fft_planning(self.fft_planning);
        // "half" on the reference path: the block's input and output rounded to f16.
        let rounded = precision == BlockPrecision::Half && !self.half_activations(&x.device());
        let x = if rounded { round_to(x, Precision::F16) } else { x };
        let weight = FactorizedWeight {
            form: self.weight_form.clone(),
            tensors: block.spectral_weights.iter().map(|p| p.val()).collect(),
        };
        let bias = Some(block.spectral_bias.val());
        let y = factorized_spectral_conv(x, &weight, bias, &spec, self.spectral_impl).map_err(ModelError::Spectral)?;
        Ok(if rounded { round_to(y, Precision::F16) } else { y })
    }
}

/// neuraloperator's `GridEmbeddingND` ([`forward::grid_embedding`]) for a batch.
fn grid_embedding<B: Backend, const D: usize>(batch: usize, grid: &[usize], device: &B::Device) -> Tensor<B, D> {
    let channels = forward::grid_embedding(grid);
    let mut shape = [0usize; D];
    shape[0] = 1;
    shape[1] = grid.len();
    shape[2..].copy_from_slice(grid);
    let one = Tensor::<B, 1>::from_floats(channels.as_slice(), device).reshape(shape);
    let mut repeat = [1usize; D];
    repeat[0] = batch;
    one.repeat(&repeat)
}

/// Zeros on both sides of every spatial dim (neuraloperator's domain padding).
fn pad<B: Backend, const D: usize>(mut x: Tensor<B, D>, padding: &[usize]) -> Tensor<B, D> {
    for (d, &p) in padding.iter().enumerate() {
        if p > 0 {
            let mut shape = x.dims();
            shape[d + 2] = p;
            let zeros = Tensor::<B, D>::zeros(shape, &x.device());
            let zeros = if x.dtype() == zeros.dtype() {
                zeros
            } else {
                zeros.cast(x.dtype())
            };
            x = Tensor::cat(vec![zeros.clone(), x, zeros], d + 2);
        }
    }
    x
}

fn unpad<B: Backend, const D: usize>(mut x: Tensor<B, D>, padding: &[usize]) -> Tensor<B, D> {
    for (d, &p) in padding.iter().enumerate() {
        if p > 0 {
            let n = x.dims()[d + 2];
            x = x.narrow(d + 2, p, n - 2 * p);
        }
    }
    x
}

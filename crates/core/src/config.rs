//! The FNO's configuration, named as neuraloperator 2.0's `FNO` arguments so
//! that its `config.json` files parse as they are.

use serde::{Deserialize, Serialize};

use crate::block_precision::neuralop_precision;
pub use crate::block_precision::BlockPrecision;
use crate::error::ModelError;
use crate::factorization::{Factorization, WeightForm};
use crate::rank::Rank;
use crate::spec::InverseShift;

/// The largest sizes a configuration may ask for: a checkpoint's metadata or
/// a configuration file is input, and a model is only built within these.
pub mod limits {
    /// Input, output, hidden and derived channel counts.
    pub const CHANNELS: usize = 1 << 16;
    pub const LAYERS: usize = 1024;
    /// Modes per spatial dim.
    pub const MODES: usize = 1 << 16;
    /// Channel ratios, MLP expansion and factorization rank fraction.
    pub const RATIO: f64 = 1024.0;
    /// `domain_padding`, as a fraction of the grid on each side.
    pub const DOMAIN_PADDING: f64 = 4.0;
    /// Parameters with dense spectral weights: 4 GiB of f32.
    pub const PARAMETERS: u128 = 1 << 30;
    /// Values of one activation of a forward pass (batch × channels × padded
    /// grid, the last dim two longer for its spectrum): what the kernels'
    /// 32-bit indices reach, 16 GiB of f32.
    pub const ACTIVATION_ELEMENTS: u128 = (1 << 32) - 1;
    /// Samples of one forward pass: the kernels put them on a launch grid's
    /// y or z axis, which devices bound by 65,535.
    pub const BATCH: usize = 65535;
}

/// neuraloperator's `domain_padding`: one fraction for every spatial dim or one each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DomainPadding {
    All(f64),
    PerDim(Vec<f64>),
}

/// Every argument of neuraloperator 2.0's `FNO.__init__`, with its defaults.
/// Values this crate does not implement are rejected by [`FnoConfig::validate`]
/// with their name, never ignored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FnoConfig {
    pub n_modes: Vec<usize>,
    pub in_channels: usize,
    pub out_channels: usize,
    pub hidden_channels: usize,
    #[serde(default = "defaults::n_layers")]
    pub n_layers: usize,
    #[serde(default = "defaults::two")]
    pub lifting_channel_ratio: f64,
    #[serde(default = "defaults::two")]
    pub projection_channel_ratio: f64,
    /// `"grid"` (coordinates `i / n` on `[0, 1)` appended as channels) or none.
    #[serde(default = "defaults::grid")]
    pub positional_embedding: Option<String>,
    #[serde(default = "defaults::gelu")]
    pub non_linearity: String,
    /// None, `"instance_norm"` or `"group_norm"`.
    #[serde(default)]
    pub norm: Option<String>,
    #[serde(default)]
    pub complex_data: bool,
    #[serde(default = "defaults::yes")]
    pub use_channel_mlp: bool,
    #[serde(default)]
    pub channel_mlp_dropout: f64,
    #[serde(default = "defaults::half")]
    pub channel_mlp_expansion: f64,
    /// `"linear"`, `"identity"`, `"soft-gating"` or none.
    #[serde(default = "defaults::soft_gating")]
    pub channel_mlp_skip: Option<String>,
    #[serde(default = "defaults::linear")]
    pub fno_skip: Option<String>,
    #[serde(default)]
    pub resolution_scaling_factor: Option<serde_json::Value>,
    #[serde(default)]
    pub domain_padding: Option<DomainPadding>,
    /// Under neuraloperator's names (`"full"`, `"mixed"`, `"half"`).
    #[serde(default, with = "neuralop_precision")]
    pub fno_block_precision: BlockPrecision,
    /// None or `"tanh"` (applied to the spectral convolution's input).
    #[serde(default)]
    pub stabilizer: Option<String>,
    #[serde(default)]
    pub max_n_modes: Option<Vec<usize>>,
    #[serde(default)]
    pub factorization: Option<String>,
    /// A fraction of the dense weight's parameters (`0.1`), or explicit ranks
    /// (`8`, `[64, 29, 7, 4]`), as tensorly reads them ([`Rank`]).
    #[serde(default)]
    pub rank: Rank,
    #[serde(default)]
    pub fixed_rank_modes: bool,
    #[serde(default = "defaults::factorized")]
    pub implementation: String,
    #[serde(default)]
    pub decomposition_kwargs: Option<serde_json::Value>,
    #[serde(default)]
    pub separable: bool,
    #[serde(default)]
    pub preactivation: bool,
    /// neuraloperator main's GroupNorm group count; one group (2.0.0's) is implemented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm_groups: Option<usize>,
    /// neuraloperator main's kernel size of the linear skip's bias
    /// convolution; 1 (2.0.0's pointwise skip) is implemented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conv_bias_kernel: Option<usize>,
    /// neuraloperator main's choice of a Hermitian projection (true) or its
    /// device's irfftn (false) before the inverse's last axis. Either is read:
    /// the projection is what PyTorch's CPU irfftn computes, and what we do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_hermitian_symmetry: Option<bool>,
    /// Ours, not neuraloperator's: `"fftshift"` (2.0.0) or `"ifftshift"`
    /// (main since PR #688), how the blocks shift their modes back before the
    /// inverse transform. Unset: main's where any of main's arguments above
    /// is given, else 2.0.0's ([`FnoConfig::inverse_shift`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inverse_shift: Option<String>,
}

/// The values of [`FnoConfig::inverse_shift`], by name.
pub const INVERSE_SHIFTS: [(&str, InverseShift); 2] = [
    ("fftshift", InverseShift::Fftshift),
    ("ifftshift", InverseShift::Ifftshift),
];

mod defaults {
    pub fn n_layers() -> usize {
        4
    }
    pub fn two() -> f64 {
        2.0
    }
    pub fn half() -> f64 {
        0.5
    }
    pub fn yes() -> bool {
        true
    }
    pub fn grid() -> Option<String> {
        Some("grid".into())
    }
    pub fn gelu() -> String {
        "gelu".into()
    }
    pub fn soft_gating() -> Option<String> {
        Some("soft-gating".into())
    }
    pub fn linear() -> Option<String> {
        Some("linear".into())
    }
    pub fn factorized() -> String {
        "factorized".into()
    }
}

/// A skip connection of an FNO block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipKind {
    /// A bias-free 1×1 convolution.
    Linear,
    Identity,
    /// A per-channel weight.
    SoftGating,
}

/// Normalisation inside the FNO blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// Per sample and channel over the spatial dims, no parameters.
    Instance,
    /// One group: per sample over channels and space, then a per-channel affine map.
    Group,
}

fn skip_kind(name: &str, value: &Option<String>) -> Result<Option<SkipKind>, ModelError> {
    match value.as_deref().map(str::to_lowercase).as_deref() {
        None => Ok(None),
        Some("linear") => Ok(Some(SkipKind::Linear)),
        Some("identity") => Ok(Some(SkipKind::Identity)),
        Some("soft-gating") => Ok(Some(SkipKind::SoftGating)),
        Some(other) => Err(ModelError::Config(format!(
            "{name} = {other:?}: expected \"linear\", \"identity\", \"soft-gating\" or null"
        ))),
    }
}

/// Python's `round`: halves go to the even neighbour.
pub(crate) fn round_half_even(v: f64) -> usize {
    v.round_ties_even().max(0.0) as usize
}

impl FnoConfig {
    /// The fixture-sized default: neuraloperator's defaults around the given sizes.
    pub fn new(n_modes: &[usize], in_channels: usize, out_channels: usize, hidden_channels: usize) -> Self {
        serde_json::from_value(serde_json::json!({
            "n_modes": n_modes,
            "in_channels": in_channels,
            "out_channels": out_channels,
            "hidden_channels": hidden_channels,
        }))
        .expect("the required fields alone form a valid configuration")
    }

    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        // A key may hold an escaped line break: the error stays one line.
        let cfg: FnoConfig = serde_json::from_str(text).map_err(|e| {
            let text: String = (e.to_string().chars())
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.into()
                    }
                })
                .collect();
            ModelError::Config(format!("bad FNO configuration: {text}"))
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("configurations serialise")
    }

    pub fn dims(&self) -> usize {
        self.n_modes.len()
    }

    /// Channels of the lifting's hidden layer (`int(ratio · hidden)`; 0: one layer).
    pub fn lifting_channels(&self) -> usize {
        (self.lifting_channel_ratio * self.hidden_channels as f64) as usize
    }

    pub fn projection_channels(&self) -> usize {
        (self.projection_channel_ratio * self.hidden_channels as f64) as usize
    }

    /// Channels of the widest activation: input (with coordinates), lifting,
    /// hidden, channel MLP, projection or output.
    pub fn widest_channels(&self) -> usize {
        let mlp = if self.use_channel_mlp {
            self.channel_mlp_channels()
        } else {
            0
        };
        [
            self.lifting_in_channels(),
            self.lifting_channels(),
            self.hidden_channels,
            mlp,
            self.projection_channels(),
            self.out_channels,
        ]
        .into_iter()
        .max()
        .expect("six counts")
    }

    /// Hidden channels of each block's channel MLP (`round(hidden · expansion)`).
    pub fn channel_mlp_channels(&self) -> usize {
        round_half_even(self.hidden_channels as f64 * self.channel_mlp_expansion)
    }

    /// Channels the lifting reads: the input's plus one per coordinate.
    pub fn lifting_in_channels(&self) -> usize {
        self.in_channels + if self.grid_embedding() { self.dims() } else { 0 }
    }

    pub fn grid_embedding(&self) -> bool {
        self.positional_embedding.is_some()
    }

    pub fn fno_skip_kind(&self) -> Option<SkipKind> {
        skip_kind("fno_skip", &self.fno_skip).expect("validated")
    }

    pub fn channel_mlp_skip_kind(&self) -> Option<SkipKind> {
        skip_kind("channel_mlp_skip", &self.channel_mlp_skip).expect("validated")
    }

    pub fn block_precision(&self) -> BlockPrecision {
        self.fno_block_precision
    }

    pub fn norm_kind(&self) -> Option<NormKind> {
        match self.norm.as_deref() {
            Some("instance_norm") => Some(NormKind::Instance),
            Some("group_norm") => Some(NormKind::Group),
            _ => None,
        }
    }

    /// True where an argument only neuraloperator's main branch has is given.
    pub fn has_main_arguments(&self) -> bool {
        self.norm_groups.is_some() || self.conv_bias_kernel.is_some() || self.enforce_hermitian_symmetry.is_some()
    }

    /// How the blocks shift their modes back: `inverse_shift` where given,
    /// else main's if the configuration has main's arguments, else 2.0.0's.
    pub fn inverse_shift(&self) -> InverseShift {
        match self.inverse_shift.as_deref() {
            Some(name) => INVERSE_SHIFTS.iter().find(|(n, _)| *n == name).expect("validated").1,
            None if self.has_main_arguments() => InverseShift::Ifftshift,
            None => InverseShift::Fftshift,
        }
    }

    /// The weight's stored modes: the centred counts, then `m // 2 + 1` bins of the last dim.
    pub fn weight_modes(&self) -> Vec<usize> {
        let mut modes = self.n_modes.clone();
        if let Some(last) = modes.last_mut() {
            *last = *last / 2 + 1;
        }
        modes
    }

    /// Per spatial dim, the zeros added on each side of a grid of `grid` points.
    pub fn padding_for(&self, grid: &[usize]) -> Vec<usize> {
        let fractions = match &self.domain_padding {
            None => vec![0.0; grid.len()],
            Some(DomainPadding::All(p)) => vec![*p; grid.len()],
            Some(DomainPadding::PerDim(p)) => p.clone(),
        };
        fractions
            .iter()
            .zip(grid)
            .map(|(p, &n)| round_half_even(p * n as f64))
            .collect()
    }

    /// Checks every size the model is built from: positive, within
    /// [`limits`], and the parameters they imply (dense spectral weights
    /// counted) at most [`limits::PARAMETERS`].
    fn check_sizes(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::Config(m));
        for (name, value) in [
            ("in_channels", self.in_channels),
            ("out_channels", self.out_channels),
            ("hidden_channels", self.hidden_channels),
        ] {
            if !(1..=limits::CHANNELS).contains(&value) {
                return bad(format!("{name} = {value}: expected 1 to {}", limits::CHANNELS));
            }
        }
        if !(1..=limits::LAYERS).contains(&self.n_layers) {
            return bad(format!(
                "n_layers = {}: expected 1 to {}",
                self.n_layers,
                limits::LAYERS
            ));
        }
        if let Some(m) = self.n_modes.iter().find(|&&m| !(1..=limits::MODES).contains(&m)) {
            return bad(format!(
                "n_modes {:?}: each must be 1 to {} (found {m})",
                self.n_modes,
                limits::MODES
            ));
        }
        let ratios = [
            ("lifting_channel_ratio", self.lifting_channel_ratio, 0.0),
            (
                "projection_channel_ratio",
                self.projection_channel_ratio,
                f64::MIN_POSITIVE,
            ),
            ("channel_mlp_expansion", self.channel_mlp_expansion, f64::MIN_POSITIVE),
        ];
        for (name, value, least) in ratios {
            if !(value >= least && value <= limits::RATIO) {
                return bad(format!(
                    "{name} = {value}: expected a number {} {least} and at most {}",
                    if least > 0.0 { "above" } else { "of at least" },
                    limits::RATIO
                ));
            }
        }
        let mut derived = vec![("projection channels", self.projection_channels())];
        if self.use_channel_mlp {
            derived.push(("channel MLP channels", self.channel_mlp_channels()));
        }
        for (name, value) in derived {
            if !(1..=limits::CHANNELS).contains(&value) {
                return bad(format!(
                    "{name} = {value} (from hidden_channels and its ratio): expected 1 to {}",
                    limits::CHANNELS
                ));
            }
        }
        if self.lifting_channels() > limits::CHANNELS {
            return bad(format!(
                "lifting channels = {} (from hidden_channels and lifting_channel_ratio): at most {}",
                self.lifting_channels(),
                limits::CHANNELS
            ));
        }
        let padding = match &self.domain_padding {
            None => vec![],
            Some(DomainPadding::All(p)) => vec![*p],
            Some(DomainPadding::PerDim(p)) => p.clone(),
        };
        if let Some(p) = padding.iter().find(|p| !(0.0..=limits::DOMAIN_PADDING).contains(*p)) {
            return bad(format!(
                "domain_padding {p}: expected a fraction of the grid from 0 to {}",
                limits::DOMAIN_PADDING
            ));
        }
        let rank_fits = match &self.rank {
            Rank::Fraction(f) => *f > 0.0 && *f <= limits::RATIO,
            Rank::Count(r) => *r > 0,
            Rank::PerMode(ranks) => !ranks.is_empty() && !ranks.contains(&0),
        };
        if !rank_fits {
            return bad(format!(
                "rank = {}: expected a fraction above 0 and at most {}, or positive ranks",
                serde_json::to_string(&self.rank).unwrap_or_default(),
                limits::RATIO
            ));
        }
        let parameters = self.parameter_count()?;
        if parameters > limits::PARAMETERS {
            return bad(format!(
                "the configuration implies {parameters} parameters (spectral weights {:?} per layer): at most {} are allowed",
                self.weight_form()?.tensors(),
                limits::PARAMETERS
            ));
        }
        Ok(())
    }

    /// The form of the spectral weights: dense or factorized, with their
    /// ranks (an error where the rank does not fit the weight).
    pub fn weight_form(&self) -> Result<WeightForm, ModelError> {
        let h = self.hidden_channels;
        let mut shape = if self.separable { vec![h] } else { vec![h, h] };
        shape.extend(self.weight_modes());
        let factorization = Factorization::parse(self.factorization.as_deref())
            .ok_or_else(|| ModelError::Config(format!("unknown factorization {:?}", self.factorization)))?;
        WeightForm::of(factorization, self.separable, shape, &self.rank, self.fixed_rank_modes)
            .map_err(|e| ModelError::Config(format!("rank: {e}")))
    }

    /// Real parameters of the model (each complex value of the spectral
    /// weights counts two). Exact in `u128` for sizes within [`limits`].
    pub fn parameter_count(&self) -> Result<u128, ModelError> {
        let h = self.hidden_channels as u128;
        let dense = |a: usize, b: usize| a as u128 * b as u128 + b as u128;
        let spectral: u128 = self
            .weight_form()?
            .tensors()
            .iter()
            .map(|(_, shape)| shape.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128)))
            .fold(0u128, u128::saturating_add);
        let lifting = match self.lifting_channels() {
            0 => dense(self.lifting_in_channels(), self.hidden_channels),
            l => dense(self.lifting_in_channels(), l) + dense(l, self.hidden_channels),
        };
        let mlp = if self.use_channel_mlp {
            dense(self.hidden_channels, self.channel_mlp_channels())
                + dense(self.channel_mlp_channels(), self.hidden_channels)
        } else {
            0
        };
        let skip = |kind: Option<SkipKind>| match kind {
            Some(SkipKind::Linear) => h * h,
            Some(SkipKind::SoftGating) => h,
            Some(SkipKind::Identity) | None => 0,
        };
        let skips = skip(self.fno_skip_kind())
            + if self.use_channel_mlp {
                skip(self.channel_mlp_skip_kind())
            } else {
                0
            };
        let norms = if self.norm_kind() == Some(NormKind::Group) {
            4 * h
        } else {
            0
        };
        // Spectral weight (complex) and bias, skips, channel MLP, norms.
        // Saturating: explicit ranks can ask for more than u128 holds.
        let block = [h, skips, mlp, norms]
            .into_iter()
            .fold(spectral.saturating_mul(2), u128::saturating_add);
        let projection = dense(self.hidden_channels, self.projection_channels())
            + dense(self.projection_channels(), self.out_channels);
        Ok(block
            .saturating_mul(self.n_layers as u128)
            .saturating_add(lifting + projection))
    }

    /// Rejects what this crate does not implement and sizes beyond
    /// [`limits`], naming the argument. Every configuration passes here
    /// before a model is built, whether it comes from a file, a checkpoint's
    /// metadata or code.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::Config(m));
        if !(1..=3).contains(&self.dims()) {
            return bad(format!(
                "n_modes has {} entries: 1 to 3 spatial dims are supported",
                self.dims()
            ));
        }
        match self.positional_embedding.as_deref() {
            None | Some("grid") => {}
            Some(other) => return bad(format!("positional_embedding = {other:?}: expected \"grid\" or null")),
        }
        if self.non_linearity.to_lowercase() != "gelu" {
            return bad(format!(
                "non_linearity = {:?}: only gelu is implemented",
                self.non_linearity
            ));
        }
        match self.norm.as_deref() {
            None | Some("instance_norm") | Some("group_norm") => {}
            Some(other) => {
                return bad(format!(
                    "norm = {other:?}: expected null, \"instance_norm\" or \"group_norm\""
                ))
            }
        }
        skip_kind("fno_skip", &self.fno_skip)?;
        skip_kind("channel_mlp_skip", &self.channel_mlp_skip)?;
        self.validate_main_arguments()?;
        if !(0.0..1.0).contains(&self.channel_mlp_dropout) {
            return bad(format!(
                "channel_mlp_dropout = {}: expected [0, 1)",
                self.channel_mlp_dropout
            ));
        }
        let unsupported = [
            ("complex_data", self.complex_data),
            (
                "resolution_scaling_factor",
                self.resolution_scaling_factor.as_ref().is_some_and(|v| !v.is_null()),
            ),
            ("stabilizer", self.stabilizer.as_deref().is_some_and(|s| s != "tanh")),
            (
                "max_n_modes",
                self.max_n_modes.as_ref().is_some_and(|m| *m != self.n_modes),
            ),
        ];
        if let Some((name, _)) = unsupported.iter().find(|(_, on)| *on) {
            return bad(format!("{name}: only neuraloperator's default is implemented"));
        }
        if Factorization::parse(self.factorization.as_deref()).is_none() {
            return bad(format!(
                "factorization = {:?}: expected null, \"dense\", \"tucker\", \"cp\" or \"tt\"",
                self.factorization.as_deref().unwrap_or_default()
            ));
        }
        if let Some(DomainPadding::PerDim(p)) = &self.domain_padding {
            if p.len() != self.dims() {
                return bad(format!(
                    "domain_padding has {} entries for {} dims",
                    p.len(),
                    self.dims()
                ));
            }
        }
        // Last: the parameter count reads the skip kinds checked above.
        self.check_sizes()
    }

    /// neuraloperator main's arguments and the inverse shift's name.
    fn validate_main_arguments(&self) -> Result<(), ModelError> {
        let bad = |m: String| Err(ModelError::Config(m));
        if let Some(name) = self.inverse_shift.as_deref() {
            if !INVERSE_SHIFTS.iter().any(|(n, _)| *n == name) {
                return bad(format!(
                    "inverse_shift = {name:?}: expected \"fftshift\" or \"ifftshift\""
                ));
            }
        }
        match self.norm_groups {
            Some(0) => return bad("norm_groups = 0: expected at least 1".into()),
            Some(g) if g > 1 && self.norm_kind() == Some(NormKind::Group) => {
                return bad(format!("norm_groups = {g}: only one group is implemented"))
            }
            _ => {}
        }
        match self.conv_bias_kernel {
            Some(k) if k != 1 => bad(format!(
                "conv_bias_kernel = {k}: only 1 (a pointwise skip) is implemented"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neuraloperator_defaults_and_derived_sizes() {
        let cfg = FnoConfig::from_json(
            r#"{"n_modes": [8, 8], "in_channels": 1, "out_channels": 1, "hidden_channels": 16, "n_layers": 4, "projection_channel_ratio": 2}"#,
        )
        .unwrap();
        assert_eq!(cfg.lifting_channels(), 32);
        assert_eq!(cfg.projection_channels(), 32);
        assert_eq!(cfg.channel_mlp_channels(), 8);
        assert_eq!(cfg.lifting_in_channels(), 3);
        assert_eq!(cfg.weight_modes(), vec![8, 5]);
        assert_eq!(cfg.fno_skip_kind(), Some(SkipKind::Linear));
        assert_eq!(cfg.channel_mlp_skip_kind(), Some(SkipKind::SoftGating));
        // Python rounds halves to even: 0.25·10 = 2.5 → 2, 0.25·14 = 3.5 → 4.
        let padded = FnoConfig {
            domain_padding: Some(DomainPadding::All(0.25)),
            ..cfg.clone()
        };
        assert_eq!(padded.padding_for(&[10, 14]), vec![2, 4]);
        assert_eq!(FnoConfig::from_json(&cfg.to_json()).unwrap(), cfg);
    }

    #[test]
    fn a_key_with_a_line_break_is_named_on_one_line() {
        let e = FnoConfig::from_json(r#"{"in_ch\nannels": 1}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `in_ch\\nannels`") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn unknown_and_unsupported_arguments_are_named() {
        let err = FnoConfig::from_json(
            r#"{"n_modes": [8], "in_channels": 1, "out_channels": 1, "hidden_channels": 4, "n_layer": 3}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("n_layer"), "{err}");
        let err = FnoConfig::from_json(
            r#"{"n_modes": [8], "in_channels": 1, "out_channels": 1, "hidden_channels": 4, "factorization": "khatri-rao"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("factorization"), "{err}");
        let err = FnoConfig::from_json(
            r#"{"n_modes": [8], "in_channels": 1, "out_channels": 1, "hidden_channels": 4, "fno_skip": "conv"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("fno_skip"), "{err}");
    }

    /// neuraloperator main's arguments: read, main's shift where any is
    /// given, values beyond 2.0.0's model refused by name; `inverse_shift`
    /// overrides.
    #[test]
    fn mains_arguments_pick_mains_shift() {
        let base = r#""n_modes": [8, 8], "in_channels": 1, "out_channels": 1, "hidden_channels": 4"#;
        let cfg = |extra: &str| FnoConfig::from_json(&format!("{{{base}{extra}}}"));
        assert_eq!(cfg("").unwrap().inverse_shift(), InverseShift::Fftshift);
        for main in [
            r#", "enforce_hermitian_symmetry": false"#,
            r#", "norm_groups": 4"#,
            r#", "conv_bias_kernel": 1"#,
        ] {
            assert_eq!(cfg(main).unwrap().inverse_shift(), InverseShift::Ifftshift, "{main}");
        }
        let chosen = cfg(r#", "norm_groups": 1, "inverse_shift": "fftshift""#).unwrap();
        assert_eq!(chosen.inverse_shift(), InverseShift::Fftshift);
        assert_eq!(FnoConfig::from_json(&chosen.to_json()).unwrap(), chosen);
        for (extra, named) in [
            (r#", "conv_bias_kernel": 3"#, "conv_bias_kernel = 3"),
            (r#", "norm": "group_norm", "norm_groups": 2"#, "norm_groups = 2"),
            (r#", "norm_groups": 0"#, "norm_groups = 0"),
            (r#", "inverse_shift": "roll""#, "inverse_shift = \"roll\""),
        ] {
            let err = cfg(extra).unwrap_err().to_string();
            assert!(err.contains(named), "{extra}: {err}");
        }
    }

    /// Sizes from a file are checked before anything is built: each case is
    /// one that aborted or panicked (allocation, NaN init) when it was not.
    #[test]
    fn sizes_beyond_the_limits_are_named() {
        let base = r#""n_modes": [8, 8], "in_channels": 1, "out_channels": 1, "hidden_channels": 16"#;
        for (extra, named) in [
            (r#""projection_channel_ratio": 0"#, "projection_channel_ratio = 0"),
            (r#""channel_mlp_expansion": 0.001"#, "channel MLP channels = 0"),
            (r#""channel_mlp_expansion": -1"#, "channel_mlp_expansion = -1"),
            (r#""lifting_channel_ratio": 1e30"#, "lifting_channel_ratio"),
            (r#""domain_padding": 1e300"#, "domain_padding"),
            (r#""domain_padding": [0.25, -1]"#, "domain_padding -1"),
            (r#""n_layers": 1000000"#, "n_layers = 1000000"),
            (r#""rank": 0"#, "rank = 0"),
            // Ranks whose factors' sizes overflow (the fuzzer's find).
            (
                r#""factorization": "tucker", "rank": 9223372036854775807"#,
                "parameters",
            ),
            (
                r#""factorization": "tt", "rank": [1, 4294967296, 4294967296, 4294967296, 1]"#,
                "parameters",
            ),
        ] {
            let err = FnoConfig::from_json(&format!("{{{base}, {extra}}}"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(named), "{extra}: {err}");
        }
        for (json, named) in [
            (
                r#"{"n_modes": [100000, 100000], "in_channels": 1, "out_channels": 1, "hidden_channels": 16}"#,
                "n_modes",
            ),
            (
                r#"{"n_modes": [8], "in_channels": 4294967296, "out_channels": 1, "hidden_channels": 16}"#,
                "in_channels = 4294967296",
            ),
            (
                r#"{"n_modes": [8], "in_channels": 1, "out_channels": 1, "hidden_channels": 9223372036854775807}"#,
                "hidden_channels",
            ),
            (
                r#"{"n_modes": [8], "in_channels": 1, "out_channels": 0, "hidden_channels": 4}"#,
                "out_channels = 0",
            ),
            (
                r#"{"n_modes": [4096, 4096], "in_channels": 1, "out_channels": 1, "hidden_channels": 256}"#,
                "parameters",
            ),
        ] {
            let err = FnoConfig::from_json(json).unwrap_err().to_string();
            assert!(err.contains(named), "{json}: {err}");
        }
        // The parameter count is Burn's count of the built model (1 192 801 at
        // n_modes [16, 16], hidden 32, 4 layers; examples/burn_user.rs prints it).
        let mut cfg = FnoConfig::new(&[16, 16], 1, 1, 32);
        cfg.n_layers = 4;
        assert_eq!(cfg.parameter_count().unwrap(), 1_192_801);
    }
}

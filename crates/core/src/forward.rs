//! An FNO's forward as a plain list of steps, derived from its configuration
//! and its input's grid: what every engine (the Burn model, the Candle one)
//! runs, each step with its own ops. Activations are `[B, C, *grid]`.

use fno_kernels::fft::Norm;

use crate::config::{FnoConfig, NormKind, SkipKind};
use crate::spec::SpectralConvSpec;

/// A channel MLP (neuraloperator's `ChannelMLP`): 1×1 convolutions through
/// `channels`, GELU between them, dropout after each while training.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    /// Its parameters' state-dict prefix (`lifting`, `fno_blocks.channel_mlp.3`).
    pub name: String,
    pub channels: Vec<usize>,
    pub dropout: f64,
}

/// A skip connection and its parameters' state-dict prefix.
#[derive(Clone, Debug, PartialEq)]
pub struct Skip {
    pub name: String,
    pub kind: SkipKind,
}

/// One FNO block on `[B, channels, *padded grid]`. Post-activation (the
/// default): spectral convolution, norm 0, + FNO skip, GELU, channel MLP +
/// its skip, norm 1, GELU. Pre-activation: GELU and norm 0 first, then the
/// convolution + skip, norm 1 after the GELU, the MLP last. Blocks but the
/// last end in GELU (`activation`).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub index: usize,
    pub channels: usize,
    /// The spectral convolution: the stored modes, neuraloperator's `forward`
    /// norm and inverse shift, spectra of the block precision.
    pub spectral: SpectralConvSpec,
    /// `tanh` on the convolution's input (neuraloperator's stabilizer).
    pub stabilizer: bool,
    pub fno_skip: Option<Skip>,
    pub channel_mlp: Option<Mlp>,
    /// Present only with a channel MLP.
    pub channel_mlp_skip: Option<Skip>,
    /// Two norms per block, state-dict indices `2·index` and `2·index + 1`.
    pub norm: Option<NormKind>,
    pub preactivation: bool,
    /// GELU at the end (every block but the last).
    pub activation: bool,
}

/// One step of the forward, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Appends neuraloperator's grid embedding: one channel per spatial dim
    /// ([`grid_embedding`]).
    GridEmbedding,
    Lift(Mlp),
    /// Zeros on both sides of every spatial dim (domain padding), this many.
    Pad(Vec<usize>),
    Block(Block),
    /// Removes [`Step::Pad`]'s zeros.
    Unpad(Vec<usize>),
    Project(Mlp),
}

/// The forward of a model of `cfg` on an input of spatial size `grid`.
pub fn steps(cfg: &FnoConfig, grid: &[usize]) -> Vec<Step> {
    let padding = cfg.padding_for(grid);
    let padded = padding.iter().any(|&p| p > 0);
    let mut steps = Vec::with_capacity(cfg.n_layers + 5);
    if cfg.grid_embedding() {
        steps.push(Step::GridEmbedding);
    }
    steps.push(Step::Lift(lifting(cfg)));
    if padded {
        steps.push(Step::Pad(padding.clone()));
    }
    steps.extend((0..cfg.n_layers).map(|i| Step::Block(block(cfg, i))));
    if padded {
        steps.push(Step::Unpad(padding));
    }
    steps.push(Step::Project(projection(cfg)));
    steps
}

pub fn lifting(cfg: &FnoConfig) -> Mlp {
    let channels = match cfg.lifting_channels() {
        0 => vec![cfg.lifting_in_channels(), cfg.hidden_channels],
        l => vec![cfg.lifting_in_channels(), l, cfg.hidden_channels],
    };
    Mlp {
        name: "lifting".into(),
        channels,
        dropout: 0.0,
    }
}

pub fn projection(cfg: &FnoConfig) -> Mlp {
    Mlp {
        name: "projection".into(),
        channels: vec![cfg.hidden_channels, cfg.projection_channels(), cfg.out_channels],
        dropout: 0.0,
    }
}

/// Block `index` of a model of `cfg`.
pub fn block(cfg: &FnoConfig, index: usize) -> Block {
    let h = cfg.hidden_channels;
    let skip = |kind: Option<SkipKind>, name: &str| {
        kind.map(|kind| Skip {
            name: format!("fno_blocks.{name}.{index}"),
            kind,
        })
    };
    let channel_mlp = cfg.use_channel_mlp.then(|| Mlp {
        name: format!("fno_blocks.channel_mlp.{index}"),
        channels: vec![h, cfg.channel_mlp_channels(), h],
        dropout: cfg.channel_mlp_dropout,
    });
    Block {
        index,
        channels: h,
        spectral: SpectralConvSpec::new(&cfg.weight_modes())
            .norm(Norm::Forward)
            .inverse_shift(cfg.inverse_shift())
            .spectrum_precision(cfg.fno_block_precision.spectrum()),
        stabilizer: cfg.stabilizer.is_some(),
        fno_skip: skip(cfg.fno_skip_kind(), "fno_skips"),
        channel_mlp_skip: skip(
            cfg.channel_mlp_skip_kind().filter(|_| channel_mlp.is_some()),
            "channel_mlp_skips",
        ),
        channel_mlp,
        norm: cfg.norm_kind(),
        preactivation: cfg.preactivation,
        activation: index + 1 < cfg.n_layers,
    }
}

/// neuraloperator's `GridEmbeddingND` on `[0, 1]^d` for one sample,
/// `[d, *grid]` row-major: channel `d` holds `i_d / n_d`.
pub fn grid_embedding(grid: &[usize]) -> Vec<f32> {
    let total: usize = grid.iter().product();
    (0..grid.len())
        .flat_map(|d| {
            let inner: usize = grid[d + 1..].iter().product();
            (0..total).map(move |flat| ((flat / inner) % grid[d]) as f32 / grid[d] as f32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> FnoConfig {
        FnoConfig::from_json(json).unwrap()
    }

    #[test]
    fn the_default_fno_is_embedding_lift_blocks_projection() {
        let cfg = config(r#"{"n_modes": [8, 6], "in_channels": 1, "out_channels": 2, "hidden_channels": 16}"#);
        let steps = steps(&cfg, &[20, 12]);
        assert_eq!(steps.len(), 3 + cfg.n_layers);
        assert_eq!(steps[0], Step::GridEmbedding);
        let Step::Lift(lift) = &steps[1] else {
            panic!("{steps:?}")
        };
        assert_eq!(lift.channels, vec![3, cfg.lifting_channels(), 16]);
        let blocks: Vec<&Block> = steps
            .iter()
            .filter_map(|s| if let Step::Block(b) = s { Some(b) } else { None })
            .collect();
        assert_eq!(blocks.len(), 4);
        assert!(blocks[..3].iter().all(|b| b.activation) && !blocks[3].activation);
        let b = blocks[2];
        assert_eq!(b.spectral.modes, vec![8, 4]);
        assert_eq!(b.spectral.norm, Norm::Forward);
        assert_eq!(
            b.fno_skip.as_ref().map(|s| (s.name.as_str(), s.kind)),
            Some(("fno_blocks.fno_skips.2", SkipKind::Linear))
        );
        assert_eq!(b.channel_mlp.as_ref().unwrap().channels, vec![16, 8, 16]);
        assert_eq!(b.channel_mlp_skip.as_ref().unwrap().kind, SkipKind::SoftGating);
        let Step::Project(p) = steps.last().unwrap() else {
            panic!()
        };
        assert_eq!(p.channels, vec![16, cfg.projection_channels(), 2]);
    }

    #[test]
    fn padding_wraps_the_blocks_and_options_reach_them() {
        let cfg = config(
            r#"{"n_modes": [8], "in_channels": 2, "out_channels": 1, "hidden_channels": 4, "n_layers": 2,
                "domain_padding": 0.25, "positional_embedding": null, "use_channel_mlp": false,
                "preactivation": true, "norm": "group_norm", "stabilizer": "tanh", "fno_block_precision": "mixed"}"#,
        );
        let steps = steps(&cfg, &[40]);
        let kinds: Vec<&str> = steps
            .iter()
            .map(|s| match s {
                Step::GridEmbedding => "embed",
                Step::Lift(_) => "lift",
                Step::Pad(_) => "pad",
                Step::Block(_) => "block",
                Step::Unpad(_) => "unpad",
                Step::Project(_) => "project",
            })
            .collect();
        assert_eq!(kinds, ["lift", "pad", "block", "block", "unpad", "project"]);
        assert_eq!(steps[1], Step::Pad(vec![10]));
        let Step::Block(b) = &steps[2] else { panic!() };
        assert!(b.preactivation && b.stabilizer && b.channel_mlp.is_none() && b.channel_mlp_skip.is_none());
        assert_eq!(b.norm, Some(NormKind::Group));
        assert_eq!(b.spectral.spectrum_precision, fno_kernels::precision::Precision::F16);
    }

    #[test]
    fn grid_embedding_counts_each_dim_from_zero_to_one() {
        let e = grid_embedding(&[2, 3]);
        assert_eq!(e[..6], [0.0, 0.0, 0.0, 0.5, 0.5, 0.5]);
        let third = 1.0 / 3.0;
        assert_eq!(e[6..], [0.0, third, 2.0 * third, 0.0, third, 2.0 * third]);
    }
}

//! What loading reads ([`LoadOptions`]) and the layout metadata our writers
//! set: shared by `load` and the format readers, so it imports none of them.

use std::ops::Range;

/// Which tensors to read and how much of them.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// Input key; default: the first of `x`, `a`, `coeff`, `input`, `inputs` present.
    pub input_key: Option<String>,
    /// Output key; default: the first of `y`, `u`, `output`, `outputs`, `sol` present.
    pub output_key: Option<String>,
    /// Samples to keep (default all).
    pub samples: Option<Range<usize>>,
    /// Keep every `stride`-th grid point of each spatial dim.
    pub stride: usize,
    /// Whether dim 1 of the stored tensors is the channel dim; default: yes for
    /// our safetensors files (they say so in their metadata), no otherwise
    /// (neuraloperator's and most published files store `[N, *grid]`).
    pub channel_dim: Option<bool>,
    /// Input and output time steps of files that store trajectories (HDF5
    /// PDEBench files); default the first and the last.
    pub time: Option<(usize, usize)>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            input_key: None,
            output_key: None,
            samples: None,
            stride: 1,
            channel_dim: None,
            time: None,
        }
    }
}

/// Metadata key our writers set: `[N, C, *grid]` tensors.
pub const LAYOUT_KEY: &str = "layout";
pub const LAYOUT_CHANNELS: &str = "samples,channels,grid";

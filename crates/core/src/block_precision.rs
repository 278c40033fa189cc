//! What the FNO blocks' spectral convolutions hold: one setting, one type,
//! one parser, under our names and neuraloperator's.

use serde::{Deserialize, Serialize};

use fno_kernels::precision::Precision;

/// What the FNO blocks' spectral convolutions hold (neuraloperator's
/// `fno_block_precision`, named `f32`, `mixed` and `half` in training
/// configurations and on the command line; `full` is `f32`). Transforms and
/// contractions compute in f32 in every case (docs/half_precision.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BlockPrecision {
    /// f32 throughout (neuraloperator's `"full"`).
    #[default]
    F32,
    /// The retained spectra and their contraction in f16; the block's input
    /// and output stay f32.
    Mixed,
    /// As `Mixed`, with f16 activations: on the kernel paths every
    /// activation is an f16 tensor from the lifting's input to the
    /// projection's output (f32 weights, sums and normalisation statistics);
    /// on the reference path (whose CPU backends have no f16 tensors) the
    /// spectral blocks' inputs and outputs are rounded to f16.
    Half,
}

impl BlockPrecision {
    /// neuraloperator's name: `"full"`, `"mixed"` or `"half"`.
    pub fn neuralop_name(self) -> &'static str {
        match self {
            BlockPrecision::F32 => "full",
            BlockPrecision::Mixed => "mixed",
            BlockPrecision::Half => "half",
        }
    }

    /// What the spectra hold.
    pub fn spectrum(self) -> Precision {
        match self {
            BlockPrecision::F32 => Precision::F32,
            BlockPrecision::Mixed | BlockPrecision::Half => Precision::F16,
        }
    }
}

impl std::str::FromStr for BlockPrecision {
    type Err = String;
    /// Our names or neuraloperator's.
    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "f32" | "full" => Ok(BlockPrecision::F32),
            "mixed" => Ok(BlockPrecision::Mixed),
            "half" => Ok(BlockPrecision::Half),
            other => Err(format!(
                "block precision {other:?}: expected \"f32\" (neuraloperator's \"full\"), \"mixed\" or \"half\""
            )),
        }
    }
}

impl Serialize for BlockPrecision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BlockPrecision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// [`crate::FnoConfig::fno_block_precision`] written under neuraloperator's names.
pub(crate) mod neuralop_precision {
    use super::BlockPrecision;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &BlockPrecision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.neuralop_name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BlockPrecision, D::Error> {
        BlockPrecision::deserialize(d)
    }
}

impl std::fmt::Display for BlockPrecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BlockPrecision::F32 => "f32",
            BlockPrecision::Mixed => "mixed",
            BlockPrecision::Half => "half",
        })
    }
}

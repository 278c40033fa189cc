//! The precision values take in global memory. Kernels compute in f32 and
//! convert where they read and write: a half-precision plan halves the bytes
//! moved while its butterflies and twiddles stay f32 (docs/half_precision.md).

use std::fmt;
use std::marker::PhantomData;

use cubecl::ir::features::TypeUsage;
use cubecl::ir::{ElemType, FloatKind, StorageType};
use cubecl::prelude::*;
use half::{bf16, f16};

/// The precision a transform's inputs, outputs and intermediate buffers hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Precision {
    /// IEEE single precision.
    #[default]
    F32,
    /// IEEE half: 11 significant bits, largest finite value 65504.
    F16,
    /// bfloat16: f32's range with 8 significant bits.
    BF16,
}

impl Precision {
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F16, Precision::BF16];

    /// The unit round-off of one stored value.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Precision::F32 => f32::EPSILON as f64 / 2.0,
            Precision::F16 => 2f64.powi(-11),
            Precision::BF16 => 2f64.powi(-8),
        }
    }

    /// `values` rounded to this precision (to nearest, ties to even); f32
    /// values come back as they are, without a copy.
    pub fn round(self, values: Vec<f32>) -> Vec<f32> {
        let stored = match self {
            Precision::F32 => return values,
            Precision::F16 => Stored::F16,
            Precision::BF16 => Stored::BF16,
        };
        stored.round(&values)
    }

    /// How `client`'s device stores values of this precision: natively where
    /// it can, bf16 as f32 values rounded to bf16 where it has no bf16 buffers
    /// (WGSL has none).
    pub fn stored_on<R: Runtime>(self, client: &ComputeClient<R>) -> Stored {
        let native = |kind: FloatKind| {
            let ty: StorageType = ElemType::Float(kind).into();
            client.properties().type_usage(ty).contains(TypeUsage::Buffer)
        };
        match self {
            Precision::F32 => Stored::F32,
            Precision::F16 => Stored::F16,
            Precision::BF16 if native(FloatKind::BF16) => Stored::BF16,
            Precision::BF16 => Stored::BF16InF32,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::BF16 => "bf16",
        })
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "f16" => Ok(Precision::F16),
            "bf16" => Ok(Precision::BF16),
            other => Err(format!("unknown precision '{other}' (expected f32, f16 or bf16)")),
        }
    }
}

/// How one device holds values of a [`Precision`] in its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stored {
    F32,
    F16,
    BF16,
    /// f32 values rounded to bf16 (to nearest, ties to even) wherever a kernel
    /// reads or writes them: bf16's results where a device has no bf16 buffers.
    BF16InF32,
}

impl Stored {
    /// Bytes one value takes.
    pub fn bytes(self) -> usize {
        match self {
            Stored::F16 | Stored::BF16 => 2,
            Stored::F32 | Stored::BF16InF32 => 4,
        }
    }

    /// `values` as this storage holds them, in bytes to upload.
    pub fn encode(self, values: &[f32]) -> Vec<u8> {
        match self {
            Stored::F32 => f32::as_bytes(values).to_vec(),
            Stored::F16 => values.iter().flat_map(|&v| f16::from_f32(v).to_le_bytes()).collect(),
            Stored::BF16 => values.iter().flat_map(|&v| bf16::from_f32(v).to_le_bytes()).collect(),
            Stored::BF16InF32 => values
                .iter()
                .flat_map(|&v| bf16::from_f32(v).to_f32().to_le_bytes())
                .collect(),
        }
    }

    /// Values read back from a buffer of this storage.
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            // Byte buffers need not be aligned for f32.
            Stored::F32 | Stored::BF16InF32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Stored::F16 => bytes
                .chunks_exact(2)
                .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Stored::BF16 => bytes
                .chunks_exact(2)
                .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
        }
    }

    /// `values` rounded as this storage holds them.
    pub fn round(self, values: &[f32]) -> Vec<f32> {
        self.decode(&self.encode(values))
    }
}

/// A [`Stored`] as kernels see it: the element type of their global arrays
/// and the conversions to and from the f32 they compute in.
pub trait Storage: Send + Sync + 'static {
    type Elem: Float;
    /// f32 elements rounded to bf16 on every read and write ([`Stored::BF16InF32`]).
    const BF16_IN_F32: bool;
}

/// Values stored in their own type `E` (f32, f16 or bf16).
pub struct Native<E>(PhantomData<E>);

impl<E: Float> Storage for Native<E> {
    type Elem = E;
    const BF16_IN_F32: bool = false;
}

/// f32 buffers holding bf16 values ([`Stored::BF16InF32`]).
pub struct Bf16InF32;

impl Storage for Bf16InF32 {
    type Elem = f32;
    const BF16_IN_F32: bool = true;
}

/// `x` rounded to the nearest bf16 (ties to even), as an f32; NaN stays NaN.
#[cube]
fn round_to_bf16(x: f32) -> f32 {
    let bits = u32::reinterpret(x);
    let rounded = (bits + 0x7fffu32 + ((bits >> 16u32) & 1u32)) & 0xffff_0000u32;
    select(x.is_nan(), x, f32::reinterpret(rounded))
}

/// A stored value as the kernel computes with it.
#[cube]
pub fn load_value<F: Float, S: Storage>(x: S::Elem) -> F {
    let mut v = F::cast_from(x);
    if comptime![S::BF16_IN_F32] {
        v = F::cast_from(round_to_bf16(f32::cast_from(x)));
    }
    v
}

/// A computed value as the buffer stores it.
#[cube]
pub fn store_value<F: Float, S: Storage>(x: F) -> S::Elem {
    let mut v = S::Elem::cast_from(x);
    if comptime![S::BF16_IN_F32] {
        v = S::Elem::cast_from(round_to_bf16(f32::cast_from(x)));
    }
    v
}

/// Calls `$launch::<R, $($done,)* S>($args)` with `S` the [`Storage`] of the
/// [`Stored`] `$stored`: how host code picks a kernel's storage at run time.
macro_rules! with_storage {
    ($stored:expr, $launch:ident, [$($done:ty),*], $($arg:expr),*) => {
        match $stored {
            $crate::precision::Stored::F32 => {
                $launch::<R, $($done,)* $crate::precision::Native<f32>>($($arg),*)
            }
            $crate::precision::Stored::F16 => {
                $launch::<R, $($done,)* $crate::precision::Native<half::f16>>($($arg),*)
            }
            $crate::precision::Stored::BF16 => {
                $launch::<R, $($done,)* $crate::precision::Native<half::bf16>>($($arg),*)
            }
            $crate::precision::Stored::BF16InF32 => {
                $launch::<R, $($done,)* $crate::precision::Bf16InF32>($($arg),*)
            }
        }
    };
}
pub(crate) use with_storage;

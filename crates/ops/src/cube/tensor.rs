//! Small helpers of the CubeCL layer over `CubeTensor`s: dtypes the kernels
//! take, unwritten outputs, and the layouts (pitched rows, weight strides)
//! the kernels read in place.

use burn::tensor::{DType, Shape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::cgemm::{spectral, Strides};
use fno_kernels::precision::Stored;

/// The tensor dtype of values stored as `stored` (bf16 in f32 is an f32 tensor).
pub(crate) fn dtype_of(stored: Stored) -> DType {
    match stored {
        Stored::F32 | Stored::BF16InF32 => DType::F32,
        Stored::F16 => DType::F16,
        Stored::BF16 => DType::BF16,
    }
}

/// `t` as a tensor of `dtype` (itself when it is one).
pub(crate) fn cast_to<R: CubeRuntime>(t: CubeTensor<R>, dtype: DType) -> CubeTensor<R> {
    if t.dtype == dtype {
        return t;
    }
    burn_cubecl::kernel::cast(t, dtype)
}

/// A contiguous, unwritten f32 tensor of `shape` on `like`'s device.
pub(crate) fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: Vec<usize>) -> CubeTensor<R> {
    empty_of(like, shape, DType::F32)
}

/// A contiguous, unwritten tensor of `shape` and `dtype` on `like`'s device.
pub(crate) fn empty_of<R: CubeRuntime>(like: &CubeTensor<R>, shape: Vec<usize>, dtype: DType) -> CubeTensor<R> {
    let values: usize = shape.iter().product();
    let handle = like.client.empty(values.max(1) * dtype.size());
    CubeTensor::new_contiguous(
        like.client.clone(),
        like.device.clone(),
        Shape::from(shape),
        handle,
        dtype,
    )
}

/// The shape of the dense buffer behind `t` when `t` is that buffer cut short
/// along its last dim, as Burn's CUDA allocator pitches rows to 16 bytes:
/// rows `strides[rank - 2]` floats apart, every other dim dense over the next.
pub(crate) fn row_pitched_shape<R: CubeRuntime>(t: &CubeTensor<R>) -> Option<Vec<usize>> {
    let (shape, strides) = (t.meta.shape().to_vec(), t.meta.strides().to_vec());
    let rank = shape.len();
    let mut stored = shape.clone();
    if rank >= 2 {
        stored[rank - 1] = strides[rank - 2];
    }
    let dense = (0..rank).all(|d| strides[d] == stored[d + 1..].iter().product::<usize>());
    (dense && stored[rank - 1] >= shape[rank - 1]).then_some(stored)
}

/// The weight and its CGEMM strides (complex elements). Burn's CUDA allocator
/// pads each (re, im) row to 16 bytes; the CGEMM reads that layout as it is
/// rather than copying the weight on every call. Layouts it cannot describe
/// (re and im apart, modes not flattenable to one stride) are made dense.
pub(crate) fn weight_operand<R: CubeRuntime>(
    weight: CubeTensor<R>,
    out_channels: usize,
    modes: usize,
    shared: bool,
) -> (CubeTensor<R>, Strides) {
    match weight_strides(&weight, shared) {
        Some(strides) => (weight, strides),
        None => {
            let dense = spectral::dense_weight(out_channels, modes, shared);
            (into_contiguous(weight), dense)
        }
    }
}

/// The complex strides (Cin, Cout, mode) of `weight`'s layout, mode 0 when
/// `shared`; `None` where one stride cannot describe it (see [`weight_operand`]).
pub(crate) fn weight_strides<R: CubeRuntime>(weight: &CubeTensor<R>, shared: bool) -> Option<Strides> {
    let shape = weight.meta.shape();
    let strides = weight.meta.strides();
    let rank = shape.len();
    // Dims 0 and 1 are Cin and Cout, then the mode dims, then (re, im).
    let modes_flatten = (3..rank - 1).all(|d| strides[d - 1] == strides[d] * shape[d]);
    let mode_stride = if shared { 0 } else { strides[rank - 2] };
    let described =
        strides[rank - 1] == 1 && modes_flatten && [strides[0], strides[1], mode_stride].iter().all(|s| s % 2 == 0);
    described.then(|| Strides {
        row: strides[0] / 2,
        col: strides[1] / 2,
        mode: mode_stride / 2,
    })
}

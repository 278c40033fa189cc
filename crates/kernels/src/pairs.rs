//! Global-memory access to arrays of float pairs (complex values, or two real
//! samples), bound either as plain floats or as vectors of two: one 8-byte
//! access instead of two 4-byte accesses at an 8-byte stride, which halves the
//! L1 wavefronts of a warp's load or store. A buffer may only be bound as
//! vectors when it starts on an 8-byte boundary ([`pair_aligned`]).

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::precision::{load_value, store_value, Storage};

/// Values `2q` and `2q + 1` of an array of pairs: one 8-byte load (4 in
/// half precision) when the array is bound as vectors of two, else two loads.
#[cube]
pub(crate) fn read_pair<F: Float, S: Storage, N: Size>(
    array: &Array<Vector<S::Elem, N>>,
    q: usize,
    #[comptime] vector: bool,
) -> (F, F) {
    if comptime![vector] {
        let v = array[q];
        (load_value::<F, S>(v[0]), load_value::<F, S>(v[1]))
    } else {
        (
            read_float::<F, S, N>(array, 2 * q),
            read_float::<F, S, N>(array, 2 * q + 1),
        )
    }
}

/// Value `i` of an array bound with vector size 1.
#[cube]
pub(crate) fn read_float<F: Float, S: Storage, N: Size>(array: &Array<Vector<S::Elem, N>>, i: usize) -> F {
    let v = array[i];
    load_value::<F, S>(v[0])
}

/// Writes value `i` of an array bound with vector size 1.
#[cube]
pub(crate) fn write_float<F: Float, S: Storage, N: Size>(array: &mut Array<Vector<S::Elem, N>>, i: usize, a: F) {
    array[i] = Vector::new(store_value::<F, S>(a));
}

/// Writes values `2q` and `2q + 1` of an array of pairs (see [`read_pair`]).
#[cube]
pub(crate) fn write_pair<F: Float, S: Storage, N: Size>(
    array: &mut Array<Vector<S::Elem, N>>,
    q: usize,
    a: F,
    b: F,
    #[comptime] vector: bool,
) {
    if comptime![vector] {
        let mut v = Vector::<S::Elem, N>::empty();
        v[0] = store_value::<F, S>(a);
        v[1] = store_value::<F, S>(b);
        array[q] = v;
    } else {
        write_float::<F, S, N>(array, 2 * q, a);
        write_float::<F, S, N>(array, 2 * q + 1, b);
    }
}

/// Vector size to bind an array with: 2 when it is read (written) in pairs.
pub(crate) fn vector_size(pairs: bool) -> usize {
    if pairs {
        2
    } else {
        1
    }
}

/// Whether a buffer of `value_bytes`-byte values starts where vectors of
/// `pairs` pairs may be read (pairs of f32 on 8 bytes, two pairs on 16).
pub(crate) fn holds_pairs(handle: &Handle, pairs: usize, value_bytes: usize) -> bool {
    starts_on(handle, (2 * pairs * value_bytes) as u64)
}

/// [`holds_pairs`] of f32 pairs: an 8-byte boundary, as vectors of two floats
/// need (a view at an odd float offset does not).
pub(crate) fn pair_aligned(handle: &Handle) -> bool {
    holds_pairs(handle, 1, 4)
}

/// Values a thread reads and writes at once in the element-wise kernels: 4
/// (16-byte accesses of f32) when every row holds whole vectors (`whole`) and
/// every buffer starts on four values of `value_bytes`, else 1.
pub(crate) fn four_wide(whole: bool, buffers: &[&Handle], value_bytes: usize) -> usize {
    if whole && buffers.iter().all(|h| holds_pairs(h, 2, value_bytes)) {
        4
    } else {
        1
    }
}

fn starts_on(handle: &Handle, bytes: u64) -> bool {
    handle.offset_start.unwrap_or(0).is_multiple_of(bytes)
}

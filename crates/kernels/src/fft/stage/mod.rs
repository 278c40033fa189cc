//! The one FFT kernel: a batch of equal-length signals, each transformed in shared
//! memory by Stockham radix passes, with windowed loads (zero-padding, numpy's
//! crop/pad) and windowed stores (truncation) built in.
//!
//! Signals are addressed through three batch dimensions `(a, b, c)` and the
//! transform index `k`: element `k` of signal `(a, b, c)` lives at
//! `a*sa + b*sb + c*sc + k*sk`. A cube owns `signals_per_cube` consecutive `c`
//! values. When `sk == 1` the threads walk `k` fastest (rows); otherwise they walk
//! the signals fastest, so inner-axis ("column") transforms stay coalesced too.

mod butterfly;
mod config;
mod convolution;
mod coords;
mod kernel;
mod load;
mod packed;
mod passes;
mod resident;
mod split;
mod store;

pub(crate) use config::{coordinates_pay, tile_slots, whole_signal_stage, Round};
pub use config::{
    padded_len, smem_stride_for, AxisFold, Convolution, InputForm, OutputForm, PostTwiddle, StageConfig, StageLayout,
    TileFill,
};
pub(crate) use convolution::input_slot;
pub(crate) use coords::{slot, split_flat, unit_in_tile, window_index, window_position, TileCoords};
pub use kernel::fft_stage_kernel;
#[cfg(test)]
pub(crate) use load::tile_loads_ahead;
pub(crate) use load::{
    hermitian_bin, hermitian_imag, load_tile, loads_directly, stages_ahead, walks_units, MIN_DIRECT_RUN,
};
pub(crate) use packed::{fold_packed_tile, folds_in_shared, packed_bin_imag, untangled_units};
pub(crate) use passes::{tile_output, transform_tile};
pub(crate) use resident::HELD_TWIDDLE_THREADS;
pub(crate) use split::{pass_split, split_output};
pub(crate) use store::{store_tile, stores_directly};

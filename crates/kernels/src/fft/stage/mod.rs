//! The one FFT kernel: a batch of equal-length signals, each transformed in shared
//! memory by Stockham radix passes, with windowed loads (zero-padding, numpy's
//! crop/pad) and windowed stores (truncation) built in.
//!
//! Signals are addressed through three batch dimensions `(a, b, c)` and the
//! transform index `k`: element `k` of signal `(a, b, c)` lives at
//! `a*sa + b*sb + c*sc + k*sk`. A cube owns `signals_per_cube` consecutive `c`
//! values. When `sk == 1` the threads walk `k` fastest (rows); otherwise they walk
//! the signals fastest, so inner-axis ("column") transforms stay coalesced too.

mod args;
mod butterfly;
mod checksum;
mod config;
mod convolution;
mod coords;
mod element;
mod kernel;
mod load;
mod packed;
mod pass_input;
mod passes;
mod resident;
mod rules;
mod split;
mod store;

pub use args::{FaultBuffersLaunch, StageTables, StageTablesLaunch};
pub(crate) use args::{TileMemory, TileUnit};
pub(crate) use config::Round;
pub use config::{
    padded_len, smem_stride_for, AxisFold, Convolution, InputForm, OutputForm, PostTwiddle, StageConfig, StageLayout,
    TileFill,
};
pub(crate) use convolution::input_slot;
pub use coords::TileGridLaunch;
pub(crate) use coords::{slot, split_flat, unit_in_tile, window_index, window_position, TileCoords};
pub(crate) use element::{hermitian_bin, hermitian_imag, packed_bin_imag};
pub use kernel::fft_stage_kernel;
pub(crate) use load::load_tile;
pub(crate) use packed::{fold_packed_tile, untangled_units};
pub(crate) use passes::transform_tile;
#[cfg(test)]
pub(crate) use rules::tile_loads_ahead;
pub(crate) use rules::{
    coordinates_pay, folds_in_shared, loads_directly, pass_split, stages_ahead, stores_directly, tile_slots,
    walks_units, whole_signal_stage, HELD_TWIDDLE_THREADS, MIN_DIRECT_RUN,
};
pub(crate) use split::split_output;
pub(crate) use store::{store_tile, tile_output};

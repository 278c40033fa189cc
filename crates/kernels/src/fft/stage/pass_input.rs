//! What a Stockham pass reads (the staged tile, global memory or shared
//! memory) and which of the last pass's butterflies a truncating store needs.

use cubecl::prelude::*;

use crate::precision::{load_value, Storage};

use super::args::{StageTables, TileMemory};
use super::config::{InputForm, OutputForm, StageConfig};
use super::convolution::rader_source;
use super::coords::{slot, TileCoords};
use super::element::{load_element, packed_bin_imag};
use super::packed::fold_bins;
use super::rules::loads_directly;
use crate::fft::window::Window;

/// True when some output of butterfly `i` of the last pass lies in the store
/// window, whose outputs are `i + t·n/r`; butterflies with none are skipped.
#[cube]
pub(super) fn butterfly_needed(i: usize, #[comptime] cfg: StageConfig, #[comptime] r: usize) -> bool {
    let quarter = comptime![cfg.n / r];
    // Real outputs need every element, twin spectra bins k and n - k.
    let whole = comptime![cfg.output.is_real() || cfg.output == OutputForm::TwinSpectra];
    match comptime![(cfg.prune, cfg.store_fold, whole, cfg.store)] {
        (true, None, false, Window::Prefix(len)) => i < comptime![len.min(cfg.n)],
        (true, None, false, Window::Centered(m)) | (true, None, false, Window::Shifted(m)) => {
            i < comptime![m - m / 2] || i + comptime![m / 2] >= quarter
        }
        _ => true,
    }
}

/// A signal of the tile as a pass reads it: the tile's coordinates, the
/// signal's index in the tile and where it starts in shared memory.
#[derive(CubeType, Clone, Copy)]
pub(super) struct PassSignal {
    pub at: TileCoords,
    pub signal: usize,
    pub base: usize,
}

/// Element `i + offset` of the tile's signal `signal` as pass `pass` reads
/// it: from the input a resident cube staged, from global memory (a first
/// pass that loads directly) or from the tile in shared memory. Each source
/// adds the offset itself, as the unsplit pass always spelled it.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn read_pass_element<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    staged: &SharedMemory<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    tile_memory: &TileMemory<F>,
    signal: PassSignal,
    i: usize,
    offset: usize,
    #[comptime] pass: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let from_staged = comptime![pass == 0 && cfg.prefetch.is_some()];
    let from_global = comptime![pass == 0 && loads_directly(&cfg) && !from_staged];
    if from_staged {
        let k = if comptime![cfg.rader()] {
            rader_source::<F>(&tables.factors, i + offset, cfg.clone())
        } else {
            i + offset
        };
        let v = staged[signal.signal * comptime![cfg.load_len()] + k];
        (load_value::<F, S>(v[0]), load_value::<F, S>(v[1]))
    } else if from_global {
        load_pass_input::<F, S, N>(
            input,
            &tables.factors,
            &tables.twiddles,
            signal.at,
            signal.signal,
            i + offset,
            cfg.clone(),
        )
    } else {
        (
            tile_memory.re[signal.base + slot(i + offset, cfg.padded_slots)],
            tile_memory.im[signal.base + slot(i + offset, cfg.padded_slots)],
        )
    }
}

/// Value `k` of what the first pass transforms, read from global memory: the
/// windowed input element, or for a packed Hermitian input the value folded
/// from bins `k` and `n - k`.
#[cube]
fn load_pass_input<F: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    factors: &Array<F>,
    twiddles: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    if comptime![cfg.input == InputForm::HermitianPacked] {
        let n = comptime![cfg.n];
        let (xr, xi) = load_element::<F, S, N>(input, factors, at, s, k, cfg.clone());
        let (yr, yi) = load_element::<F, S, N>(input, factors, at, s, n - k, cfg.clone());
        let xi = packed_bin_imag::<F>(xi, k, cfg.clone());
        let yi = packed_bin_imag::<F>(yi, n - k, cfg.clone());
        fold_bins::<F>(xr, xi, yr, yi, twiddles, k)
    } else {
        load_element::<F, S, N>(input, factors, at, s, k, cfg)
    }
}

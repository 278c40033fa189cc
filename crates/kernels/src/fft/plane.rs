//! Two axes in one kernel: each cube transforms the last two dimensions of one
//! image, one axis after the other, with the tiles of [`super::stage`]; the
//! intermediate (the image) stays in shared memory. A truncating 2D forward then
//! reads its input once and writes only the kept modes, and a zero-padding 2D
//! inverse reads only the kept modes and writes its output once, where two
//! launches would send the intermediate through global memory and back.
//!
//! The two stages run one after the other in each cube, with one image's worth
//! of shared memory: where the intermediate is smaller than the input or the
//! output (FNO's truncating forward, zero-padding inverse), two launches of
//! better occupancy are faster (benches/results/2026-11-23_plane_h100.md), so
//! the planner plans a plane only for transforms whose intermediate is the
//! largest array ([`PlaneFusion`](super::PlaneFusion)).

use cubecl::prelude::*;

use crate::precision::Storage;

use super::stage::{
    fold_packed_tile, folds_in_shared, load_tile, loads_directly, packed_bin_imag, slot, split_flat, store_tile,
    stores_directly, tile_output, transform_tile, unit_in_tile, window_index, window_position, StageConfig,
    StageTables, TileCoords, TileMemory, TileUnit,
};

/// A plane transform: the stage of each phase and the extents of the images.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlaneConfig {
    /// Reads global memory and leaves its outputs in the image (`store_shared`).
    pub first: StageConfig,
    /// Reads the image (`load_shared`) and writes global memory. Both stages
    /// run on the same threads: `threads_per_cube` agrees.
    pub second: StageConfig,
    /// Whether the first stage transforms the rows (the last dimension) and the
    /// second the columns, or the other way round.
    pub rows_first: bool,
    /// Extents (second-last, last dimension) of an input image, of the
    /// intermediate held in shared memory, and of an output image.
    pub input: [usize; 2],
    pub image: [usize; 2],
    pub output: [usize; 2],
}

impl PlaneConfig {
    pub fn threads(&self) -> usize {
        self.first.threads_per_cube()
    }

    /// Floats of each of the two (re, im) work tiles, shared by the stages.
    fn work_len(&self) -> usize {
        let tile = |cfg: &StageConfig| cfg.signals_per_cube * cfg.smem_stride;
        tile(&self.first).max(tile(&self.second))
    }

    fn image_len(&self) -> usize {
        self.image[0] * self.image[1]
    }

    /// Shared memory one cube takes.
    pub fn shared_bytes(&self) -> usize {
        8 * (self.work_len() + self.image_len())
    }

    /// (signal stride, axis stride) of a stage over images of extents `dims`.
    fn strides(rows: bool, dims: [usize; 2]) -> (usize, usize) {
        if rows {
            (dims[1], 1)
        } else {
            (1, dims[1])
        }
    }

    /// Number of signals a stage over images of extents `dims` transforms.
    pub(super) fn signals(rows: bool, dims: [usize; 2]) -> usize {
        if rows {
            dims[0]
        } else {
            dims[1]
        }
    }
}

/// Writes the stored window of the tile's outputs (scaled) into the image.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_tile_to_image<F: Float>(
    work_re: &SharedMemory<F>,
    work_im: &SharedMemory<F>,
    image_re: &mut SharedMemory<F>,
    image_im: &mut SharedMemory<F>,
    twiddles: &Array<F>,
    c0: usize,
    count: usize,
    #[comptime] cfg: StageConfig,
    #[comptime] signal_stride: usize,
    #[comptime] axis_stride: usize,
) {
    let out_seq = comptime![cfg.output_seq_len()];
    let per_signal = comptime![cfg.store.stored_len(cfg.output_seq_len())];
    let signals = comptime![cfg.signals_per_cube];
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)]);
    let mut flat = UNIT_POS as usize;
    while flat < comptime![per_signal * cfg.signals_per_cube] {
        let (s, j) = split_flat(flat, per_signal, signals, comptime![cfg.store_signals_fastest]);
        if c0 + s < count {
            let k = window_index(j, cfg.store, out_seq);
            // Plane stages are smooth FFTs: no factors.
            let (vr, vi) = tile_output::<F>(work_re, work_im, twiddles, twiddles, s, k, cfg.clone());
            let at = (c0 + s) * signal_stride + j * axis_stride;
            image_re[at] = vr * scale;
            image_im[at] = vi * scale;
        }
        flat += comptime![cfg.threads_per_cube()];
    }
}

/// Fills the work tile from the image through the stage's load window.
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_tile_from_image<F: Float>(
    image_re: &SharedMemory<F>,
    image_im: &SharedMemory<F>,
    work_re: &mut SharedMemory<F>,
    work_im: &mut SharedMemory<F>,
    c0: usize,
    count: usize,
    #[comptime] cfg: StageConfig,
    #[comptime] signal_stride: usize,
    #[comptime] axis_stride: usize,
) {
    let in_seq = comptime![cfg.input_seq_len()];
    let load_len = comptime![cfg.load_len()];
    let signals = comptime![cfg.signals_per_cube];
    let stride = comptime![cfg.smem_stride];
    let mut flat = UNIT_POS as usize;
    while flat < comptime![cfg.load_len() * cfg.signals_per_cube] {
        let (s, k) = split_flat(flat, load_len, signals, comptime![cfg.load_signals_fastest]);
        let (held, j) = window_position(k, cfg.load, in_seq);
        let mut vr = F::new(0.0);
        let mut vi = F::new(0.0);
        if held && c0 + s < count {
            let at = (c0 + s) * signal_stride + j * axis_stride;
            vr = image_re[at];
            vi = image_im[at];
        }
        work_re[s * stride + slot(k, cfg.padded_slots)] = vr;
        work_im[s * stride + slot(k, cfg.padded_slots)] = packed_bin_imag::<F>(vi, k, cfg.clone());
        flat += comptime![cfg.threads_per_cube()];
    }
    sync_cube();
}

/// One cube per image: the first stage's signals in tiles from global memory
/// into the image, then the second stage's from the image to global memory.
#[cube(launch_unchecked)]
pub fn fft_plane_kernel<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    first_twiddles: &Array<F>,
    second_twiddles: &Array<F>,
    images: usize,
    #[comptime] cfg: PlaneConfig,
) {
    let image = CUBE_POS;
    if image >= images {
        terminate!();
    }
    let first = comptime![cfg.first.clone()];
    let second = comptime![cfg.second.clone()];
    let rows_first = comptime![cfg.rows_first];
    let mut work = TileMemory::<F> {
        re: SharedMemory::<F>::new(comptime![cfg.work_len()]),
        im: SharedMemory::<F>::new(comptime![cfg.work_len()]),
    };
    // Plane stages are smooth FFTs: their twiddles are every table they read.
    let first_tables = StageTables::<F>::unsplit(first_twiddles, first_twiddles);
    let second_tables = StageTables::<F>::unsplit(second_twiddles, second_twiddles);
    let mut image_re = SharedMemory::<F>::new(comptime![cfg.image_len()]);
    let mut image_im = SharedMemory::<F>::new(comptime![cfg.image_len()]);

    // ---- first stage: global memory → image ----
    let (in_sc, in_axis) = comptime![PlaneConfig::strides(rows_first, cfg.input)];
    let (image_sc, image_axis) = comptime![PlaneConfig::strides(rows_first, cfg.image)];
    let count = comptime![PlaneConfig::signals(rows_first, cfg.input)];
    let (signal, thread) = unit_in_tile(first.clone());
    let mut c0 = 0usize;
    while c0 < count {
        let at = TileCoords {
            in_base: image * comptime![cfg.input[0] * cfg.input[1]] + c0 * in_sc,
            out_base: 0,
            in_sc,
            out_sc: 0,
            in_axis,
            out_axis: 0,
            b: 0,
            c0,
            nc: count,
        };
        if comptime![!loads_directly(&first)] {
            load_tile::<F, SI, NI>(input, first_twiddles, at, &mut work.re, &mut work.im, first.clone());
        }
        if comptime![folds_in_shared(&first)] {
            fold_packed_tile::<F>(
                &mut work.re,
                &mut work.im,
                first_twiddles,
                signal,
                thread,
                first.clone(),
            );
        }
        transform_tile::<F, SI, SO, NI, NO>(
            input,
            output,
            &first_tables,
            &mut work,
            TileUnit { at, signal, thread },
            first.clone(),
        );
        store_tile_to_image::<F>(
            &work.re,
            &work.im,
            &mut image_re,
            &mut image_im,
            first_twiddles,
            c0,
            count,
            first.clone(),
            image_sc,
            image_axis,
        );
        // The next tile's loads overwrite the work tile; the second stage reads the image.
        sync_cube();
        c0 += comptime![first.signals_per_cube];
    }

    // ---- second stage: image → global memory ----
    let (image_sc, image_axis) = comptime![PlaneConfig::strides(!rows_first, cfg.image)];
    let (out_sc, out_axis) = comptime![PlaneConfig::strides(!rows_first, cfg.output)];
    let count = comptime![PlaneConfig::signals(!rows_first, cfg.image)];
    let (signal, thread) = unit_in_tile(second.clone());
    let mut c0 = 0usize;
    while c0 < count {
        let at = TileCoords {
            in_base: 0,
            out_base: image * comptime![cfg.output[0] * cfg.output[1]] + c0 * out_sc,
            in_sc: 0,
            out_sc,
            in_axis: 0,
            out_axis,
            b: 0,
            c0,
            nc: count,
        };
        load_tile_from_image::<F>(
            &image_re,
            &image_im,
            &mut work.re,
            &mut work.im,
            c0,
            count,
            second.clone(),
            image_sc,
            image_axis,
        );
        if comptime![folds_in_shared(&second)] {
            fold_packed_tile::<F>(
                &mut work.re,
                &mut work.im,
                second_twiddles,
                signal,
                thread,
                second.clone(),
            );
        }
        transform_tile::<F, SI, SO, NI, NO>(
            input,
            output,
            &second_tables,
            &mut work,
            TileUnit { at, signal, thread },
            second.clone(),
        );
        if comptime![!stores_directly(&second)] {
            store_tile::<F, SO, NO>(output, &second_tables, &work, at, second.clone());
        }
        sync_cube();
        c0 += comptime![second.signals_per_cube];
    }
}

//! Type 1's spreading, gathered: the threads of a fine-grid cell (one, or
//! lanes side by side over the vectors: [`VectorSplit`]) sum the
//! kernel-weighted values of every point whose kernel covers it.
//! Sorted by start cell ([`SortedPoints`]), those points lie in `w^(d−1)`
//! rows of start cells, each a contiguous range (two where the row wraps):
//! no atomics, the same sum order every run, `O(M·w^d)` work as scattering
//! takes. (cuFINUFFT scatters with shared-memory atomics instead; WGSL has no
//! float atomics.) Design: docs/nufft.md.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{PointValues, VectorSplit};
use super::points::SortedPoints;
use super::spreader::Spreader;

const THREADS: usize = 256;

/// The ES kernel `exp(β(√(1 − z²) − 1))` at `z ∈ [−1, 1]`.
#[cube]
fn es_kernel(z: f32, beta: f32) -> f32 {
    f32::exp(beta * (f32::sqrt(f32::max(1.0 - z * z, 0.0)) - 1.0))
}

/// Each sorted point's kernel values at the `w` cells it covers along each
/// dimension (`[M, d, w]`, from `offset` `[M, d]`), once a plan: the points
/// are fixed, and a pair's weight becomes `d` loads instead of `d`
/// exponentials in every thread that meets it (lanes shared no work there).
#[cube(launch_unchecked)]
fn kernel_table_kernel(offset: &Array<f32>, table: &mut Array<f32>, len: usize, beta: f32, #[comptime] width: usize) {
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < len {
        let scale = 2.0f32 / f32::cast_from(width);
        table[pos] = es_kernel((f32::cast_from(pos % width) + offset[pos / width]) * scale, beta);
    }
}

/// The kernel's weight along the slower dimensions at `ay`, `az` cells past
/// point `p`'s start cell (`table` `[M, d, w]`).
#[cube]
pub(super) fn slow_weight(
    table: &Array<f32>,
    p: usize,
    ay: usize,
    az: usize,
    #[comptime] width: usize,
    #[comptime] dims: usize,
) -> f32 {
    let mut weight = 1.0f32;
    if comptime![dims >= 2] {
        weight *= table[p * comptime![dims * width] + comptime![(dims - 2) * width] + ay];
    }
    if comptime![dims == 3] {
        weight *= table[p * comptime![dims * width] + az];
    }
    weight
}

/// The kernel's weight along x at `ax` cells past point `p`'s start cell.
#[cube]
pub(super) fn x_weight(
    table: &Array<f32>,
    p: usize,
    ax: usize,
    #[comptime] width: usize,
    #[comptime] dims: usize,
) -> f32 {
    table[p * comptime![dims * width] + comptime![(dims - 1) * width] + ax]
}

/// Where vector `b`'s value at element `e` (cell or point, `elements` of
/// them) lies: interleaved `[elements, batch]` or planar `[batch, elements]`
/// (see [`VectorSplit`]), in complex values.
#[cube]
pub(super) fn at(b: usize, e: usize, elements: usize, batch: usize, #[comptime] interleaved: bool) -> usize {
    if comptime![interleaved] {
        e * batch + b
    } else {
        b * elements + e
    }
}

/// A thread's vectors `b0, b0 + lanes, …` as offsets of element 0 in a
/// layout of `elements` (vectors past the batch read the last one's values,
/// never stored), and the layout's step from one element to the next: a
/// pair's address is then one multiply-add.
#[cube]
pub(super) fn columns(
    b0: usize,
    lanes: usize,
    elements: usize,
    batch: usize,
    #[comptime] per_thread: usize,
    #[comptime] interleaved: bool,
) -> (Array<u32>, usize) {
    let mut column = Array::<u32>::new(per_thread);
    #[unroll]
    for v in 0..per_thread {
        let mut b = b0 + v * lanes;
        if b >= batch {
            b = batch - 1;
        }
        column[v] = u32::cast_from(at(b, 0, elements, batch, interleaved));
    }
    (column, at(0, 1, elements, batch, interleaved))
}

/// The values in the points' sorted order (`[batch, M]` → the split's
/// layout, complex or real as given), so that spreading reads
/// each range of points contiguously (read through `order`, neighbouring
/// cells' ranges scatter over the whole batch).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sort_values_kernel(
    values: &Array<f32>,
    order: &Array<u32>,
    sorted: &mut Array<f32>,
    points: usize,
    batch: usize,
    stride: usize,
    #[comptime] interleaved: bool,
    #[comptime] real: bool,
) {
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < points * batch {
        // `pos` walks the sorted layout: writes side by side.
        let mut b = pos / points;
        let mut k = pos % points;
        if comptime![interleaved] {
            b = pos % batch;
            k = pos / batch;
        }
        // Vector b's values start `stride` floats after vector b − 1's.
        let point = order[k] as usize;
        if comptime![real] {
            sorted[pos] = values[b * stride + point];
        } else {
            let from = b * stride + point * 2;
            sorted[pos * 2] = values[from];
            sorted[pos * 2 + 1] = values[from + 1];
        }
    }
}

/// The sizes a spreading or interpolation launch walks: `points` points of
/// `batch` signals, `lanes` signals a thread group, `threads` threads in all,
/// and the `nz × ny × nx` grid.
#[derive(CubeLaunch, CubeType)]
pub(super) struct PointsOnGrid {
    pub points: usize,
    pub batch: usize,
    pub lanes: usize,
    pub threads: usize,
    pub nz: usize,
    pub ny: usize,
    pub nx: usize,
}

/// The compile-time shape of a spreading or interpolation kernel: the
/// spreading kernel's width, the grid's dimensions, the signals a thread
/// handles, whether the batch is interleaved and the values real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct PointsConfig {
    pub width: usize,
    pub dims: usize,
    pub per_thread: usize,
    pub interleaved: bool,
    pub real: bool,
}

#[cube(launch_unchecked)]
fn spread_kernel(
    values: &Array<f32>,
    start: &Array<u32>,
    table: &Array<f32>,
    first: &Array<u32>,
    grid: &mut Array<f32>,
    sizes: &PointsOnGrid,
    #[comptime] cfg: PointsConfig,
) {
    let (points, batch, lanes, threads) = (sizes.points, sizes.batch, sizes.lanes, sizes.threads);
    let (nz, ny, nx) = (sizes.nz, sizes.ny, sizes.nx);
    let (width, dims, per_thread, interleaved, real) =
        comptime![(cfg.width, cfg.dims, cfg.per_thread, cfg.interleaved, cfg.real)];
    let cells = nz * ny * nx;
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < threads {
        // This thread's cell, for vectors b0, b0 + lanes, … (a pair's weight serves them all).
        let lane = pos % lanes;
        let c = (pos / lanes) % cells;
        let b0 = (pos / lanes / cells) * per_thread * lanes + lane;
        let ix = c % nx;
        let iy = (c / nx) % ny;
        let iz = c / (nx * ny);
        let wy = comptime![if dims >= 2 { width } else { 1 }];
        let wz = comptime![if dims == 3 { width } else { 1 }];
        let floats = comptime![if real { 1 } else { 2 }];
        let (column, stride) = columns(b0, lanes, points, batch, per_thread, interleaved);
        let mut re = Array::<f32>::new(per_thread);
        let mut im = Array::<f32>::new(per_thread);
        #[unroll]
        for v in 0..per_thread {
            re[v] = 0.0;
            im[v] = 0.0;
        }
        for az in 0..wz {
            let sz = (iz + nz - az) % nz;
            for ay in 0..wy {
                let row = (sz * ny + (iy + ny - ay) % ny) * nx;
                // Start cells ix − w + 1 ..= ix along x: one range, or two where it wraps.
                let wraps = ix + 1 < width;
                let mut ranges = 1usize;
                if wraps {
                    ranges = 2;
                }
                for part in 0..ranges {
                    let mut lo = row;
                    let mut hi = row + ix + 1;
                    if !wraps {
                        lo = row + ix + 1 - width;
                    } else if part == 1 {
                        lo = row + nx + ix + 1 - width;
                        hi = row + nx;
                    }
                    for p in first[lo] as usize..first[hi] as usize {
                        // The point starts at x = start − row in this row: no division.
                        let mut ax = ix + nx + row - start[p] as usize;
                        if ax >= nx {
                            ax -= nx;
                        }
                        let weight = x_weight(table, p, ax, width, dims) * slow_weight(table, p, ay, az, width, dims);
                        let base = p * stride;
                        #[unroll]
                        for v in 0..per_thread {
                            let from = (base + column[v] as usize) * floats;
                            re[v] += weight * values[from];
                            if comptime![!real] {
                                im[v] += weight * values[from + 1];
                            }
                        }
                    }
                }
            }
        }
        #[unroll]
        for v in 0..per_thread {
            let b = b0 + v * lanes;
            if b < batch {
                let out = at(b, c, cells, batch, interleaved) * 2;
                grid[out] = re[v];
                grid[out + 1] = im[v];
            }
        }
    }
}

/// The sorted points' device copies and their kernel values, shared by
/// spreading and interpolation.
pub(super) struct PointBuffers {
    pub order: Handle,
    pub start: Handle,
    /// `[M, d, w]`: see `kernel_table_kernel`.
    pub table: Handle,
    pub first: Handle,
    pub len: usize,
    pub dims: usize,
    pub width: usize,
}

impl PointBuffers {
    pub fn upload<R: Runtime>(client: &ComputeClient<R>, sorted: &SortedPoints, spreader: Spreader) -> Self {
        let offset = client.create_from_slice(f32::as_bytes(&sorted.offset));
        let table_len = sorted.offset.len() * spreader.width;
        let table = client.empty(table_len * 4);
        // SAFETY: `pos / width` stays below the offsets' length.
        unsafe {
            kernel_table_kernel::launch_unchecked::<R>(
                client,
                cube_count(table_len),
                cube_dim(),
                ArrayArg::from_raw_parts(offset, sorted.offset.len()),
                ArrayArg::from_raw_parts(table.clone(), table_len),
                table_len,
                spreader.beta as f32,
                spreader.width,
            );
        }
        PointBuffers {
            order: client.create_from_slice(u32::as_bytes(&sorted.order)),
            start: client.create_from_slice(u32::as_bytes(&sorted.start)),
            table,
            first: client.create_from_slice(u32::as_bytes(&sorted.first)),
            len: sorted.len(),
            dims: sorted.offset.len() / sorted.len(),
            width: spreader.width,
        }
    }
}

/// The fine grid's `[z, y, x]` extents, slower dimensions 1 where absent.
pub(super) fn grid_zyx(grid: &[usize]) -> [usize; 3] {
    let mut zyx = [1; 3];
    zyx[3 - grid.len()..].copy_from_slice(grid);
    zyx
}

/// Cubes for `threads` threads.
pub(super) fn cube_count(threads: usize) -> CubeCount {
    crate::grid::cube_count(threads.div_ceil(THREADS))
}

pub(super) fn cube_dim() -> CubeDim {
    CubeDim::new_1d(THREADS as u32)
}

/// Threads of a launch over `elements` cells or points for `batch` vectors.
pub(super) fn thread_count(split: VectorSplit, elements: usize, batch: usize) -> usize {
    elements * split.lanes * batch.div_ceil(split.width())
}

/// Spreads `batch` vectors of the points' `values` (`[batch, M]`, input
/// order, complex or real, vectors `stride` floats apart) onto `grid`
/// (`[batch, cells]` or interleaved, as `split` says), through a copy of
/// the values in sorted order.
#[allow(clippy::too_many_arguments)]
pub(super) fn spread<R: Runtime>(
    client: &ComputeClient<R>,
    points: &PointBuffers,
    values: &Handle,
    kind: PointValues,
    stride: usize,
    grid: &Handle,
    batch: usize,
    shape: &[usize],
) {
    let [nz, ny, nx] = grid_zyx(shape);
    let cells = nz * ny * nx;
    let split = VectorSplit::for_batch(batch);
    let threads = thread_count(split, cells, batch);
    let sorted_floats = batch * points.len * kind.floats();
    let sorted = client.empty(sorted_floats * 4);
    let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    // SAFETY: every index stays within the arrays: cells below `grid`'s
    // length, point ranges within `first`'s, values below the last vector's end.
    unsafe {
        sort_values_kernel::launch_unchecked::<R>(
            client,
            cube_count(batch * points.len),
            cube_dim(),
            arr(values, (batch - 1) * stride + points.len * kind.floats()),
            arr(&points.order, points.len),
            arr(&sorted, sorted_floats),
            points.len,
            batch,
            stride,
            split.interleaved(),
            kind == PointValues::Real,
        );
        spread_kernel::launch_unchecked::<R>(
            client,
            cube_count(threads),
            cube_dim(),
            arr(&sorted, sorted_floats),
            arr(&points.start, points.len),
            arr(&points.table, points.len * points.dims * points.width),
            arr(&points.first, cells + 1),
            arr(grid, batch * cells * 2),
            PointsOnGridLaunch::new(points.len, batch, split.lanes, threads, nz, ny, nx),
            PointsConfig {
                width: points.width,
                dims: points.dims,
                per_thread: split.per_thread,
                interleaved: split.interleaved(),
                real: kind == PointValues::Real,
            },
        );
    }
}

//! Type 2's interpolation: the threads of a point (one, or lanes side by
//! side over the vectors: [`VectorSplit`]; points sorted, so that
//! neighbouring threads read neighbouring cells) sum the `w^d` grid values
//! its kernel covers, weighted, and write the result at the point's input
//! index.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::plan::{PointValues, VectorSplit};
use super::spread::{
    columns, cube_count, cube_dim, grid_zyx, slow_weight, thread_count, x_weight, PointBuffers, PointsConfig,
    PointsOnGrid, PointsOnGridLaunch,
};

#[cube(launch_unchecked)]
fn interpolate_kernel(
    grid: &Array<f32>,
    order: &Array<u32>,
    start: &Array<u32>,
    table: &Array<f32>,
    values: &mut Array<f32>,
    sizes: &PointsOnGrid,
    #[comptime] cfg: PointsConfig,
) {
    let (points, batch, lanes, threads) = (sizes.points, sizes.batch, sizes.lanes, sizes.threads);
    let (nz, ny, nx) = (sizes.nz, sizes.ny, sizes.nx);
    let (width, dims, per_thread, interleaved, real) =
        comptime![(cfg.width, cfg.dims, cfg.per_thread, cfg.interleaved, cfg.real)];
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < threads {
        // This thread's point, for vectors b0, b0 + lanes, ….
        let lane = pos % lanes;
        let p = (pos / lanes) % points;
        let b0 = (pos / lanes / points) * per_thread * lanes + lane;
        let cell = start[p] as usize;
        let sx = cell % nx;
        let sy = (cell / nx) % ny;
        let sz = cell / (nx * ny);
        let cells = nz * ny * nx;
        let wy = comptime![if dims >= 2 { width } else { 1 }];
        let wz = comptime![if dims == 3 { width } else { 1 }];
        let mut along_x = Array::<f32>::new(width);
        #[unroll]
        for ax in 0..width {
            along_x[ax] = x_weight(table, p, ax, width, dims);
        }
        let (column, stride) = columns(b0, lanes, cells, batch, per_thread, interleaved);
        let mut re = Array::<f32>::new(per_thread);
        let mut im = Array::<f32>::new(per_thread);
        #[unroll]
        for v in 0..per_thread {
            re[v] = 0.0;
            im[v] = 0.0;
        }
        for az in 0..wz {
            let z = (sz + az) % nz;
            for ay in 0..wy {
                let row = (z * ny + (sy + ay) % ny) * nx;
                let slow = slow_weight(table, p, ay, az, width, dims);
                #[unroll]
                for ax in 0..width {
                    let weight = slow * along_x[ax];
                    let cell = row + (sx + ax) % nx;
                    let base = cell * stride;
                    #[unroll]
                    for v in 0..per_thread {
                        let g = (base + column[v] as usize) * 2;
                        re[v] += weight * grid[g];
                        // Real values at the points are the real parts alone.
                        if comptime![!real] {
                            im[v] += weight * grid[g + 1];
                        }
                    }
                }
            }
        }
        let target = order[p] as usize;
        #[unroll]
        for v in 0..per_thread {
            let b = b0 + v * lanes;
            if b < batch {
                let out = b * points + target;
                if comptime![real] {
                    values[out] = re[v];
                } else {
                    values[out * 2] = re[v];
                    values[out * 2 + 1] = im[v];
                }
            }
        }
    }
}

/// Interpolates `batch` vectors of `grid` (complex, `[batch, cells]` or
/// interleaved as [`VectorSplit`] says) at the points into `values`
/// (`[batch, M]`, input order, complex or their real parts).
#[allow(clippy::too_many_arguments)]
pub(super) fn interpolate<R: Runtime>(
    client: &ComputeClient<R>,
    points: &PointBuffers,
    grid: &Handle,
    values: &Handle,
    kind: PointValues,
    batch: usize,
    shape: &[usize],
) {
    let [nz, ny, nx] = grid_zyx(shape);
    let split = VectorSplit::for_batch(batch);
    let threads = thread_count(split, points.len, batch);
    let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    // SAFETY: cells are taken modulo the grid's extents, points below M.
    unsafe {
        interpolate_kernel::launch_unchecked::<R>(
            client,
            cube_count(threads),
            cube_dim(),
            arr(grid, batch * nz * ny * nx * 2),
            arr(&points.order, points.len),
            arr(&points.start, points.len),
            arr(&points.table, points.len * points.dims * points.width),
            arr(values, batch * points.len * kind.floats()),
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

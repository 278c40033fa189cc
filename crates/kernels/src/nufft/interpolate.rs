//! Type 2's interpolation: one thread per point (sorted, so that neighbouring
//! threads read neighbouring cells) and vector sums the `w^d` grid values its
//! kernel covers, weighted, and writes the result at the point's input index.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::spread::{cube_count, cube_dim, es_kernel, grid_zyx, slow_weight, vectors_per_thread, PointBuffers};

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn interpolate_kernel(
    grid: &Array<f32>,
    order: &Array<u32>,
    start: &Array<u32>,
    offset: &Array<f32>,
    values: &mut Array<f32>,
    points: usize,
    batch: usize,
    nz: usize,
    ny: usize,
    nx: usize,
    beta: f32,
    #[comptime] width: usize,
    #[comptime] dims: usize,
    #[comptime] vectors: usize,
) {
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < points * batch.div_ceil(vectors) {
        // This thread's point, for vectors b0 .. b0 + `vectors`.
        let b0 = (pos / points) * vectors;
        let p = pos % points;
        let cell = start[p] as usize;
        let sx = cell % nx;
        let sy = (cell / nx) % ny;
        let sz = cell / (nx * ny);
        let cells = nz * ny * nx;
        let scale = 2.0f32 / f32::cast_from(width);
        let wy = comptime![if dims >= 2 { width } else { 1 }];
        let wz = comptime![if dims == 3 { width } else { 1 }];
        // The kernel along x, once a point: w exponentials instead of w^d.
        let mut along_x = Array::<f32>::new(width);
        #[unroll]
        for ax in 0..width {
            along_x[ax] = es_kernel((f32::cast_from(ax) + offset[p * dims + dims - 1]) * scale, beta);
        }
        let mut re = Array::<f32>::new(vectors);
        let mut im = Array::<f32>::new(vectors);
        #[unroll]
        for v in 0..vectors {
            re[v] = 0.0;
            im[v] = 0.0;
        }
        for az in 0..wz {
            let z = (sz + az) % nz;
            for ay in 0..wy {
                let row = (z * ny + (sy + ay) % ny) * nx;
                let slow = slow_weight(offset, p, ay, az, scale, beta, dims);
                #[unroll]
                for ax in 0..width {
                    let weight = slow * along_x[ax];
                    let cell = row + (sx + ax) % nx;
                    #[unroll]
                    for v in 0..vectors {
                        // Vectors past the batch read the last one's grid, never stored.
                        let mut b = b0 + v;
                        if b >= batch {
                            b = batch - 1;
                        }
                        let g = (b * cells + cell) * 2;
                        re[v] += weight * grid[g];
                        im[v] += weight * grid[g + 1];
                    }
                }
            }
        }
        let target = order[p] as usize;
        #[unroll]
        for v in 0..vectors {
            if b0 + v < batch {
                let out = ((b0 + v) * points + target) * 2;
                values[out] = re[v];
                values[out + 1] = im[v];
            }
        }
    }
}

/// Interpolates `batch` vectors of `grid` (`[batch, cells]` complex) at the
/// points into `values` (`[batch, M]` complex, input order).
#[allow(clippy::too_many_arguments)]
pub(super) fn interpolate<R: Runtime>(
    client: &ComputeClient<R>,
    points: &PointBuffers,
    grid: &Handle,
    values: &Handle,
    batch: usize,
    shape: &[usize],
    width: usize,
    beta: f64,
) {
    let [nz, ny, nx] = grid_zyx(shape);
    let vectors = vectors_per_thread(batch);
    let threads = points.len * batch.div_ceil(vectors);
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
            arr(&points.offset, points.len * shape.len()),
            arr(values, batch * points.len * 2),
            points.len,
            batch,
            nz,
            ny,
            nx,
            beta as f32,
            width,
            shape.len(),
            vectors,
        );
    }
}

//! The 1×1 convolution of [`crate::pointwise_conv`] on TF32 tensor cores:
//! the same problem, its operands rounded to TF32 (10-bit mantissas, as
//! PyTorch's `allow_tf32` does) and multiplied in `16×16×8` matrix tiles, the
//! sums kept in f32.
//!
//! A cube of four planes owns 64 rows by 128 points of one sample's output.
//! It stages 32 terms at a time of `A`'s rows and `X`'s points in shared
//! memory, rounded to TF32 on the way; each plane multiplies all 64 rows by
//! its own 32 points (4 × 2 accumulator tiles) and writes each tile through a
//! small scratch, adding the bias there. Rows and points past the problem are
//! staged as zeros and never written, so any shape runs; a contraction shorter
//! than a tile wastes the tensor cores, which [`PointwiseConvProblem::suits_tf32`]
//! leaves to the f32 kernel.

use cubecl::features::MmaConfig;
use cubecl::ir::{ElemType, FloatKind};
use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::pointwise_conv::{PointwiseConvProblem, PointwiseDims, PointwiseDimsLaunch};

/// The tensor-core tile: `FRAG × FRAG` outputs, `K_STEP` terms.
const FRAG: usize = 16;
const K_STEP: usize = 8;
const PLANE: usize = 32;
const PLANES: usize = 4;
const THREADS: usize = PLANE * PLANES;
/// Rows and points of a cube's block; each plane owns all its rows and
/// `PLANE_S` of its points (planes form a grid of `BLOCK_M / PLANE_M` by
/// `PLANE_COLS`). Eight planes of 32 × 32 each ran slower
/// (benches/results/2026-11-27_train_compare_h200.md, section 6).
const BLOCK_M: usize = 64;
const BLOCK_S: usize = 128;
const PLANE_COLS: usize = PLANES;
const PLANE_M: usize = BLOCK_M;
const PLANE_S: usize = BLOCK_S / PLANE_COLS;
const ROW_TILES: usize = PLANE_M / FRAG;
const COL_TILES: usize = PLANE_S / FRAG;
/// Terms staged at a time.
const CHUNK: usize = 32;
/// Shared-memory row pitches: multiples of 4 floats (the tile loads' 16-byte
/// rule) that are not multiples of 32 (rows fall on different banks).
const A_PITCH: usize = CHUNK + 4;
const X_PITCH: usize = BLOCK_S + 4;
const OUT_PITCH: usize = FRAG + 4;

/// Whether `client`'s device multiplies TF32 tiles of `16×16×8` into f32 (CUDA
/// on Ampere and later; not wgpu).
pub fn tf32_supported<R: Runtime>(client: &ComputeClient<R>) -> bool {
    client.features().matmul.cmma.contains(&MmaConfig {
        a_type: ElemType::Float(FloatKind::TF32).into(),
        b_type: ElemType::Float(FloatKind::TF32).into(),
        cd_type: ElemType::Float(FloatKind::F32).into(),
        m: FRAG as u32,
        n: FRAG as u32,
        k: K_STEP as u32,
    })
}

impl PointwiseConvProblem {
    /// Whether the tensor-core kernel pays: at least one tile of rows and of
    /// terms (a 3-channel lifting layer or a 1-channel projection runs the f32
    /// kernel).
    pub fn suits_tf32(&self) -> bool {
        self.m >= FRAG && self.k >= FRAG
    }

    /// [`PointwiseConvProblem::launch`] with the products in TF32. The caller
    /// checks [`tf32_supported`].
    pub fn launch_tf32<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        a: &Handle,
        x: &Handle,
        bias: Option<&Handle>,
        y: &Handle,
    ) {
        assert!(self.k > 0, "a TF32 convolution needs terms");
        if !self.has_output(bias) {
            return;
        }
        let count = CubeCount::Static(
            self.points.div_ceil(BLOCK_S) as u32,
            self.m.div_ceil(BLOCK_M) as u32,
            self.batch as u32,
        );
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // SAFETY: staged loads are masked to the problem (index 0 stands in for
        // an invalid one) and stores go to rows and points inside it.
        unsafe {
            pointwise_conv_tf32_kernel::launch_unchecked::<R>(
                client,
                count,
                CubeDim::new_2d(PLANE as u32, PLANES as u32),
                arr(a, self.a_extent()),
                arr(x, self.batch * self.k * self.points),
                match bias {
                    Some(h) => arr(h, self.m),
                    None => arr(a, 1),
                },
                arr(y, self.batch * self.m * self.points),
                PointwiseDimsLaunch::new(self.m, self.k, self.points, self.a_row, self.a_col),
                self.bias,
            );
        }
    }
}

/// `v` rounded to TF32 as the tensor cores see it (round to nearest on the
/// 10-bit mantissa), for oracles.
pub fn round_to_tf32(v: f32) -> f32 {
    let bits = v.to_bits();
    if !v.is_finite() {
        return v;
    }
    // Round half away from zero on the 13 dropped bits, as `__float_to_tf32`.
    f32::from_bits((bits + 0x1000) & !0x1fff)
}

/// `v` as the tensor cores' input type (for TF32, rounded).
#[cube]
fn rounded<T: Float>(v: f32) -> T {
    T::cast_from(v)
}

/// Chunk `k0` of the cube's operands into registers: `A`'s 64 rows by CHUNK
/// terms, `X`'s CHUNK terms by 128 points (consecutive threads load
/// consecutive values); zeros outside the problem.
#[cube]
fn load_chunk(
    a: &Array<f32>,
    x: &Array<f32>,
    a_next: &mut Array<f32>,
    x_next: &mut Array<f32>,
    thread: usize,
    k0: usize,
    m0: usize,
    s0: usize,
    x_base: usize,
    dims: &PointwiseDims,
) {
    let (m_len, k_len, points) = (dims.m_len, dims.k_len, dims.points);
    let (a_row, a_col) = (dims.a_row, dims.a_col);
    // Thread t loads term `t % CHUNK` of rows `t / CHUNK + (THREADS / CHUNK)·j`,
    // and point `t % BLOCK_S` of terms `t / BLOCK_S + (THREADS / BLOCK_S)·j`.
    let c = thread % CHUNK;
    let term_valid = k0 + c < k_len;
    #[unroll]
    for j in 0..BLOCK_M * CHUNK / THREADS {
        let r = m0 + j * (THREADS / CHUNK) + thread / CHUNK;
        let valid = term_valid && r < m_len;
        let at = select(valid, r * a_row + (k0 + c) * a_col, 0);
        a_next[j] = select(valid, a[at], f32::new(0.0));
    }
    let term0 = k0 + thread / BLOCK_S;
    let point_valid = s0 + thread % BLOCK_S < points;
    let first = x_base + term0 * points + s0 + thread % BLOCK_S;
    #[unroll]
    for j in 0..CHUNK * BLOCK_S / THREADS {
        let valid = point_valid && term0 + j * (THREADS / BLOCK_S) < k_len;
        let at = select(valid, first + j * (THREADS / BLOCK_S) * points, 0);
        x_next[j] = select(valid, x[at], f32::new(0.0));
    }
}

#[cube(launch_unchecked)]
fn pointwise_conv_tf32_kernel(
    a: &Array<f32>,
    x: &Array<f32>,
    bias: &Array<f32>,
    y: &mut Array<f32>,
    dims: &PointwiseDims,
    #[comptime] biased: bool,
) {
    let (m_len, k_len, points) = (dims.m_len, dims.k_len, dims.points);
    let lane = UNIT_POS_X as usize;
    let plane = UNIT_POS_Y as usize;
    let thread = plane * PLANE + lane;
    let s0 = CUBE_POS_X as usize * BLOCK_S;
    let m0 = CUBE_POS_Y as usize * BLOCK_M;
    let sample = CUBE_POS_Z as usize;
    let x_base = sample * k_len * points;

    // A staged row-major (rows × terms), X term-major (terms × points).
    let mut smem_a = SharedMemory::<tf32>::new_aligned(BLOCK_M * A_PITCH, 32usize);
    let mut smem_x = SharedMemory::<tf32>::new_aligned(CHUNK * X_PITCH, 32usize);
    let mut scratch = SharedMemory::<f32>::new_aligned(PLANES * FRAG * OUT_PITCH, 32usize);

    let mut acc = Sequence::<cmma::Matrix<f32>>::new();
    #[unroll]
    for _ in 0..ROW_TILES * COL_TILES {
        acc.push(cmma::Matrix::<f32>::from_value(
            cmma::MatrixIdent::Accumulator,
            FRAG,
            FRAG,
            K_STEP,
            cmma::MatrixLayout::Undefined,
            f32::new(0.0),
        ));
    }

    // Each chunk's operands are loaded into registers while the previous
    // chunk is multiplied, and stored (rounded) to shared memory after it.
    let mut a_next = Array::<f32>::new(BLOCK_M * CHUNK / THREADS);
    let mut x_next = Array::<f32>::new(CHUNK * BLOCK_S / THREADS);
    let (row0, col0) = ((plane / PLANE_COLS) * PLANE_M, (plane % PLANE_COLS) * PLANE_S);
    load_chunk(a, x, &mut a_next, &mut x_next, thread, 0, m0, s0, x_base, dims);
    let mut k0 = 0;
    while k0 < k_len {
        #[unroll]
        for j in 0..BLOCK_M * CHUNK / THREADS {
            let r = j * (THREADS / CHUNK) + thread / CHUNK;
            smem_a[r * A_PITCH + thread % CHUNK] = rounded::<tf32>(a_next[j]);
        }
        #[unroll]
        for j in 0..CHUNK * BLOCK_S / THREADS {
            let term = j * (THREADS / BLOCK_S) + thread / BLOCK_S;
            smem_x[term * X_PITCH + thread % BLOCK_S] = rounded::<tf32>(x_next[j]);
        }
        sync_cube();
        if k0 + CHUNK < k_len {
            let k1 = k0 + CHUNK;
            load_chunk(a, x, &mut a_next, &mut x_next, thread, k1, m0, s0, x_base, dims);
        }
        #[unroll]
        for kk in 0..CHUNK / K_STEP {
            let mut b_tiles = Sequence::<cmma::Matrix<tf32>>::new();
            #[unroll]
            for j in 0..COL_TILES {
                let start = kk * K_STEP * X_PITCH + col0 + j * FRAG;
                b_tiles.push(cmma::Matrix::<tf32>::from_slice(
                    cmma::MatrixIdent::B,
                    FRAG,
                    FRAG,
                    K_STEP,
                    cmma::MatrixLayout::RowMajor,
                    &smem_x.slice(start, start + (K_STEP - 1) * X_PITCH + FRAG),
                    X_PITCH as u32,
                ));
            }
            #[unroll]
            for i in 0..ROW_TILES {
                let start = (row0 + i * FRAG) * A_PITCH + kk * K_STEP;
                let a_tile = cmma::Matrix::<tf32>::from_slice(
                    cmma::MatrixIdent::A,
                    FRAG,
                    FRAG,
                    K_STEP,
                    cmma::MatrixLayout::RowMajor,
                    &smem_a.slice(start, start + (FRAG - 1) * A_PITCH + K_STEP),
                    A_PITCH as u32,
                );
                #[unroll]
                for j in 0..COL_TILES {
                    let c = acc.index(i * COL_TILES + j);
                    cmma::execute::<tf32, tf32, f32, f32>(&a_tile, b_tiles.index(j), c, c);
                }
            }
        }
        sync_cube();
        k0 += CHUNK;
    }

    // Each tile through the plane's scratch: consecutive lanes write
    // consecutive points, the bias added on the way.
    let out = plane * FRAG * OUT_PITCH;
    let y_base = sample * m_len * points;
    #[unroll]
    for i in 0..ROW_TILES {
        #[unroll]
        for j in 0..COL_TILES {
            cmma::store(
                &mut scratch.slice_mut(out, out + (FRAG - 1) * OUT_PITCH + FRAG),
                acc.index(i * COL_TILES + j),
                OUT_PITCH as u32,
                cmma::MatrixLayout::RowMajor,
            );
            sync_plane();
            #[unroll]
            for t in 0..FRAG * FRAG / PLANE {
                let e = lane + t * PLANE;
                let (r, s) = (e / FRAG, e % FRAG);
                let row = m0 + row0 + i * FRAG + r;
                let point = s0 + col0 + j * FRAG + s;
                if row < m_len && point < points {
                    let offset = if comptime![biased] { bias[row] } else { f32::new(0.0) };
                    y[y_base + row * points + point] = scratch[out + r * OUT_PITCH + s] + offset;
                }
            }
            sync_plane();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf32_keeps_ten_mantissa_bits_rounding_ties_away() {
        let ulp = 2f32.powi(-10);
        assert_eq!(round_to_tf32(1.0 + ulp), 1.0 + ulp);
        assert_eq!(round_to_tf32(1.0 + ulp / 4.0), 1.0);
        assert_eq!(round_to_tf32(1.0 + ulp / 2.0), 1.0 + ulp);
        assert_eq!(round_to_tf32(-(1.0 + ulp / 2.0)), -(1.0 + ulp));
        assert_eq!(round_to_tf32(2.0 + 1.5 * ulp), 2.0 + 2.0 * ulp);
        assert!(round_to_tf32(f32::NAN).is_nan());
        assert_eq!(round_to_tf32(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn short_contractions_and_few_rows_stay_on_the_f32_kernel() {
        let problem = |m, k| PointwiseConvProblem {
            batch: 1,
            m,
            k,
            points: 64,
            a_row: k,
            a_col: 1,
            bias: false,
        };
        assert!(problem(64, 64).suits_tf32());
        assert!(!problem(64, 3).suits_tf32());
        assert!(!problem(1, 128).suits_tf32());
    }
}

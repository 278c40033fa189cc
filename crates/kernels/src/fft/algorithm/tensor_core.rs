//! Tensor-core butterflies (tcFFT, `../shared/papers/`): half-precision C2C
//! transforms of 256 points whose radix-16 DFTs run as matrix products on
//! CUDA's `m16n8k16` MMA (f16 or bf16 operands, f32 sums).
//!
//! A warp transforms 256 points in registers as 16 × 16: products of the
//! 16-point DFT matrix with the columns, a twiddle, and products with the
//! rows. The second product reads the first one's accumulators as they lie:
//! an accumulator lane holds row `g`, columns `2t, 2t + 1` of its tile, which
//! are the K rows `2t, 2t + 1` and column `g` of the transposed tile as a B
//! operand wants them, so no value moves between lanes and no shared memory
//! is used. Longer signals lost to the stage kernels this way (a radix pass
//! and the rows through shared memory: docs/half_precision.md).

use cubecl::cmma::MmaDefinition;
use cubecl::features::MmaConfig;
use cubecl::ir::{ElemType, FloatKind, MatrixIdent};
use cubecl::prelude::*;

use crate::pairs::{read_pair, write_pair};
use crate::precision::{store_value, Storage};

/// Signal length of the tensor-core transform: 16 × 16 points, one warp's registers.
pub const TENSOR_CORE_LEN: usize = 256;
/// Warps of a cube, each transforming its own signals.
const WARPS: usize = 4;
/// Signals a warp transforms one after another, reusing the DFT matrix and
/// twiddles it holds in registers (and loading the next while it transforms one).
const SIGNALS_IN_TURN: usize = 4;
const RADIX: usize = 16;
const WARP: usize = 32;

type Pair<E> = Vector<E, Const<2>>;
/// A lane's part of an MMA operand or accumulator, as vectors of two.
type Fragment<E> = Array<Pair<E>>;
/// The real and imaginary accumulators of a signal's two tiles: tile 0, then tile 1.
type TileSums = (Fragment<f32>, Fragment<f32>, Fragment<f32>, Fragment<f32>);

/// The MMA operand type of a tensor-core transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaHalf {
    F16,
    BF16,
}

/// A tensor-core transform of contiguous signals of [`TENSOR_CORE_LEN`] points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorCoreConfig {
    pub inverse: bool,
    pub mma: MmaHalf,
    /// Whether the input is read as vectors of one complex value.
    pub vector_input: bool,
    /// Whether the output is written as vectors of two complex values (else float by float).
    pub vector_output: bool,
}

impl TensorCoreConfig {
    pub fn new(inverse: bool, mma: MmaHalf) -> Self {
        TensorCoreConfig {
            inverse,
            mma,
            vector_input: true,
            vector_output: true,
        }
    }

    pub fn threads(&self) -> usize {
        WARP * WARPS
    }

    /// Cubes for `signals` signals.
    pub fn cubes(&self, signals: usize) -> usize {
        signals.div_ceil(WARPS * SIGNALS_IN_TURN)
    }
}

/// Whether `client`'s device multiplies f16 and bf16 tiles of `16×8×16` into
/// f32 with manually held registers (CUDA on Ampere and later; not wgpu).
pub fn half_mma_supported<R: Runtime>(client: &ComputeClient<R>) -> bool {
    [FloatKind::F16, FloatKind::BF16].into_iter().all(|half| {
        client.features().matmul.mma.contains(&MmaConfig {
            a_type: ElemType::Float(half).into(),
            b_type: ElemType::Float(half).into(),
            cd_type: ElemType::Float(FloatKind::F32).into(),
            m: RADIX as u32,
            n: 8,
            k: RADIX as u32,
        })
    })
}

/// Transforms `signals` contiguous signals of 256 points, each output times
/// `scale`. `twiddles` holds `exp(-2πi·j/256)` for `j < 256`, interleaved
/// (conjugated here for an inverse). Warp `w` of a cube takes its signals
/// `w, w + 4, …` in turn, straight from and to global memory, with the DFT
/// matrix and its twiddles in registers throughout.
#[cube(launch_unchecked)]
pub fn fft_tensor_core_kernel<M: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    twiddles: &Array<f32>,
    signals: usize,
    scale: f32,
    #[comptime] cfg: TensorCoreConfig,
) {
    let def = MmaDefinition::<M, M, f32>::new(RADIX, 8usize, RADIX);
    let lane = UNIT_POS_PLANE;
    let (re, im, neg) = dft_fragments::<M>(def, twiddles, lane, cfg.inverse);
    let (tw_re, tw_im) = row_twiddles(twiddles, lane, cfg.inverse);
    let f = Dft16::<M> {
        re,
        im,
        neg,
        tw_re,
        tw_im,
    };
    let first = CUBE_POS * comptime![WARPS * SIGNALS_IN_TURN] + UNIT_POS as usize / WARP;
    let g = (lane / 4) as usize;
    let t = (lane % 4) as usize;
    let mut b_re0 = Array::<Pair<M>>::new(2usize);
    let mut b_im0 = Array::<Pair<M>>::new(2usize);
    let mut b_re1 = Array::<Pair<M>>::new(2usize);
    let mut b_im1 = Array::<Pair<M>>::new(2usize);
    if first < signals {
        let base = first * TENSOR_CORE_LEN;
        load_tile::<M, SI, NI>(input, base, lane, 0usize, &mut b_re0, &mut b_im0, cfg.vector_input);
        load_tile::<M, SI, NI>(input, base, lane, 8usize, &mut b_re1, &mut b_im1, cfg.vector_input);
    }
    for s in 0..SIGNALS_IN_TURN {
        let signal = first + s * WARPS;
        // The whole warp takes one signal: the branch is uniform, as MMA needs.
        if signal < signals {
            let base = signal * TENSOR_CORE_LEN;
            let (d_re0, d_im0, d_re1, d_im1) = column_products::<M>(def, &f, &b_re0, &b_im0, &b_re1, &b_im1);
            // The next signal loads while this one's rows transform and store.
            let next = select(signal + WARPS < signals, signal + WARPS, signal) * TENSOR_CORE_LEN;
            load_tile::<M, SI, NI>(input, next, lane, 0usize, &mut b_re0, &mut b_im0, cfg.vector_input);
            load_tile::<M, SI, NI>(input, next, lane, 8usize, &mut b_re1, &mut b_im1, cfg.vector_input);
            let (o_re0, o_im0, o_re1, o_im1) = row_products::<M>(def, &f, &d_re0, &d_im0, &d_re1, &d_im1);
            // Vector w of tile u holds outputs 8u + 2t + 16(g + 8w) and the next.
            #[unroll]
            for w in 0..2usize {
                let d = base + 2 * t + RADIX * (g + 8 * w);
                write_two::<SO, NO>(output, d, o_re0[w], o_im0[w], scale, cfg.vector_output);
                write_two::<SO, NO>(output, d + 8, o_re1[w], o_im1[w], scale, cfg.vector_output);
            }
        }
    }
}

/// What a warp's transforms use throughout: the 16-point DFT matrix's A
/// fragments and the lane's eight twiddles between a signal's two products.
#[derive(CubeType)]
struct Dft16<M: Float> {
    re: Fragment<M>,
    im: Fragment<M>,
    neg: Fragment<M>,
    /// `w_256^(c·b)` of accumulator element `e` of vector `u` of column tile `j`, at `4u + 2j + e`.
    tw_re: Array<f32>,
    tw_im: Array<f32>,
}

/// Writes outputs `k` and `k + 1` (`k` even), each times `scale`: one
/// vector of four values where the output is bound so, else value by value.
#[cube]
fn write_two<S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    k: usize,
    re: Pair<f32>,
    im: Pair<f32>,
    scale: f32,
    #[comptime] vector: bool,
) {
    if comptime![vector] {
        let mut v = Vector::<S::Elem, N>::empty();
        #[unroll]
        for e in 0..2usize {
            v[2 * e] = store_value::<f32, S>(re[e] * scale);
            v[2 * e + 1] = store_value::<f32, S>(im[e] * scale);
        }
        output[k / 2] = v;
    } else {
        #[unroll]
        for e in 0..2usize {
            write_pair::<f32, S, N>(output, k + e, re[e] * scale, im[e] * scale, false);
        }
    }
}

/// `w^j` of the table, conjugated for an inverse transform.
#[cube]
fn twiddle(twiddles: &Array<f32>, j: usize, #[comptime] inverse: bool) -> (f32, f32) {
    let s = twiddles[2 * j + 1];
    (twiddles[2 * j], if comptime![inverse] { -s } else { s })
}

/// A fragments of the 16-point DFT matrix (entry `(r, c)`: `w_16^(rc)`,
/// `w_16 = table[16]`): real part, imaginary part and its negation.
#[cube]
fn dft_fragments<M: Float>(
    def: MmaDefinition<M, M, f32>,
    twiddles: &Array<f32>,
    lane: u32,
    #[comptime] inverse: bool,
) -> (Fragment<M>, Fragment<M>, Fragment<M>) {
    let mut re = Array::<Pair<M>>::new(4usize);
    let mut im = Array::<Pair<M>>::new(4usize);
    let mut neg = Array::<Pair<M>>::new(4usize);
    #[unroll]
    for v in 0..4usize {
        let mut vr = Pair::<M>::empty();
        let mut vi = Pair::<M>::empty();
        let mut vn = Pair::<M>::empty();
        #[unroll]
        for e in 0..2usize {
            let nth = (2 * v + e) as u32;
            let (row, col) = def.position_of_nth(lane, nth, MatrixIdent::A);
            let (c, s) = twiddle(
                twiddles,
                ((row * col) % 16) as usize * (TENSOR_CORE_LEN / RADIX),
                inverse,
            );
            vr[e] = M::cast_from(c);
            vi[e] = M::cast_from(s);
            vn[e] = M::cast_from(-s);
        }
        re[v] = vr;
        im[v] = vi;
        neg[v] = vn;
    }
    (re, im, neg)
}

/// `F·X` of complex 16 × 16 `F` and 16 × 8 `X` in four real MMAs.
#[cube]
fn complex_mma<M: Float>(
    def: MmaDefinition<M, M, f32>,
    f_re: &Fragment<M>,
    f_im: &Fragment<M>,
    f_neg: &Fragment<M>,
    x_re: &Fragment<M>,
    x_im: &Fragment<M>,
) -> (Array<Pair<f32>>, Array<Pair<f32>>) {
    let mut zero = Array::<Pair<f32>>::new(2usize);
    zero[0usize] = Pair::<f32>::new(0.0);
    zero[1usize] = Pair::<f32>::new(0.0);
    let d_re = def.execute(f_re, x_re, &zero);
    let d_re = def.execute(f_neg, x_im, &d_re);
    let d_im = def.execute(f_re, x_im, &zero);
    let d_im = def.execute(f_im, x_re, &d_im);
    (d_re, d_im)
}

/// A signal's first products: `Y[c, b] = Σ_a F[c, a] x[16a + b]`, tile `j`
/// holding `b = 8j + 2t + e`, `c = g + 8w`.
#[cube]
fn column_products<M: Float>(
    def: MmaDefinition<M, M, f32>,
    f: &Dft16<M>,
    b_re0: &Fragment<M>,
    b_im0: &Fragment<M>,
    b_re1: &Fragment<M>,
    b_im1: &Fragment<M>,
) -> TileSums {
    let (d_re0, d_im0) = complex_mma::<M>(def, &f.re, &f.im, &f.neg, b_re0, b_im0);
    let (d_re1, d_im1) = complex_mma::<M>(def, &f.re, &f.im, &f.neg, b_re1, b_im1);
    (d_re0, d_im0, d_re1, d_im1)
}

/// A signal's second products, of the twiddled first ones: tile `u` of the
/// transposed `Y` (K: `b`, N: `c = 8u + g`) is vector `u` of both column tiles.
#[cube]
fn row_products<M: Float>(
    def: MmaDefinition<M, M, f32>,
    f: &Dft16<M>,
    d_re0: &Fragment<f32>,
    d_im0: &Fragment<f32>,
    d_re1: &Fragment<f32>,
    d_im1: &Fragment<f32>,
) -> TileSums {
    let (r00, i00) = twiddled::<M>(d_re0, d_im0, 0usize, 0usize, f);
    let (r01, i01) = twiddled::<M>(d_re1, d_im1, 0usize, 1usize, f);
    let (r10, i10) = twiddled::<M>(d_re0, d_im0, 1usize, 0usize, f);
    let (r11, i11) = twiddled::<M>(d_re1, d_im1, 1usize, 1usize, f);
    let (y_re0, y_im0) = (pair_array::<M>(r00, r01), pair_array::<M>(i00, i01));
    let (y_re1, y_im1) = (pair_array::<M>(r10, r11), pair_array::<M>(i10, i11));
    let (o_re0, o_im0) = complex_mma::<M>(def, &f.re, &f.im, &f.neg, &y_re0, &y_im0);
    let (o_re1, o_im1) = complex_mma::<M>(def, &f.re, &f.im, &f.neg, &y_re1, &y_im1);
    (o_re0, o_im0, o_re1, o_im1)
}

/// The lane's twiddles `w_256^(c·b)` between a signal's products (see
/// [`Dft16::tw_re`]; `c = g + 8u`, `b = 8j + 2t + e`).
#[cube]
fn row_twiddles(twiddles: &Array<f32>, lane: u32, #[comptime] inverse: bool) -> (Array<f32>, Array<f32>) {
    let g = (lane / 4) as usize;
    let t = (lane % 4) as usize;
    let mut re = Array::<f32>::new(8usize);
    let mut im = Array::<f32>::new(8usize);
    #[unroll]
    for u in 0..2usize {
        #[unroll]
        for j in 0..2usize {
            #[unroll]
            for e in 0..2usize {
                let (wr, wi) = twiddle(twiddles, (g + 8 * u) * (8 * j + 2 * t + e), inverse);
                re[4 * u + 2 * j + e] = wr;
                im[4 * u + 2 * j + e] = wi;
            }
        }
    }
    (re, im)
}

/// A B fragment of two vectors.
#[cube]
fn pair_array<M: Float>(v0: Pair<M>, v1: Pair<M>) -> Fragment<M> {
    let mut a = Array::<Pair<M>>::new(2usize);
    a[0usize] = v0;
    a[1usize] = v1;
    a
}

/// Accumulator vector `u` of column tile `j` times its twiddles, as MMA operands.
#[cube]
fn twiddled<M: Float>(
    d_re: &Fragment<f32>,
    d_im: &Fragment<f32>,
    #[comptime] u: usize,
    #[comptime] j: usize,
    f: &Dft16<M>,
) -> (Pair<M>, Pair<M>) {
    let dr = d_re[u];
    let di = d_im[u];
    let mut re = Pair::<M>::empty();
    let mut im = Pair::<M>::empty();
    #[unroll]
    for e in 0..2usize {
        let wr = f.tw_re[4 * u + 2 * j + e];
        let wi = f.tw_im[4 * u + 2 * j + e];
        re[e] = M::cast_from(dr[e] * wr - di[e] * wi);
        im[e] = M::cast_from(dr[e] * wi + di[e] * wr);
    }
    (re, im)
}

/// Loads B tile `b0 / 8` of a signal in global memory into `re`,
/// `im`: `x[base + 16a + b0 + g]`, `a = 2t + e + 8v`.
#[cube]
fn load_tile<M: Float, S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    base: usize,
    lane: u32,
    #[comptime] b0: usize,
    re: &mut Fragment<M>,
    im: &mut Fragment<M>,
    #[comptime] vector: bool,
) {
    let g = (lane / 4) as usize;
    let t = (lane % 4) as usize;
    #[unroll]
    for v in 0..2usize {
        let mut vr = Pair::<M>::empty();
        let mut vi = Pair::<M>::empty();
        #[unroll]
        for e in 0..2usize {
            let a = 2 * t + e + 8 * v;
            let (xr, xi) = read_pair::<f32, S, N>(input, base + RADIX * a + b0 + g, vector);
            vr[e] = M::cast_from(xr);
            vi[e] = M::cast_from(xi);
        }
        re[v] = vr;
        im[v] = vi;
    }
}

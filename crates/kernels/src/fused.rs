//! The fused spectral convolution along one axis (TurboFNO's FFT→CGEMM→iFFT):
//! `y[b, o, ·, e] = inverse( Σ_i forward(x[b, i, ·, e])[k] · W[i, o, k, e] )`
//! in one kernel, the spectrum never leaving the chip.
//!
//! A cube owns a tile of batches and output channels at one inner position `e`
//! (the retained modes of the axes after this one, each with its own weights)
//! and every retained mode `k` of the axis. Its k-loop walks the input
//! channels a chunk at a time:
//! 1. for each batch of the tile, the chunk's pencils are transformed by the
//!    Stockham passes of [`crate::fft`]'s stage kernel (any length: mixed radix
//!    or Bluestein, real or complex input), held in shared memory, and their
//!    retained modes copied into the contraction's operand in shared memory;
//! 2. every thread multiplies its (output channel, mode) pairs by the weights
//!    and accumulates over the chunk, for every batch of the tile, in registers.
//!
//! The epilogue stages the accumulated modes of a few output channels at a time
//! in shared memory, zero-pads them through the inverse stage's load window and
//! runs the inverse passes, which write the output once.
//!
//! The same kernel runs the input gradient (the adjoint transforms, `conj(W)ᵀ`
//! and the Hermitian bin weights as a per-mode scale) and can write the forward
//! spectrum it computes, which the weight gradient needs.

use cubecl::prelude::*;

use crate::precision::{Native, Storage};
use cubecl::server::Handle;
use cubecl::CubeElement;

use crate::cgemm::{ModeBias, Strides};
use crate::fft::factor::gcd;
use crate::fft::stage::{
    fold_packed_tile, folds_in_shared, hermitian_bin, hermitian_imag, input_slot, load_tile, loads_directly,
    packed_bin_imag, store_tile, stores_directly, tile_output, transform_tile, unit_in_tile, window_index,
    window_position, InputForm, StageConfig, StageLayout, TileCoords,
};
use crate::fft::{shared_stage, shared_stage_tables, AxisStep, FftError, FftPlan};
use crate::pairs::{pair_aligned, vector_size};

/// Where the pencils of one tensor lie, in floats: signal `(b, c, e)` starts at
/// `b·batch + c·channel + e·inner`, and its entries along the axis are `axis`
/// floats apart (complex entries keep (re, im) adjacent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PencilStrides {
    pub batch: usize,
    pub channel: usize,
    pub axis: usize,
    pub inner: usize,
}

impl PencilStrides {
    /// A dense `[batch, channels, len, inner]` tensor of `parts`-float entries.
    pub fn dense(channels: usize, len: usize, inner: usize, parts: usize) -> Self {
        PencilStrides {
            batch: channels * len * inner * parts,
            channel: len * inner * parts,
            axis: inner * parts,
            inner: parts,
        }
    }

    /// The strides in entries of `parts` floats (what the stages address by).
    fn in_entries(self, parts: usize) -> [usize; 4] {
        [
            self.batch / parts,
            self.channel / parts,
            self.axis / parts,
            self.inner / parts,
        ]
    }
}

/// Compile-time shape of a cube's work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FusedConfig {
    /// The forward transform over a tile of `forward.signals_per_cube` input
    /// channels (the chunk of the k-loop), its output left in shared memory.
    pub forward: StageConfig,
    /// The inverse transform over a tile of `inverse.signals_per_cube` output
    /// channels, its input filled from the accumulated modes. Both stages run
    /// on all of the cube's threads.
    pub inverse: StageConfig,
    /// Retained modes along the axis (complex).
    pub modes: usize,
    /// Batches and output channels a cube owns.
    pub batch_tile: usize,
    pub out_tile: usize,
    pub conj_weight: bool,
    pub scaled: bool,
    pub biased: bool,
    pub write_spectrum: bool,
}

impl FusedConfig {
    pub fn threads(&self) -> usize {
        self.forward.threads_per_cube()
    }

    /// Input channels transformed and contracted per step of the k-loop.
    pub fn chunk(&self) -> usize {
        self.forward.signals_per_cube
    }

    /// Output channels per inverse tile.
    fn out_signals(&self) -> usize {
        self.inverse.signals_per_cube
    }

    /// Floats of each of the two (re, im) work tiles the stages share.
    fn work_len(&self) -> usize {
        let tile = |cfg: &StageConfig| cfg.signals_per_cube * cfg.smem_stride;
        tile(&self.forward).max(tile(&self.inverse))
    }

    /// Floats of the modes buffer: the chunk's spectra for every batch of the
    /// tile in the k-loop, one inverse tile's accumulated modes in the epilogue.
    fn modes_len(&self) -> usize {
        2 * self.modes * (self.batch_tile * self.chunk()).max(self.out_signals())
    }

    /// Shared memory the cube uses, in bytes.
    pub fn shared_bytes(&self) -> usize {
        4 * (2 * self.work_len() + self.modes_len())
    }

    /// (output channel, mode) pairs of the contraction per thread.
    pub fn contraction_pairs(&self) -> usize {
        (self.out_tile * self.modes).div_ceil(self.threads())
    }

    /// Contraction accumulators per thread (complex).
    pub fn accumulators(&self) -> usize {
        self.contraction_pairs() * self.batch_tile
    }

    /// Whether a cube of these tiles fits the shared memory and the
    /// accumulators a thread may hold.
    pub fn fits(&self) -> bool {
        self.shared_bytes() <= SHARED_LIMIT && self.accumulators() <= MAX_ACCUMULATORS
    }
}

#[cube(launch_unchecked)]
// Comptime switches stay outer ifs: a kernel without the feature has none of its code.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn fused_kernel<F: Float + CubeElement, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    x: &Array<Vector<SI::Elem, NI>>,
    weight: &Array<F>,
    y: &mut Array<Vector<SO::Elem, NO>>,
    spectrum: &mut Array<F>,
    forward_twiddles: &Array<F>,
    forward_factors: &Array<F>,
    inverse_twiddles: &Array<F>,
    inverse_factors: &Array<F>,
    scale: &Array<F>,
    bias: &Array<F>,
    bias_mode: usize,
    bias_factor: F,
    batch: usize,
    cin: usize,
    cout: usize,
    inner: usize,
    x_batch: usize,
    x_channel: usize,
    x_axis: usize,
    x_inner: usize,
    y_batch: usize,
    y_channel: usize,
    y_axis: usize,
    y_inner: usize,
    w_in: usize,
    w_out: usize,
    w_mode: usize,
    #[comptime] cfg: FusedConfig,
) {
    let lane = UNIT_POS as usize;
    let fwd = comptime![cfg.forward.clone()];
    let inv = comptime![cfg.inverse.clone()];
    let nt = comptime![cfg.threads()];
    let m = comptime![cfg.modes];
    let (bt_n, ot_n, cc_n, os_n) = comptime![(cfg.batch_tile, cfg.out_tile, cfg.chunk(), cfg.out_signals())];
    let e = CUBE_POS_X as usize;
    let o_tile = CUBE_POS_Y as usize;
    let o0 = o_tile * ot_n;
    let b0 = CUBE_POS_Z as usize * bt_n;

    let mut work_re = SharedMemory::<F>::new(comptime![cfg.work_len()]);
    let mut work_im = SharedMemory::<F>::new(comptime![cfg.work_len()]);
    let mut modes = SharedMemory::<F>::new(comptime![cfg.modes_len()]);

    let cp = comptime![cfg.contraction_pairs()];
    let mut acc_re = Array::<F>::new(comptime![cfg.accumulators()]);
    let mut acc_im = Array::<F>::new(comptime![cfg.accumulators()]);
    #[unroll]
    for t in 0..comptime![cfg.accumulators()] {
        acc_re[t] = F::new(0.0);
        acc_im[t] = F::new(0.0);
    }

    let (fwd_signal, fwd_thread) = unit_in_tile(fwd.clone());
    let fwd_out_seq = comptime![cfg.forward.output_seq_len()];
    let fwd_scale = F::new(comptime![f32::from_bits(cfg.forward.scale_bits)]);
    let mut ci0 = 0usize;
    while ci0 < cin {
        // 1. The forward transforms of the chunk's pencils, a batch at a time;
        // their retained modes go to modes[bt, cc, k]. Batches past the end
        // transform the last one again (never stored), keeping every sync uniform.
        // Runtime loops around the transforms keep the kernel's code (and its
        // compile time) to one copy of each stage.
        for bt in 0..bt_n {
            let b = b0 + bt;
            let at = TileCoords {
                in_base: select(b < batch, b, batch - 1) * x_batch + ci0 * x_channel + e * x_inner,
                out_base: 0,
                in_sc: x_channel,
                out_sc: 0,
                in_axis: x_axis,
                out_axis: 0,
                b: 0,
                c0: ci0,
                nc: cin,
            };
            if comptime![!loads_directly(&cfg.forward)] {
                load_tile::<F, SI, NI>(x, forward_factors, at, &mut work_re, &mut work_im, fwd.clone());
            }
            transform_tile::<F, SI, SO, NI, NO>(
                x,
                y,
                forward_twiddles,
                forward_twiddles,
                forward_twiddles,
                forward_factors,
                &mut work_re,
                &mut work_im,
                at,
                fwd_signal,
                fwd_thread,
                fwd.clone(),
            );
            let mut flat = lane;
            while flat < comptime![cfg.chunk() * cfg.modes] {
                let (s, j) = (flat / m, flat % m);
                let k = window_index(j, comptime![cfg.forward.store], fwd_out_seq);
                let (vr, vi) =
                    tile_output::<F>(&work_re, &work_im, forward_twiddles, forward_factors, s, k, fwd.clone());
                let (vr, vi) = (vr * fwd_scale, vi * fwd_scale);
                let at_mode = 2 * ((bt * cc_n + s) * m + j);
                modes[at_mode] = vr;
                modes[at_mode + 1] = vi;
                if comptime![cfg.write_spectrum] {
                    let c = ci0 + s;
                    if o_tile == 0 && b < batch && c < cin {
                        let at_spectrum = 2 * (((b * cin + c) * m + j) * inner + e);
                        spectrum[at_spectrum] = vr;
                        spectrum[at_spectrum + 1] = vi;
                    }
                }
                flat += nt;
            }
            // The next batch's transform overwrites the work tile.
            sync_cube();
        }

        // 2. The contraction: acc[b, o, k] += Σ_c modes[b, c, k] · W[c, o, k, e].
        #[unroll]
        for cc in 0..cc_n {
            let c = ci0 + cc;
            #[unroll]
            for i in 0..cp {
                let u = lane + i * nt;
                let (k, o) = (u % m, u / m);
                let valid = o < ot_n && o0 + o < cout && c < cin;
                let at = 2 * select(valid, c * w_in + (o0 + o) * w_out + (k * inner + e) * w_mode, 0);
                let wr = select(valid, weight[at], F::new(0.0));
                let mut wi = select(valid, weight[at + 1], F::new(0.0));
                if comptime![cfg.conj_weight] {
                    wi = -wi;
                }
                #[unroll]
                for bt in 0..bt_n {
                    let xs = 2 * ((bt * cc_n + cc) * m + k);
                    let (xr, xi) = (modes[xs], modes[xs + 1]);
                    acc_re[i * bt_n + bt] += xr * wr - xi * wi;
                    acc_im[i * bt_n + bt] += xr * wi + xi * wr;
                }
            }
        }
        // The next chunk's transforms overwrite `modes`.
        sync_cube();
        ci0 += cc_n;
    }

    // 3. The epilogue, per batch and inverse tile of output channels: the
    // accumulated modes (scaled, biased) into `modes`, through the inverse
    // stage's load window into the work tile, the inverse passes, the output.
    let (inv_signal, inv_thread) = unit_in_tile(inv.clone());
    let inv_in_seq = comptime![cfg.inverse.input_seq_len()];
    let inv_load_len = comptime![cfg.inverse.load_len()];
    let inv_stride = comptime![cfg.inverse.smem_stride];
    let tiles = comptime![cfg.out_tile.div_ceil(cfg.inverse.signals_per_cube)];
    for step in 0..bt_n * tiles {
        let (bt, og) = (step / tiles, (step % tiles) * os_n);
        let b = b0 + bt;
        {
            // The accumulators stay in registers: their indices are comptime.
            #[unroll]
            for i in 0..cp {
                #[unroll]
                for bt_r in 0..bt_n {
                    let u = lane + i * nt;
                    let (k, o) = (u % m, u / m);
                    if bt_r == bt && o >= og && o < og + os_n && o < ot_n {
                        let s = if comptime![cfg.scaled] {
                            scale[(k * inner + e) % scale.len()]
                        } else {
                            F::new(1.0)
                        };
                        let mut re = acc_re[i * bt_n + bt_r] * s;
                        if comptime![cfg.biased] {
                            if k * inner + e == bias_mode && o0 + o < cout {
                                re += bias_factor * bias[o0 + o];
                            }
                        }
                        let at_mode = 2 * ((o - og) * m + k);
                        modes[at_mode] = re;
                        modes[at_mode + 1] = acc_im[i * bt_n + bt_r] * s;
                    }
                }
            }
            sync_cube();
            let mut flat = lane;
            while flat < comptime![cfg.inverse.load_len() * cfg.inverse.signals_per_cube] {
                let (s, k) = (flat / inv_load_len, flat % inv_load_len);
                // A Hermitian input holds bins 0..=n/2: the others are X[n-k] = conj X[k],
                // and DC and Nyquist are real.
                let hermitian = comptime![cfg.inverse.input == InputForm::Hermitian];
                let n = comptime![cfg.inverse.n];
                let (mut bin, mut mirrored) = (k, false);
                if comptime![hermitian] {
                    let (b, mi) = hermitian_bin(k, n);
                    bin = b;
                    mirrored = mi;
                }
                let (held, j) = window_position(bin, comptime![cfg.inverse.load], inv_in_seq);
                let mut vr = F::new(0.0);
                let mut vi = F::new(0.0);
                if held {
                    vr = modes[2 * (s * m + j)];
                    vi = modes[2 * (s * m + j) + 1];
                    if comptime![hermitian] {
                        vi = hermitian_imag::<F>(vi, bin, mirrored, n);
                    }
                }
                let to = s * inv_stride + input_slot::<F>(inverse_factors, k, inv.clone());
                work_re[to] = vr;
                work_im[to] = packed_bin_imag::<F>(vi, k, inv.clone());
                flat += nt;
            }
            sync_cube();
            if comptime![folds_in_shared(&cfg.inverse)] {
                fold_packed_tile::<F>(
                    &mut work_re,
                    &mut work_im,
                    inverse_twiddles,
                    inv_signal,
                    inv_thread,
                    inv.clone(),
                );
            }
            // Only this tile's channels, and none of a batch past the end.
            let last = select(o0 + ot_n < cout, o0 + ot_n, cout);
            let at = TileCoords {
                in_base: 0,
                out_base: select(b < batch, b, batch - 1) * y_batch + (o0 + og) * y_channel + e * y_inner,
                in_sc: 0,
                out_sc: y_channel,
                in_axis: 0,
                out_axis: y_axis,
                b: 0,
                c0: o0 + og,
                nc: select(b < batch, last, 0),
            };
            transform_tile::<F, SI, SO, NI, NO>(
                x,
                y,
                inverse_twiddles,
                inverse_twiddles,
                inverse_twiddles,
                inverse_factors,
                &mut work_re,
                &mut work_im,
                at,
                inv_signal,
                inv_thread,
                inv.clone(),
            );
            if comptime![!stores_directly(&cfg.inverse)] {
                store_tile::<F, SO, NO>(
                    y,
                    inverse_twiddles,
                    inverse_twiddles,
                    inverse_twiddles,
                    inverse_factors,
                    &work_re,
                    &work_im,
                    at,
                    inv.clone(),
                );
            }
            // The next tile overwrites `modes` and the work tile.
            sync_cube();
        }
    }
}

/// Threads a cube aims for.
const THREADS: usize = 256;
/// Signals of a stage's tile at most (short transforms have one thread each).
const MAX_TILE_SIGNALS: usize = 32;
/// Threads a cube may have.
const MAX_THREADS: usize = 1024;
/// Shared memory a cube may take (every backend we target gives 48 KiB).
const SHARED_LIMIT: usize = 48 * 1024;
/// Contraction accumulators a thread may hold (complex values).
const MAX_ACCUMULATORS: usize = 32;
/// Cubes wanted in flight (one per multiprocessor of a large GPU): tiles
/// shrink until the grid has this many.
const MIN_CUBES: usize = 132;

/// One fused spectral convolution along one axis.
#[derive(Clone, Debug)]
pub struct FusedSpectralConv {
    pub batch: usize,
    /// Channels contracted (input channels; output channels for the input gradient).
    pub cin: usize,
    pub cout: usize,
    /// Positions after the axis (product of the later retained modes).
    pub inner: usize,
    pub x: PencilStrides,
    pub y: PencilStrides,
    /// Weight strides in complex elements: row walks `cin`, column `cout`, mode
    /// the flat index `k·inner + e` (0 for one weight shared by all modes).
    pub weight: Strides,
    pub conj_weight: bool,
    /// Output mode `k·inner + e` scaled by `mode_scale[(k·inner + e) % len]`.
    pub mode_scale: Vec<f32>,
    /// A bias per output channel added to the accumulated mode `k·inner + e`
    /// (after the scale) before the inverse.
    pub bias: Option<ModeBias>,
    steps: (AxisStep, AxisStep),
    /// The two transforms as stages on tiles in shared memory, one signal per tile.
    stages: (StageConfig, StageConfig),
}

/// The device buffers of one launch (f32): `x`, the weight and `y`; the
/// forward spectrum written on the way if wanted; the bias values if the
/// problem has a [`ModeBias`].
#[derive(Clone, Copy)]
pub struct FusedBuffers<'a> {
    pub x: &'a Handle,
    pub weight: &'a Handle,
    pub y: &'a Handle,
    pub spectrum: Option<&'a Handle>,
    pub bias: Option<&'a Handle>,
}

/// The two transforms' twiddle tables and factors on a device.
pub struct FusedTables {
    steps: (AxisStep, AxisStep),
    forward: [(Handle, usize); 2],
    inverse: [(Handle, usize); 2],
}

/// The single axis step of a plan over `[batch, channels, len, inner…]`, and its batch, channels and inner size.
fn single_step(plan: &FftPlan, what: &str) -> Result<(AxisStep, usize, usize, usize), FftError> {
    let shape = plan.input_shape();
    match plan.steps() {
        [step] if step.axis == 2 => Ok((*step, shape[0], shape[1], shape[3..].iter().product())),
        _ => Err(FftError::Invalid(format!(
            "the fused kernel's {what} transform must run along axis 2 of [batch, channels, len, …], got {:?}",
            plan.desc()
        ))),
    }
}

/// Floats per entry of a stage's input and output arrays.
fn entry_floats(cfg: &StageConfig) -> (usize, usize) {
    let floats = |real: bool| if real { 1 } else { 2 };
    (floats(cfg.input.is_real()), floats(cfg.output.is_real()))
}

impl FusedSpectralConv {
    /// The fused pattern of two one-axis plans: `forward` over `[batch, cin,
    /// n_in, inner…]` keeping `M` modes of axis 2 (R2C or C2C), `inverse` over
    /// `[batch, cout, M, inner…]` (C2C or C2R). Tensors are dense unless the
    /// strides are changed; the weight's strides are given.
    pub fn new(forward: &FftPlan, inverse: &FftPlan, weight: Strides) -> Result<Self, FftError> {
        let (fwd, batch, cin, inner) = single_step(forward, "forward")?;
        let (inv, inv_batch, cout, inv_inner) = single_step(inverse, "inverse")?;
        let stages = (shared_stage(&fwd), shared_stage(&inv));
        if entry_floats(&stages.0).1 != 2 || entry_floats(&stages.1).0 != 2 {
            return Err(FftError::Invalid(
                "the fused kernel contracts complex spectra: forward R2C/C2C, inverse C2C/C2R".into(),
            ));
        }
        if (inv_batch, inv_inner, inv.in_len) != (batch, inner, fwd.out_len) {
            return Err(FftError::Invalid(format!(
                "the inverse transform of {inverse_shape:?} does not take the forward's {} modes of [{batch}, ·, ·, {inner}]",
                fwd.out_len,
                inverse_shape = inverse.input_shape()
            )));
        }
        let (forward_parts, inverse_parts) = (entry_floats(&stages.0).0, entry_floats(&stages.1).1);
        let problem = FusedSpectralConv {
            batch,
            cin,
            cout,
            inner,
            x: PencilStrides::dense(cin, fwd.in_len, inner, forward_parts),
            y: PencilStrides::dense(cout, inv.out_len, inner, inverse_parts),
            weight,
            conj_weight: false,
            mode_scale: Vec::new(),
            bias: None,
            steps: (fwd, inv),
            stages,
        };
        // The smallest tiles must fit: a cube of both stages' threads, one
        // batch and one output channel.
        let smallest = FusedConfig {
            batch_tile: 1,
            out_tile: 1,
            ..problem.config(false)
        };
        if smallest.threads() > MAX_THREADS || smallest.shared_bytes() > SHARED_LIMIT {
            return Err(FftError::Unsupported(format!(
                "fused transforms of lengths {} and {} need {} threads and {} bytes of shared memory per cube (at most {MAX_THREADS}, {SHARED_LIMIT})",
                fwd.n,
                inv.n,
                smallest.threads(),
                smallest.shared_bytes()
            )));
        }
        Ok(problem)
    }

    /// Retained modes along the axis.
    pub fn modes(&self) -> usize {
        self.steps.0.out_len
    }

    fn is_scaled(&self) -> bool {
        self.mode_scale.iter().any(|&s| s != 1.0)
    }

    fn cubes(&self, cfg: &FusedConfig) -> usize {
        self.inner * self.cout.div_ceil(cfg.out_tile) * self.batch.div_ceil(cfg.batch_tile)
    }

    /// The two stages on tiles of one cube: as many threads as both stages'
    /// tiles can share (whole signals each), near [`THREADS`]; pair I/O where
    /// the tensors' strides allow it.
    fn stages_for_cube(&self) -> (StageConfig, StageConfig) {
        let (mut forward, mut inverse) = self.stages.clone();
        let (tf, ti) = (forward.threads_per_signal, inverse.threads_per_signal);
        let common = tf / gcd(tf, ti) * ti;
        // Whole multiples of both stages' threads, at most THREADS, tiles of at
        // most MAX_TILE_SIGNALS and no more input channels than there are.
        let most_signals = MAX_TILE_SIGNALS.min(self.cin.next_power_of_two());
        let multiple = (1..=(THREADS / common).max(1))
            .rev()
            .find(|j| j * common / tf <= most_signals && j * common / ti <= MAX_TILE_SIGNALS)
            .unwrap_or(1);
        let threads = common * multiple;
        forward.signals_per_cube = threads / tf;
        inverse.signals_per_cube = threads / ti;
        forward.store_shared = true;
        inverse.load_shared = true;
        let layout = |s: PencilStrides, parts: usize, channels: usize| {
            let [batch, channel, axis, _] = s.in_entries(parts);
            StageLayout {
                na: 1,
                nb: self.batch,
                nc: channels,
                input: [0, batch, channel, axis],
                output: [0, batch, channel, axis],
            }
        };
        let (fp, ip) = (entry_floats(&forward).0, entry_floats(&inverse).1);
        forward = forward.with_layout(&layout(self.x, fp, self.cin), false);
        inverse = inverse.with_layout(&layout(self.y, ip, self.cout), false);
        // The forward's output and the inverse's input stay in shared memory.
        forward.vector_output = false;
        inverse.vector_input = false;
        (forward, inverse)
    }

    /// The tile shape this problem launches with.
    pub fn config(&self, write_spectrum: bool) -> FusedConfig {
        let (forward, inverse) = self.stages_for_cube();
        let mut cfg = FusedConfig {
            forward,
            inverse,
            modes: self.modes(),
            batch_tile: self.batch.next_power_of_two().min(4),
            // Every output channel in one tile where possible: each tile
            // transforms the whole input again.
            out_tile: self.cout.next_power_of_two().min(64),
            conj_weight: self.conj_weight,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            write_spectrum,
        };
        // Shrink the tiles until they fit, the batch tile first, then for
        // parallelism the output tile only down to 16 (smaller ones repeat the
        // forward transforms).
        loop {
            let (over, few) = (!cfg.fits(), self.cubes(&cfg) < MIN_CUBES);
            if !over && !few {
                break;
            }
            if cfg.batch_tile > 1 {
                cfg.batch_tile /= 2;
            } else if cfg.out_tile > if over { 1 } else { 16 } {
                cfg.out_tile /= 2;
            } else {
                break;
            }
        }
        cfg
    }

    /// Floats of every buffer: (x, weight, y, spectrum).
    pub fn extents(&self) -> (usize, usize, usize, usize) {
        let pencil = |s: PencilStrides, channels: usize, len: usize, parts: usize| {
            (self.batch - 1) * s.batch
                + (channels - 1) * s.channel
                + (self.inner - 1) * s.inner
                + (len - 1) * s.axis
                + parts
        };
        let (fwd, inv) = self.steps;
        let x = pencil(self.x, self.cin, fwd.in_len, entry_floats(&self.stages.0).0);
        let y = pencil(self.y, self.cout, inv.out_len, entry_floats(&self.stages.1).1);
        let w = &self.weight;
        let modes = self.modes() * self.inner;
        let weight = 2 * ((self.cin - 1) * w.row + (self.cout - 1) * w.col + (modes - 1) * w.mode + 1);
        (x, weight, y, 2 * self.batch * self.cin * modes)
    }

    /// Uploads the two transforms' tables for `client`'s device; any problem
    /// with the same transforms launches with them.
    pub fn tables<R: Runtime>(&self, client: &ComputeClient<R>) -> FusedTables {
        let upload = |values: &[f32]| (client.create_from_slice(f32::as_bytes(values)), values.len());
        let upload_stage = |cfg: &StageConfig| {
            let (twiddles, factors) = shared_stage_tables(cfg);
            [upload(&twiddles), upload(&factors)]
        };
        FusedTables {
            steps: self.steps,
            forward: upload_stage(&self.stages.0),
            inverse: upload_stage(&self.stages.1),
        }
    }

    /// Runs on a CubeCL device (f32 buffers). With `spectrum`, also writes the
    /// forward transform of `x`, `[batch, cin, M, inner]` complex, densely;
    /// `bias` holds the [`ModeBias`]'s `cout` values when the problem has one.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, tables: &FusedTables, buffers: FusedBuffers<'_>) {
        self.dispatch(self.config(buffers.spectrum.is_some()), client, tables, buffers)
    }

    /// [`launch`](Self::launch) with chosen tiles (for tests and tuning); the
    /// configuration's stages and flags must be this problem's.
    pub fn launch_with<R: Runtime>(
        &self,
        cfg: FusedConfig,
        client: &ComputeClient<R>,
        tables: &FusedTables,
        buffers: FusedBuffers<'_>,
    ) {
        let own = self.config(buffers.spectrum.is_some());
        let tiles = |c: &FusedConfig| FusedConfig {
            batch_tile: 0,
            out_tile: 0,
            ..c.clone()
        };
        assert_eq!(tiles(&cfg), tiles(&own), "the configuration belongs to another problem");
        assert!(cfg.fits(), "tiles that do not fit: {cfg:?}");
        self.dispatch(cfg, client, tables, buffers)
    }

    fn dispatch<R: Runtime>(
        &self,
        mut cfg: FusedConfig,
        client: &ComputeClient<R>,
        tables: &FusedTables,
        buffers: FusedBuffers<'_>,
    ) {
        assert!(tables.steps == self.steps, "the tables belong to other transforms");
        assert_eq!(
            buffers.bias.is_some(),
            self.bias.is_some(),
            "a biased problem launches with its bias values, and only it"
        );
        let FusedBuffers {
            x,
            weight,
            y,
            spectrum,
            bias,
        } = buffers;
        // A buffer that starts inside a pair (a view at an odd float offset) moves floats one by one.
        cfg.forward.vector_input &= pair_aligned(x);
        cfg.inverse.vector_output &= pair_aligned(y);
        let (ex, ew, ey, es) = self.extents();
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // Unscaled and unbiased launches bind the weight in the scale and bias
        // slots, and a launch without a spectrum binds the weight in its slot
        // (never written: the switch is comptime).
        let scale = if cfg.scaled {
            let factors = client.create_from_slice(f32::as_bytes(&self.mode_scale));
            arr(&factors, self.mode_scale.len())
        } else {
            arr(weight, 1)
        };
        let spectrum = match spectrum {
            Some(s) => arr(s, es),
            None => arr(weight, 1),
        };
        let (bias, mode_bias) = match (bias, self.bias) {
            (Some(h), Some(mb)) => (arr(h, self.cout), mb),
            _ => (arr(weight, 1), ModeBias { mode: 0, factor: 0.0 }),
        };
        let count = CubeCount::Static(
            self.inner as u32,
            self.cout.div_ceil(cfg.out_tile) as u32,
            self.batch.div_ceil(cfg.batch_tile) as u32,
        );
        let (xs, ys) = (
            self.x.in_entries(entry_floats(&cfg.forward).0),
            self.y.in_entries(entry_floats(&cfg.inverse).1),
        );
        let table = |t: &(Handle, usize)| arr(&t.0, t.1);
        // SAFETY: launched without bounds checks: every index the kernel forms
        // stays inside the arrays sized here (see `DeviceFft::launch`).
        unsafe {
            fused_kernel::launch_unchecked::<f32, Native<f32>, Native<f32>, R>(
                client,
                count,
                CubeDim::new_1d(cfg.threads() as u32),
                vector_size(cfg.forward.vector_input),
                vector_size(cfg.inverse.vector_output),
                arr(x, ex),
                arr(weight, ew),
                arr(y, ey),
                spectrum,
                table(&tables.forward[0]),
                table(&tables.forward[1]),
                table(&tables.inverse[0]),
                table(&tables.inverse[1]),
                scale,
                bias,
                mode_bias.mode,
                mode_bias.factor,
                self.batch,
                self.cin,
                self.cout,
                self.inner,
                xs[0],
                xs[1],
                xs[2],
                xs[3],
                ys[0],
                ys[1],
                ys[2],
                ys[3],
                self.weight.row,
                self.weight.col,
                self.weight.mode,
                cfg,
            );
        }
    }
}

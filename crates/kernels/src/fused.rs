//! The fused spectral convolution along one axis (TurboFNO's FFT→CGEMM→iFFT):
//! `y[b, o, ·, e] = inverse( Σ_i forward(x[b, i, ·, e])[k] · W[i, o, k, e] )`
//! in one kernel, the spectrum never leaving the chip.
//!
//! A cube owns a tile of batches and output channels at one inner position `e`
//! (the retained modes of the axes after this one, each with its own weights)
//! and every retained mode `k` of the axis. Its k-loop walks the input
//! channels a chunk at a time:
//! 1. the chunk's pencils are staged in shared memory and transformed by the
//!    direct DFT of the retained modes (a real matrix product with the
//!    transform's matrix, as [`crate::fft`]'s direct DFT: any length, window,
//!    scale and real or complex input), straight into the CGEMM's operand layout
//!    in shared memory;
//! 2. every thread multiplies its (output channel, mode) pairs by the weights
//!    and accumulates over the chunk, for every batch of the tile, in registers.
//!
//! The epilogue stages the accumulated modes of one batch at a time in shared
//! memory and runs the inverse DFT (zero-padded: only the retained modes are
//! terms of its matrix), writing the output once.
//!
//! The same kernel runs the input gradient (the adjoint transforms, `conj(W)ᵀ`
//! and the Hermitian bin weights as a per-mode scale) and can write the forward
//! spectrum it computes, which the weight gradient needs.

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

use crate::cgemm::{ModeBias, Strides};
use crate::fft::dft::{DftShape, MAX_MATRIX};
use crate::fft::{AxisStep, FftError, FftPlan};

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
}

/// Compile-time shape of a cube's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FusedConfig {
    /// Retained modes along the axis (complex).
    pub modes: usize,
    /// Batches and output channels a cube owns.
    pub batch_tile: usize,
    pub out_tile: usize,
    /// Input channels transformed and contracted per step of the k-loop.
    pub chunk: usize,
    /// Floats of every pencil staged at a time by the forward DFT.
    pub terms_chunk: usize,
    /// Pencils per thread in the forward DFT, output channels per thread in the
    /// inverse: each matrix entry loaded feeds this many products.
    pub reuse: usize,
    pub threads: usize,
    pub in_parts: usize,
    pub out_parts: usize,
    pub conj_weight: bool,
    pub scaled: bool,
    pub biased: bool,
    pub write_spectrum: bool,
}

impl FusedConfig {
    /// Floats of a complex spectrum along the axis.
    fn mode_floats(&self) -> usize {
        2 * self.modes
    }

    fn signals(&self) -> usize {
        self.batch_tile * self.chunk
    }

    /// Shared memory the cube uses, in bytes.
    pub fn shared_bytes(&self) -> usize {
        let staged = self.signals() * (self.terms_chunk + 1);
        let spectrum = self.signals() * self.mode_floats();
        let accumulated = self.out_tile * self.mode_floats();
        4 * (staged + spectrum + accumulated)
    }

    /// (mode-float, pencil group) pairs of the forward DFT per thread.
    fn forward_pairs(&self) -> usize {
        (self.mode_floats() * self.signals() / self.reuse).div_ceil(self.threads)
    }

    /// (output channel, mode) pairs of the contraction per thread.
    fn contraction_pairs(&self) -> usize {
        (self.out_tile * self.modes).div_ceil(self.threads)
    }
}

/// Float `f` of the axis entries of signal `(b, c, e)` (strides in floats).
#[cube]
#[allow(clippy::too_many_arguments)]
fn pencil_address(
    b: usize,
    c: usize,
    e: usize,
    f: usize,
    s_batch: usize,
    s_channel: usize,
    s_axis: usize,
    s_inner: usize,
    #[comptime] parts: usize,
) -> usize {
    b * s_batch + c * s_channel + e * s_inner + (f / parts) * s_axis + f % parts
}

#[cube(launch)]
// Comptime switches stay outer ifs: a kernel without the feature has none of its code.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn fused_kernel<F: Float + CubeElement>(
    x: &Array<F>,
    weight: &Array<F>,
    y: &mut Array<F>,
    spectrum: &mut Array<F>,
    forward: &Array<F>,
    inverse: &Array<F>,
    scale: &Array<F>,
    bias: &Array<F>,
    bias_mode: usize,
    bias_factor: F,
    batch: usize,
    cin: usize,
    cout: usize,
    inner: usize,
    terms: usize,
    out_rows: usize,
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
    let nt = comptime![cfg.threads];
    let m = comptime![cfg.modes];
    let rows = comptime![cfg.mode_floats()];
    let (bt_n, ot_n, cc_n) = comptime![(cfg.batch_tile, cfg.out_tile, cfg.chunk)];
    let qc = comptime![cfg.terms_chunk];
    let reuse = comptime![cfg.reuse];
    let signals = comptime![cfg.signals()];
    let groups = comptime![cfg.signals() / cfg.reuse];
    let e = CUBE_POS_X as usize;
    let o_tile = CUBE_POS_Y as usize;
    let o0 = o_tile * ot_n;
    let b0 = CUBE_POS_Z as usize * bt_n;

    let mut staged = SharedMemory::<F>::new(comptime![cfg.signals() * (cfg.terms_chunk + 1)]);
    let mut spec = SharedMemory::<F>::new(comptime![cfg.signals() * cfg.mode_floats()]);
    let mut acc_modes = SharedMemory::<F>::new(comptime![cfg.out_tile * cfg.mode_floats()]);

    let fp = comptime![cfg.forward_pairs()];
    let cp = comptime![cfg.contraction_pairs()];
    let mut acc_dft = Array::<F>::new(comptime![cfg.forward_pairs() * cfg.reuse]);
    let mut acc_re = Array::<F>::new(comptime![cfg.contraction_pairs() * cfg.batch_tile]);
    let mut acc_im = Array::<F>::new(comptime![cfg.contraction_pairs() * cfg.batch_tile]);
    #[unroll]
    for t in 0..comptime![cfg.contraction_pairs() * cfg.batch_tile] {
        acc_re[t] = F::new(0.0);
        acc_im[t] = F::new(0.0);
    }

    let mut ci0 = 0usize;
    while ci0 < cin {
        // 1. The forward DFT of the chunk's pencils: spec[s, p] = Σ_q forward[q, p] · pencil_s[q].
        #[unroll]
        for t in 0..comptime![cfg.forward_pairs() * cfg.reuse] {
            acc_dft[t] = F::new(0.0);
        }
        let mut q0 = 0usize;
        while q0 < terms {
            #[unroll]
            for t in 0..comptime![(cfg.signals() * cfg.terms_chunk).div_ceil(cfg.threads)] {
                let idx = lane + t * nt;
                if idx < signals * qc {
                    let (s, q) = (idx / qc, idx % qc);
                    let (b, c) = (b0 + s / cc_n, ci0 + s % cc_n);
                    let valid = b < batch && c < cin && q0 + q < terms;
                    let at = pencil_address(b, c, e, q0 + q, x_batch, x_channel, x_axis, x_inner, cfg.in_parts);
                    staged[s * (qc + 1) + q] = select(valid, x[select(valid, at, 0)], F::new(0.0));
                }
            }
            sync_cube();
            #[unroll]
            for i in 0..fp {
                let u = lane + i * nt;
                let (p, g) = (u % rows, u / rows);
                if g < groups {
                    #[unroll]
                    for q in 0..qc {
                        let valid = q0 + q < terms;
                        let a = select(valid, forward[select(valid, (q0 + q) * rows + p, 0)], F::new(0.0));
                        #[unroll]
                        for j in 0..reuse {
                            acc_dft[i * reuse + j] += a * staged[(g * reuse + j) * (qc + 1) + q];
                        }
                    }
                }
            }
            // The next terms may be staged only once every thread has read these.
            sync_cube();
            q0 += qc;
        }
        #[unroll]
        for i in 0..fp {
            let u = lane + i * nt;
            let (p, g) = (u % rows, u / rows);
            if g < groups {
                #[unroll]
                for j in 0..reuse {
                    let s = g * reuse + j;
                    let value = acc_dft[i * reuse + j];
                    spec[s * rows + p] = value;
                    if comptime![cfg.write_spectrum] {
                        let (b, c) = (b0 + s / cc_n, ci0 + s % cc_n);
                        if o_tile == 0 && b < batch && c < cin {
                            spectrum[(((b * cin + c) * m + p / 2) * inner + e) * 2 + p % 2] = value;
                        }
                    }
                }
            }
        }
        sync_cube();

        // 2. The contraction: acc[b, o, k] += Σ_c spec[b, c, k] · W[c, o, k, e].
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
                    let xs = (bt * cc_n + cc) * rows + 2 * k;
                    let (xr, xi) = (spec[xs], spec[xs + 1]);
                    acc_re[i * bt_n + bt] += xr * wr - xi * wi;
                    acc_im[i * bt_n + bt] += xr * wi + xi * wr;
                }
            }
        }
        // The next chunk's DFT overwrites `spec`.
        sync_cube();
        ci0 += cc_n;
    }

    // 3. The epilogue, a batch at a time: y[b, o, p] = Σ_q inverse[q, p] · acc[b, o, q].
    let out_groups = comptime![cfg.out_tile / cfg.reuse];
    let mut out = Array::<F>::new(comptime![cfg.reuse]);
    #[unroll]
    for bt in 0..bt_n {
        #[unroll]
        for i in 0..cp {
            let u = lane + i * nt;
            let (k, o) = (u % m, u / m);
            if o < ot_n {
                let s = if comptime![cfg.scaled] {
                    scale[(k * inner + e) % scale.len()]
                } else {
                    F::new(1.0)
                };
                let mut re = acc_re[i * bt_n + bt] * s;
                if comptime![cfg.biased] {
                    if k * inner + e == bias_mode && o0 + o < cout {
                        re += bias_factor * bias[o0 + o];
                    }
                }
                acc_modes[o * rows + 2 * k] = re;
                acc_modes[o * rows + 2 * k + 1] = acc_im[i * bt_n + bt] * s;
            }
        }
        sync_cube();
        let b = b0 + bt;
        let pairs = out_rows * out_groups;
        let mut u = lane;
        while u < pairs {
            let (p, g) = (u % out_rows, u / out_rows);
            #[unroll]
            for j in 0..reuse {
                out[j] = F::new(0.0);
            }
            for q in 0..rows {
                let a = inverse[q * out_rows + p];
                #[unroll]
                for j in 0..reuse {
                    out[j] += a * acc_modes[(g * reuse + j) * rows + q];
                }
            }
            #[unroll]
            for j in 0..reuse {
                let o = o0 + g * reuse + j;
                if b < batch && o < cout {
                    let at = pencil_address(b, o, e, p, y_batch, y_channel, y_axis, y_inner, cfg.out_parts);
                    y[at] = out[j];
                }
            }
            u += nt;
        }
        // The next batch overwrites the staged modes.
        sync_cube();
    }
}

/// Threads per cube.
const THREADS: usize = 256;
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
    forward: AxisStep,
    inverse: AxisStep,
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

/// The two transforms' DFT matrices on a device.
pub struct FusedMatrices {
    steps: (AxisStep, AxisStep),
    forward: (Handle, usize),
    inverse: (Handle, usize),
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

impl FusedSpectralConv {
    /// The fused pattern of two one-axis plans: `forward` over `[batch, cin,
    /// n_in, inner…]` keeping `M` modes of axis 2 (R2C or C2C), `inverse` over
    /// `[batch, cout, M, inner…]` (C2C or C2R). Tensors are dense unless the
    /// strides are changed; the weight's strides are given.
    pub fn new(forward: &FftPlan, inverse: &FftPlan, weight: Strides) -> Result<Self, FftError> {
        let (fwd, batch, cin, inner) = single_step(forward, "forward")?;
        let (inv, inv_batch, cout, inv_inner) = single_step(inverse, "inverse")?;
        let (fwd_shape, inv_shape) = (DftShape::of(&fwd), DftShape::of(&inv));
        if fwd_shape.out_parts != 2 || inv_shape.in_parts != 2 {
            return Err(FftError::Invalid(
                "the fused kernel contracts complex spectra: forward R2C/C2C, inverse C2C/C2R".into(),
            ));
        }
        if (inv_batch, inv_inner, inv_shape.terms) != (batch, inner, fwd_shape.rows) {
            return Err(FftError::Invalid(format!(
                "the inverse transform of {inverse_shape:?} does not take the forward's {} modes of [{batch}, ·, ·, {inner}]",
                fwd_shape.rows / 2,
                inverse_shape = inverse.input_shape()
            )));
        }
        for shape in [fwd_shape, inv_shape] {
            if shape.work() > MAX_MATRIX {
                return Err(FftError::Unsupported(format!(
                    "a fused transform matrix of {} × {} floats (at most {MAX_MATRIX})",
                    shape.terms, shape.rows
                )));
            }
        }
        Ok(FusedSpectralConv {
            batch,
            cin,
            cout,
            inner,
            x: PencilStrides::dense(cin, fwd.in_len, inner, fwd_shape.in_parts),
            y: PencilStrides::dense(cout, inv.out_len, inner, inv_shape.out_parts),
            weight,
            conj_weight: false,
            mode_scale: Vec::new(),
            bias: None,
            forward: fwd,
            inverse: inv,
        })
    }

    /// Retained modes along the axis.
    pub fn modes(&self) -> usize {
        DftShape::of(&self.forward).rows / 2
    }

    fn is_scaled(&self) -> bool {
        self.mode_scale.iter().any(|&s| s != 1.0)
    }

    fn cubes(&self, cfg: &FusedConfig) -> usize {
        self.inner * self.cout.div_ceil(cfg.out_tile) * self.batch.div_ceil(cfg.batch_tile)
    }

    /// The tile shape this problem launches with.
    pub fn config(&self, write_spectrum: bool) -> FusedConfig {
        let (fwd, inv) = (DftShape::of(&self.forward), DftShape::of(&self.inverse));
        let modes = fwd.rows / 2;
        let reuse = 4;
        let mut cfg = FusedConfig {
            modes,
            batch_tile: self.batch.next_power_of_two().min(4),
            // Every output channel in one tile where possible: each tile
            // transforms the whole input again.
            out_tile: self.cout.next_power_of_two().clamp(reuse, 64),
            chunk: 1,
            terms_chunk: 32,
            reuse,
            threads: THREADS,
            in_parts: fwd.in_parts,
            out_parts: inv.out_parts,
            conj_weight: self.conj_weight,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            write_spectrum,
        };
        // Enough pencils per chunk that the forward DFT's (row, pencil group)
        // pairs give every thread work, at most 32 channels.
        let chunk_for = |c: &FusedConfig| {
            (THREADS * reuse / (c.mode_floats() * c.batch_tile))
                .next_power_of_two()
                .clamp(reuse.div_ceil(c.batch_tile), 32)
        };
        cfg.chunk = chunk_for(&cfg);
        let fits = |c: &FusedConfig| {
            c.shared_bytes() <= SHARED_LIMIT && c.contraction_pairs() * c.batch_tile <= MAX_ACCUMULATORS
        };
        // Shrink the tiles until they fit, then the batch tile for parallelism;
        // the output tile only down to 16 for it (smaller ones repeat the DFT).
        loop {
            let (over, few) = (!fits(&cfg), self.cubes(&cfg) < MIN_CUBES);
            if !over && !few {
                break;
            }
            if cfg.batch_tile > 1 {
                cfg.batch_tile /= 2;
                cfg.chunk = chunk_for(&cfg);
            } else if over && cfg.chunk > reuse && cfg.shared_bytes() > SHARED_LIMIT {
                cfg.chunk /= 2;
            } else if cfg.out_tile > if over { reuse } else { 16 } {
                cfg.out_tile /= 2;
            } else {
                break;
            }
        }
        cfg
    }

    /// Floats of every buffer: (x, weight, y, spectrum).
    pub fn extents(&self) -> (usize, usize, usize, usize) {
        let pencil = |s: PencilStrides, channels: usize, len: usize| {
            (self.batch - 1) * s.batch + (channels - 1) * s.channel + (self.inner - 1) * s.inner + (len - 1) * s.axis
        };
        let (fwd, inv) = (DftShape::of(&self.forward), DftShape::of(&self.inverse));
        let x = pencil(self.x, self.cin, fwd.terms / fwd.in_parts) + fwd.in_parts;
        let y = pencil(self.y, self.cout, inv.rows / inv.out_parts) + inv.out_parts;
        let w = &self.weight;
        let modes = self.modes() * self.inner;
        let weight = 2 * ((self.cin - 1) * w.row + (self.cout - 1) * w.col + (modes - 1) * w.mode + 1);
        (x, weight, y, 2 * self.batch * self.cin * modes)
    }

    /// Uploads the two transforms' matrices for `client`'s device; any problem
    /// with the same transforms launches with them.
    pub fn matrices<R: Runtime>(&self, client: &ComputeClient<R>) -> FusedMatrices {
        let upload = |step: &AxisStep| {
            let values = DftShape::of(step).matrix(step);
            (client.create_from_slice(f32::as_bytes(&values)), values.len())
        };
        FusedMatrices {
            steps: (self.forward, self.inverse),
            forward: upload(&self.forward),
            inverse: upload(&self.inverse),
        }
    }

    /// Runs on a CubeCL device (f32 buffers). With `spectrum`, also writes the
    /// forward transform of `x`, `[batch, cin, M, inner]` complex, densely;
    /// `bias` holds the [`ModeBias`]'s `cout` values when the problem has one.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, matrices: &FusedMatrices, buffers: FusedBuffers<'_>) {
        self.dispatch(self.config(buffers.spectrum.is_some()), client, matrices, buffers)
    }

    /// [`launch`](Self::launch) with chosen tiles (for tests and tuning); the
    /// configuration's flags must be this problem's.
    pub fn launch_with<R: Runtime>(
        &self,
        cfg: FusedConfig,
        client: &ComputeClient<R>,
        matrices: &FusedMatrices,
        buffers: FusedBuffers<'_>,
    ) {
        let own = self.config(buffers.spectrum.is_some());
        let flags = |c: &FusedConfig| {
            (
                c.modes,
                c.in_parts,
                c.out_parts,
                c.conj_weight,
                c.scaled,
                c.biased,
                c.write_spectrum,
            )
        };
        assert_eq!(flags(&cfg), flags(&own), "the configuration belongs to another problem");
        assert!(
            cfg.shared_bytes() <= SHARED_LIMIT
                && cfg.out_tile.is_multiple_of(cfg.reuse)
                && cfg.signals().is_multiple_of(cfg.reuse),
            "tiles that do not fit: {cfg:?}"
        );
        self.dispatch(cfg, client, matrices, buffers)
    }

    fn dispatch<R: Runtime>(
        &self,
        cfg: FusedConfig,
        client: &ComputeClient<R>,
        matrices: &FusedMatrices,
        buffers: FusedBuffers<'_>,
    ) {
        assert!(
            matrices.steps == (self.forward, self.inverse),
            "the matrices belong to other transforms"
        );
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
        let (fwd, inv) = (DftShape::of(&self.forward), DftShape::of(&self.inverse));
        let (ex, ew, ey, es) = self.extents();
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // Unscaled and unbiased launches bind the weight in the scale and bias
        // slots, and a launch without a spectrum binds y in its slot: none is touched.
        let scale = if cfg.scaled {
            let factors = client.create_from_slice(f32::as_bytes(&self.mode_scale));
            arr(&factors, self.mode_scale.len())
        } else {
            arr(weight, 1)
        };
        let spectrum = match spectrum {
            Some(s) => arr(s, es),
            None => arr(y, 1),
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
        fused_kernel::launch::<f32, R>(
            client,
            count,
            CubeDim::new_1d(cfg.threads as u32),
            arr(x, ex),
            arr(weight, ew),
            arr(y, ey),
            spectrum,
            arr(&matrices.forward.0, matrices.forward.1),
            arr(&matrices.inverse.0, matrices.inverse.1),
            scale,
            bias,
            mode_bias.mode,
            mode_bias.factor,
            self.batch,
            self.cin,
            self.cout,
            self.inner,
            fwd.terms,
            inv.rows,
            self.x.batch,
            self.x.channel,
            self.x.axis,
            self.x.inner,
            self.y.batch,
            self.y.channel,
            self.y.axis,
            self.y.inner,
            self.weight.row,
            self.weight.col,
            self.weight.mode,
            cfg,
        );
    }
}

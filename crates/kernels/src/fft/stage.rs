//! The one FFT kernel: a batch of equal-length signals, each transformed in shared
//! memory by Stockham radix passes, with windowed loads (zero-padding, numpy's
//! crop/pad) and windowed stores (truncation) built in.
//!
//! Signals are addressed through three batch dimensions `(a, b, c)` and the
//! transform index `k`: element `k` of signal `(a, b, c)` lives at
//! `a*sa + b*sb + c*sc + k*sk`. A cube owns `signals_per_cube` consecutive `c`
//! values. When `sk == 1` the threads walk `k` fastest (rows); otherwise they walk
//! the signals fastest, so inner-axis ("column") transforms stay coalesced too.

use cubecl::prelude::*;

use super::window::Window;

/// What a stage reads and writes around its complex transform of length `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageKind {
    /// Complex in, complex out.
    C2C,
    /// Real input of length `2n` packed as `n` complex pairs; the `n + 1` bins of
    /// the real spectrum are untangled from the half-length transform.
    R2C,
    /// `n + 1` bins of a Hermitian spectrum in, real output of length `2n`.
    C2R,
    /// First pass of a large real forward transform: real pairs in, complex out
    /// (the untangling runs later, over the whole half-length spectrum).
    RealPairsIn,
    /// Last pass of a large real inverse transform: complex in, real pairs out.
    RealPairsOut,
}

impl StageKind {
    fn reads_real(self) -> bool {
        matches!(self, StageKind::R2C | StageKind::RealPairsIn)
    }
    fn writes_real(self) -> bool {
        matches!(self, StageKind::C2R | StageKind::RealPairsOut)
    }
    /// Real stages index a twiddle table of `2n` entries (the untangling needs `W_2n`).
    fn twiddle_table_step(self) -> usize {
        match self {
            StageKind::R2C | StageKind::C2R => 2,
            _ => 1,
        }
    }
}

/// How the transform index of a stage maps onto the axis of the whole signal when
/// the stage is one pass of a four-step FFT: axis index = `k * k_mul + d` where `d`
/// is the signal's index along batch dimension `dim`, whose stride is the axis
/// stride. Windows apply to that axis index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AxisFold {
    /// 1 for batch dimension `b`, 2 for `c`.
    pub dim: usize,
    pub k_mul: usize,
    /// Length of the whole axis sequence the window refers to.
    pub seq_len: usize,
}

/// Multiply output `k` of signal index `d` (along batch dimension `dim`) by
/// `exp(∓2πi·d·k / total)`: the twiddle between the two passes of a four-step FFT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostTwiddle {
    /// 1 for batch dimension `b`, 2 for `c`.
    pub dim: usize,
    pub total: usize,
    /// Split of the exponent `e = q·fine_len + r` between the two twiddle tables.
    pub fine_len: usize,
}

/// Everything the kernel is specialised on (shape-independent batch sizes and
/// strides travel as runtime scalars).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StageConfig {
    pub n: usize,
    pub radices: Vec<usize>,
    pub threads_per_signal: usize,
    pub signals_per_cube: usize,
    pub inverse: bool,
    pub kind: StageKind,
    /// Window over the stage's input sequence (real samples for R2C, bins for C2R).
    pub load: Window,
    /// Window over the stage's output sequence (bins for R2C, real samples for C2R).
    pub store: Window,
    pub load_signals_fastest: bool,
    pub store_signals_fastest: bool,
    /// Shared-memory distance between two signals of the tile.
    pub smem_stride: usize,
    /// Normalisation factor applied at the store, as `f32::to_bits`.
    pub scale_bits: u32,
    pub post_twiddle: Option<PostTwiddle>,
    pub load_fold: Option<AxisFold>,
    pub store_fold: Option<AxisFold>,
}

impl StageConfig {
    pub fn threads_per_cube(&self) -> usize {
        self.threads_per_signal * self.signals_per_cube
    }

    /// Complex values each thread holds in registers during a pass.
    pub fn values_per_thread(&self) -> usize {
        self.n / self.threads_per_signal
    }

    /// Length of the input sequence the load window refers to.
    pub fn input_seq_len(&self) -> usize {
        match (self.load_fold, self.kind) {
            (Some(fold), _) => fold.seq_len,
            (None, StageKind::C2R) => self.n + 1,
            (None, kind) if kind.reads_real() => 2 * self.n,
            (None, _) => self.n,
        }
    }

    /// Length of the output sequence the store window refers to.
    pub fn output_seq_len(&self) -> usize {
        match (self.store_fold, self.kind) {
            (Some(fold), _) => fold.seq_len,
            (None, StageKind::R2C) => self.n + 1,
            (None, kind) if kind.writes_real() => 2 * self.n,
            (None, _) => self.n,
        }
    }

    /// Complex slots per signal in shared memory (C2R keeps the Nyquist bin too).
    pub fn slots(&self) -> usize {
        if self.kind == StageKind::C2R {
            self.n + 1
        } else {
            self.n
        }
    }
}

/// Runtime description of where a tile's signals live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageLayout {
    /// Extents of the batch dimensions `a`, `b` and `c`.
    pub na: usize,
    pub nb: usize,
    pub nc: usize,
    /// Input strides of (a, b, c, axis), in elements of the input array's element
    /// type (real samples for real input, complex values otherwise). A batch
    /// dimension that a fold maps onto the axis has stride 0.
    pub input: [usize; 4],
    /// Output strides of (a, b, c, axis), likewise.
    pub output: [usize; 4],
}

#[cube]
fn complex_mul<F: Float>(ar: F, ai: F, br: F, bi: F) -> (F, F) {
    (ar * br - ai * bi, ar * bi + ai * br)
}

/// Multiplies by `-i` (forward) or `+i` (inverse): the radix-4 rotation.
#[cube]
fn rotate_quarter<F: Float>(re: F, im: F, #[comptime] inverse: bool) -> (F, F) {
    if inverse {
        (F::new(0.0) - im, re)
    } else {
        (im, F::new(0.0) - re)
    }
}

/// Radix-2 butterfly on registers `base` and `base + stride`.
#[cube]
fn butterfly2<F: Float>(re: &mut Array<F>, im: &mut Array<F>, i0: usize, i1: usize) {
    let (ar, ai) = (re[i0], im[i0]);
    let (br, bi) = (re[i1], im[i1]);
    re[i0] = ar + br;
    im[i0] = ai + bi;
    re[i1] = ar - br;
    im[i1] = ai - bi;
}

/// In-register DFT of the `r` values at `base + j*stride`, output in natural order
/// at the same places. Radices 2, 4 and 8 are decimation-in-time butterflies
/// with constant twiddles.
#[cube]
fn small_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
) {
    if comptime![r == 2] {
        butterfly2::<F>(re, im, base, base + stride);
    } else if comptime![r == 4] {
        let (i0, i1, i2, i3) = (base, base + stride, base + 2usize * stride, base + 3usize * stride);
        // Two radix-2 DFTs over even and odd samples, then combine with ∓i.
        butterfly2::<F>(re, im, i0, i2);
        butterfly2::<F>(re, im, i1, i3);
        let (r3, m3) = rotate_quarter::<F>(re[i3], im[i3], inverse);
        re[i3] = r3;
        im[i3] = m3;
        butterfly2::<F>(re, im, i0, i1);
        butterfly2::<F>(re, im, i2, i3);
        // Outputs sit at (0, 2, 1, 3): swap the middle pair into natural order.
        let (tr, ti) = (re[i1], im[i1]);
        re[i1] = re[i2];
        im[i1] = im[i2];
        re[i2] = tr;
        im[i2] = ti;
    } else if comptime![r == 8] {
        let h = comptime![core::f32::consts::FRAC_1_SQRT_2];
        // First radix-2 layer between j and j + 4.
        #[unroll]
        for j in 0..4usize {
            butterfly2::<F>(re, im, base + j * stride, base + (j + 4usize) * stride);
        }
        // Twiddles W8^j on the difference half (j = 1, 2, 3).
        let i5 = base + 5usize * stride;
        let i6 = base + 6usize * stride;
        let i7 = base + 7usize * stride;
        let (a5, b5) = (re[i5], im[i5]);
        let (a7, b7) = (re[i7], im[i7]);
        let (q6r, q6i) = rotate_quarter::<F>(re[i6], im[i6], inverse);
        re[i6] = q6r;
        im[i6] = q6i;
        if inverse {
            // W8^{-1} = (1 + i)/√2, W8^{-3} = (-1 + i)/√2
            re[i5] = (a5 - b5) * F::new(h);
            im[i5] = (a5 + b5) * F::new(h);
            re[i7] = (F::new(0.0) - a7 - b7) * F::new(h);
            im[i7] = (a7 - b7) * F::new(h);
        } else {
            // W8^1 = (1 - i)/√2, W8^3 = (-1 - i)/√2
            re[i5] = (a5 + b5) * F::new(h);
            im[i5] = (b5 - a5) * F::new(h);
            re[i7] = (b7 - a7) * F::new(h);
            im[i7] = (F::new(0.0) - a7 - b7) * F::new(h);
        }
        // Two radix-4 DFTs on (0, 1, 2, 3) and (4, 5, 6, 7) with stride 1 of j.
        small_dft::<F>(re, im, base, stride, 4usize, inverse);
        small_dft::<F>(re, im, base + 4usize * stride, stride, 4usize, inverse);
        // Result k of the first half is X[2k], of the second X[2k+1]: interleave.
        let mut tr = Array::<F>::new(8usize);
        let mut ti = Array::<F>::new(8usize);
        #[unroll]
        for j in 0..4usize {
            tr[2usize * j] = re[base + j * stride];
            ti[2usize * j] = im[base + j * stride];
            tr[2usize * j + 1usize] = re[base + (j + 4usize) * stride];
            ti[2usize * j + 1usize] = im[base + (j + 4usize) * stride];
        }
        #[unroll]
        for j in 0..8usize {
            re[base + j * stride] = tr[j];
            im[base + j * stride] = ti[j];
        }
    } else {
        comptime![panic!("unsupported radix {r}")];
    }
}

/// Reads the complex twiddle `exp(∓2πi·e/len)` from a table of `len` entries.
#[cube]
fn table_twiddle<F: Float>(table: &Array<F>, e: usize, #[comptime] inverse: bool) -> (F, F) {
    let wr = table[2 * e];
    let wi = table[2 * e + 1];
    if inverse {
        (wr, F::new(0.0) - wi)
    } else {
        (wr, wi)
    }
}

/// One Stockham pass of radix `radices[pass]` over every signal of the tile, in
/// place in shared memory, then the following passes.
#[cube]
fn stockham_passes<F: Float>(
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    twiddles: &Array<F>,
    signal: usize,
    thread: usize,
    #[comptime] pass: usize,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.n];
    let r = comptime![cfg.radices[pass]];
    // Product of the radices before this pass: the span already transformed.
    let span = comptime![cfg.radices[..pass].iter().product::<usize>()];
    let threads = comptime![cfg.threads_per_signal];
    let per_thread = comptime![n / r / cfg.threads_per_signal];
    let quarter_n = comptime![n / r];
    // Twiddle table holds `n * table_step` entries (twice n for real stages).
    let table_step = comptime![cfg.kind.twiddle_table_step()];
    let exp_step = comptime![n / (span * r) * table_step];
    let base = signal * comptime![cfg.smem_stride];

    let mut re = Array::<F>::new(comptime![cfg.values_per_thread()]);
    let mut im = Array::<F>::new(comptime![cfg.values_per_thread()]);

    #[unroll]
    for q in 0..per_thread {
        let i = thread + q * threads;
        let k = i % span;
        #[unroll]
        for j in 0..r {
            let src = base + i + j * quarter_n;
            let xr = smem_re[src];
            let xi = smem_im[src];
            if comptime![span > 1] {
                if j > 0 {
                    let (wr, wi) = table_twiddle::<F>(twiddles, j * k * exp_step, cfg.inverse);
                    let (yr, yi) = complex_mul::<F>(xr, xi, wr, wi);
                    re[q * r + j] = yr;
                    im[q * r + j] = yi;
                } else {
                    re[q * r + j] = xr;
                    im[q * r + j] = xi;
                }
            } else {
                re[q * r + j] = xr;
                im[q * r + j] = xi;
            }
        }
        small_dft::<F>(&mut re, &mut im, q * r, 1usize, r, cfg.inverse);
    }
    sync_cube();
    #[unroll]
    for q in 0..per_thread {
        let i = thread + q * threads;
        let k = i % span;
        let dst = base + (i - k) * r + k;
        #[unroll]
        for t in 0..r {
            smem_re[dst + t * span] = re[q * r + t];
            smem_im[dst + t * span] = im[q * r + t];
        }
    }
    sync_cube();

    if comptime![pass + 1 < cfg.radices.len()] {
        stockham_passes::<F>(smem_re, smem_im, twiddles, signal, thread, comptime![pass + 1], cfg);
    }
}

/// Dense position of sequence index `k` in a window, or `len` of the dense
/// storage when the window does not hold `k` (the caller treats it as zero).
#[cube]
fn window_position(k: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> (bool, usize) {
    match comptime![window] {
        Window::Prefix(len) => {
            let held = comptime![len.min(seq_len)];
            (k < held, k)
        }
        Window::Centered(m) => {
            let low = comptime![m - m / 2];
            let high_start = comptime![seq_len - m / 2];
            // Runtime wrap-around below is harmless: unheld positions are never read.
            let shift = comptime![seq_len - m];
            (k < low || k >= high_start, select(k < low, k, k - shift))
        }
    }
}

/// Sequence index held at dense position `j` of a window.
#[cube]
fn window_index(j: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> usize {
    match comptime![window] {
        Window::Prefix(_) => j,
        Window::Centered(m) => {
            let low = comptime![m - m / 2];
            let shift = comptime![seq_len - m];
            select(j < low, j, j + shift)
        }
    }
}

/// Splits a tile-local flat index into (signal, element) for the chosen walk order.
#[cube]
fn split_flat(flat: usize, #[comptime] len: usize, #[comptime] signals: usize, #[comptime] signals_fastest: bool) -> (usize, usize) {
    if signals_fastest {
        (flat % signals, flat / signals)
    } else {
        (flat / len, flat % len)
    }
}

/// Axis index (before windowing) of local element `k` of a signal whose index
/// along the fold's batch dimension is `d`.
#[cube]
fn axis_index(k: usize, d: usize, #[comptime] fold: Option<AxisFold>) -> usize {
    match comptime![fold] {
        Some(f) => k * comptime![f.k_mul] + d,
        None => k,
    }
}

#[cube]
fn fold_dim_index(b: usize, c: usize, #[comptime] fold: Option<AxisFold>) -> usize {
    match comptime![fold] {
        Some(f) => {
            if comptime![f.dim == 1] {
                b
            } else {
                c
            }
        }
        None => 0usize,
    }
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn fft_stage_kernel<F: Float>(
    input: &Array<F>,
    output: &mut Array<F>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    nb: usize,
    nc: usize,
    num_tiles: usize,
    in_sa: usize,
    in_sb: usize,
    in_sc: usize,
    in_axis: usize,
    out_sa: usize,
    out_sb: usize,
    out_sc: usize,
    out_axis: usize,
    #[comptime] cfg: StageConfig,
) {
    let tile = CUBE_POS;
    if tile >= num_tiles {
        terminate!();
    }
    let signals = comptime![cfg.signals_per_cube];
    let n = comptime![cfg.n];
    let stride = comptime![cfg.smem_stride];
    let cube_threads = comptime![cfg.threads_per_cube()];
    let tiles_c = (nc + signals - 1) / signals;
    let c0 = (tile % tiles_c) * signals;
    let ab = tile / tiles_c;
    let b = ab % nb;
    let a = ab / nb;
    let in_base = a * in_sa + b * in_sb + c0 * in_sc;
    let out_base = a * out_sa + b * out_sb + c0 * out_sc;

    let mut smem_re = SharedMemory::<F>::new(comptime![cfg.signals_per_cube * cfg.smem_stride]);
    let mut smem_im = SharedMemory::<F>::new(comptime![cfg.signals_per_cube * cfg.smem_stride]);

    // ---- load: the tile's (windowed) input into shared memory, zeros elsewhere ----
    let in_seq = comptime![cfg.input_seq_len()];
    let slots = comptime![cfg.slots()];
    let load_count = comptime![cfg.slots() * cfg.signals_per_cube];
    let mut flat = UNIT_POS as usize;
    while flat < load_count {
        let (s, k) = split_flat(flat, slots, signals, comptime![cfg.load_signals_fastest]);
        let in_tile = c0 + s < nc;
        let sig = in_base + s * in_sc;
        let d = fold_dim_index(b, c0 + s, cfg.load_fold);
        let axis = axis_index(k, d, cfg.load_fold);
        let mut vr = F::new(0.0);
        let mut vi = F::new(0.0);
        if comptime![cfg.kind.reads_real()] {
            // Complex slot k packs real samples 2k (re) and 2k + 1 (im).
            let (held0, j0) = window_position(2 * axis, cfg.load, in_seq);
            let (held1, j1) = window_position(2 * axis + 1, cfg.load, in_seq);
            if held0 && in_tile {
                vr = input[sig + j0 * in_axis];
            }
            if held1 && in_tile {
                vi = input[sig + j1 * in_axis];
            }
        } else {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && in_tile {
                let at = 2 * (sig + j * in_axis);
                vr = input[at];
                vi = input[at + 1];
            }
            if comptime![cfg.kind == StageKind::C2R] {
                // Like pocketfft, irfft ignores the imaginary part of DC and Nyquist.
                if k == 0 || k == n {
                    vi = F::new(0.0);
                }
            }
        }
        smem_re[s * stride + k] = vr;
        smem_im[s * stride + k] = vi;
        flat += cube_threads;
    }
    sync_cube();

    let thread = UNIT_POS as usize % comptime![cfg.threads_per_signal];
    let signal = UNIT_POS as usize / comptime![cfg.threads_per_signal];

    // ---- C2R: fold the n + 1 Hermitian bins into the half-length complex spectrum ----
    if comptime![cfg.kind == StageKind::C2R] {
        let half = comptime![cfg.n / 2];
        let base = signal * stride;
        let mut k = thread;
        while k <= half {
            let (xr, xi) = (smem_re[base + k], smem_im[base + k]);
            let (yr, yi) = (smem_re[base + n - k], smem_im[base + n - k]);
            // Z[k] = (X[k] + conj X[n-k]) + i·W_2n^{-k}·(X[k] - conj X[n-k]), W = exp(-iπ/n)
            let (wr, wi) = table_twiddle::<F>(twiddles, k, true);
            let (dr, di) = complex_mul::<F>(xr - yr, xi + yi, wr, wi);
            let (er, ei) = complex_mul::<F>(yr - xr, yi + xi, wr, F::new(0.0) - wi);
            smem_re[base + k] = xr + yr - di;
            smem_im[base + k] = xi - yi + dr;
            if k != 0 && 2 * k != n {
                smem_re[base + n - k] = yr + xr + ei;
                smem_im[base + n - k] = yi - xi - er;
            }
            k += comptime![cfg.threads_per_signal];
        }
        sync_cube();
    }

    if comptime![!cfg.radices.is_empty()] {
        stockham_passes::<F>(&mut smem_re, &mut smem_im, twiddles, signal, thread, 0usize, cfg.clone());
    }

    // ---- store: the output window, scaled, optionally twiddled (four-step) ----
    let out_seq = comptime![cfg.output_seq_len()];
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)]);
    // Folded stores walk local elements and drop those outside the window;
    // unfolded stores walk the dense window.
    let per_signal = comptime![match cfg.store_fold {
        Some(_) => {
            if cfg.kind.writes_real() {
                2 * cfg.n
            } else {
                cfg.n
            }
        }
        None => cfg.store.stored_len(cfg.output_seq_len()),
    }];
    let store_count = comptime![per_signal * cfg.signals_per_cube];
    let mut flat = UNIT_POS as usize;
    while flat < store_count {
        let (s, u) = split_flat(flat, per_signal, signals, comptime![cfg.store_signals_fastest]);
        let d = fold_dim_index(b, c0 + s, cfg.store_fold);
        let mut held = c0 + s < nc;
        let mut pos = u;
        // Local element (complex slot, or real sample for real output) to write.
        let mut local = u;
        match comptime![cfg.store_fold] {
            Some(_) => {
                let axis = if comptime![cfg.kind.writes_real()] {
                    2 * axis_index(u / 2, d, cfg.store_fold) + u % 2
                } else {
                    axis_index(u, d, cfg.store_fold)
                };
                let (in_window, j) = window_position(axis, cfg.store, out_seq);
                held = held && in_window;
                pos = j;
            }
            None => {
                local = window_index(u, cfg.store, out_seq);
            }
        }
        if held {
            let base = s * stride;
            let dst = out_base + s * out_sc + pos * out_axis;
            if comptime![cfg.kind.writes_real()] {
                // Real sample t is the re (even t) or im (odd t) part of z[t/2].
                let v = select(local % 2 == 0, smem_re[base + local / 2], smem_im[base + local / 2]);
                output[dst] = v * scale;
            } else {
                let (mut vr, mut vi) = if comptime![cfg.kind == StageKind::R2C] {
                    // X[k] = (Z[k] + conj Z[n-k])/2 - i/2 · W_2n^k · (Z[k] - conj Z[n-k])
                    let za = local % n;
                    let zc = (n - local) % n;
                    let (zr, zi) = (smem_re[base + za], smem_im[base + za]);
                    let (yr, yi) = (smem_re[base + zc], smem_im[base + zc]);
                    let (wr, wi) = table_twiddle::<F>(twiddles, local, false);
                    let (dr, di) = complex_mul::<F>(zr - yr, zi + yi, wr, wi);
                    ((zr + yr + di) * F::new(0.5), (zi - yi - dr) * F::new(0.5))
                } else {
                    (smem_re[base + local], smem_im[base + local])
                };
                match comptime![cfg.post_twiddle] {
                    Some(pt) => {
                        let d2 = if comptime![pt.dim == 1] { b } else { c0 + s };
                        let e = (d2 * local) % comptime![pt.total];
                        let (cr, ci) = table_twiddle::<F>(post_coarse, e / comptime![pt.fine_len], cfg.inverse);
                        let (fr, fi) = table_twiddle::<F>(post_fine, e % comptime![pt.fine_len], cfg.inverse);
                        let (wr, wi) = complex_mul::<F>(cr, ci, fr, fi);
                        let (tr, ti) = complex_mul::<F>(vr, vi, wr, wi);
                        vr = tr;
                        vi = ti;
                    }
                    None => {}
                }
                output[2 * dst] = vr * scale;
                output[2 * dst + 1] = vi * scale;
            }
        }
        flat += cube_threads;
    }
}

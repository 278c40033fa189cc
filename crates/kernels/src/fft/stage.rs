//! The one FFT kernel: a batch of equal-length signals, each transformed in shared
//! memory by Stockham radix passes, with windowed loads (zero-padding, numpy's
//! crop/pad) and windowed stores (truncation) built in.
//!
//! Signals are addressed through three batch dimensions `(a, b, c)` and the
//! transform index `k`: element `k` of signal `(a, b, c)` lives at
//! `a*sa + b*sb + c*sc + k*sk`. A cube owns `signals_per_cube` consecutive `c`
//! values. When `sk == 1` the threads walk `k` fastest (rows); otherwise they walk
//! the signals fastest, so inner-axis ("column") transforms stay coalesced too.

use cubecl::prelude::barrier::{copy_async_checked, Barrier};
use cubecl::prelude::*;

use super::factor::{butterfly_split, dft_split, rounds_per_thread, DftSplit};
use super::window::Window;
use crate::pairs::{read_float, read_pair, write_pair};

/// What a stage reads before its complex transform of length `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputForm {
    Complex,
    /// Real samples `2k` and `2k + 1` packed as complex value `k` (a real signal
    /// of length `2n` through a half-length transform).
    RealPairs,
    /// Real sample `k` widened to the complex value `(x, 0)`.
    Real,
    /// Bins `0..=n/2` of a Hermitian spectrum, extended by `X[n-k] = conj X[k]`;
    /// like pocketfft, the imaginary parts of DC and Nyquist are ignored.
    Hermitian,
    /// The `n + 1` bins of the spectrum of a real signal of length `2n`, folded
    /// in shared memory into the half-length spectrum of its real pairs.
    HermitianPacked,
    /// Two real signals, `2s` and `2s + 1` of the tile, as the real and
    /// imaginary parts of slot `s`: one complex transform serves both
    /// (lengths that cannot pack pairs of one signal, i.e. odd ones).
    RealTwins,
    /// Bins `0..=n/2` of two real signals' spectra `A` (signal `2s`) and `B`
    /// (`2s + 1`), each extended like [`InputForm::Hermitian`], as slot `s`'s
    /// `A + iB`, whose inverse is `a + ib`.
    HermitianTwins,
}

/// What a stage writes after its complex transform of length `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputForm {
    Complex,
    /// Complex value `k` split into real samples `2k` and `2k + 1`.
    RealPairs,
    /// The real part of each value (the others are zero by symmetry).
    RealPart,
    /// The `n + 1` bins of the spectrum of the real signal of length `2n` the
    /// input held as pairs, untangled from the half-length transform.
    Untangled,
    /// The bins of the two real signals a [`InputForm::RealTwins`] slot held,
    /// separated from its transform `Z`: `A[k] = (Z[k] + conj Z[n-k])/2` to
    /// signal `2s`, `B[k] = (Z[k] - conj Z[n-k])/2i` to `2s + 1`.
    TwinSpectra,
    /// The real part of slot `s` to signal `2s`, its imaginary part to `2s + 1`.
    TwinReals,
}

impl InputForm {
    /// Length of the input sequence (what a load window refers to) of a
    /// transform of length `n`.
    pub fn seq_len(self, n: usize) -> usize {
        match self {
            InputForm::HermitianPacked => n + 1,
            InputForm::RealPairs => 2 * n,
            InputForm::Hermitian | InputForm::HermitianTwins => n / 2 + 1,
            InputForm::Complex | InputForm::Real | InputForm::RealTwins => n,
        }
    }

    pub fn is_real(self) -> bool {
        matches!(self, InputForm::RealPairs | InputForm::Real | InputForm::RealTwins)
    }

    /// Whether each complex slot holds two signals of the tile.
    pub fn is_twin(self) -> bool {
        matches!(self, InputForm::RealTwins | InputForm::HermitianTwins)
    }

    /// Signals of the batch one complex slot of the tile holds.
    pub fn signals_per_slot(self) -> usize {
        if self.is_twin() {
            2
        } else {
            1
        }
    }

    /// Complex values of one signal a staged load fills (the packed Hermitian
    /// input keeps its Nyquist bin too).
    pub fn load_len(self, n: usize) -> usize {
        if self == InputForm::HermitianPacked {
            n + 1
        } else {
            n
        }
    }
}

impl OutputForm {
    pub fn is_real(self) -> bool {
        matches!(
            self,
            OutputForm::RealPairs | OutputForm::RealPart | OutputForm::TwinReals
        )
    }

    /// Length of the output sequence (what a store window refers to) of a
    /// transform of length `n`.
    pub fn seq_len(self, n: usize) -> usize {
        match self {
            OutputForm::Untangled => n + 1,
            OutputForm::RealPairs => 2 * n,
            OutputForm::Complex | OutputForm::RealPart | OutputForm::TwinSpectra | OutputForm::TwinReals => n,
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
    /// Axis indices at or above `len` carry no data (Bluestein's zero-padding
    /// on load, its discarded tail on store); `len` is at most `n · k_mul`.
    pub len: usize,
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

/// How a transform whose length `n` is not 7-smooth runs inside one cube: as a
/// cyclic convolution of a 7-smooth length, whose two transforms are the
/// Stockham passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Convolution {
    /// Bluestein's chirp-z, `chirp · IFFT_m(FFT_m(chirp · x) · K̂)` over a length
    /// `m ≥ 2n − 1`; the factors array holds the `n` chirp values, then the `m`
    /// bins of the kernel's spectrum `K̂` (carrying the inverse's `1/m`).
    Bluestein(usize),
    /// Rader's, for a prime `n`: with `g` a primitive root, input `x[g^-s]`
    /// goes to slot `s` and `X[g^q] = x[0] + (a ⊛ b)[q]` for
    /// `b[t] = exp(∓2πi·g^t/n)`, a convolution of length `n − 1`; `X[0] = x[0] +
    /// Σ a`. Each signal keeps `x[0]` in the slot after the convolution's,
    /// which the turn adds to `Σ a` in the next and the last pass to every
    /// entry, so that every output is one slot. The factors
    /// array holds, at entry `k < n`, the slot input `k` goes to and the slot
    /// output `k` comes from, as integer bit patterns (a table lookup replaces
    /// a logarithm, a remainder and a select per element), then the `n − 1`
    /// bins of `K̂ = FFT(b)/(n − 1)`, then for each slot `s < n − 1` the input
    /// `g^-s` it holds (as bit patterns, for a resident cube's staged input).
    Rader,
}

impl Convolution {
    /// Length of the passes of a transform of length `n` run as `convolution`.
    pub fn pass_len(convolution: Option<Self>, n: usize) -> usize {
        match convolution {
            None => n,
            Some(Convolution::Bluestein(m)) => m,
            Some(Convolution::Rader) => n - 1,
        }
    }
}

/// What a run of Stockham passes does besides its transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Round {
    inverse: bool,
    /// The radices last to first: a convolution's second transform, whose
    /// first pass then reads exactly the values that the first transform's
    /// last butterflies wrote.
    reversed: bool,
    /// Bluestein's chirp, applied by the first pass to what it reads: element
    /// `e` times entry `e` of the factors table, zero from this length on.
    chirp: Option<usize>,
    /// A forward convolution's turn at its last pass: the outputs times the
    /// kernel's spectrum (entries `n..` of the factors table, after Rader's
    /// and Bluestein's first `n`) go, in registers, through the first pass of
    /// the inverse in reversed order, and the passes go on as the inverse's.
    /// That saves a pass over shared memory for the product and a barrier.
    pub(crate) turn: bool,
}

impl Round {
    pub(crate) fn plain(inverse: bool) -> Self {
        Round {
            inverse,
            reversed: false,
            chirp: None,
            turn: false,
        }
    }

    /// The round a stage's tile starts with: its transform, or a
    /// convolution's forward transform, which turns to the inverse.
    pub(crate) fn first(cfg: &StageConfig) -> Self {
        match cfg.convolution {
            None => Round::plain(cfg.inverse),
            Some(convolution) => Round {
                inverse: false,
                reversed: false,
                chirp: match convolution {
                    Convolution::Bluestein(_) => Some(cfg.n),
                    Convolution::Rader => None,
                },
                turn: true,
            },
        }
    }

    /// The passes after a turn: the inverse in reversed order.
    pub(crate) fn inverse_of_turn() -> Self {
        Round {
            inverse: true,
            reversed: true,
            chirp: None,
            turn: false,
        }
    }

    /// Radix of pass `pass` and the span the passes before it transformed.
    pub(crate) fn radix_and_span(&self, radices: &[usize], pass: usize) -> (usize, usize) {
        let at = |p: usize| {
            if self.reversed {
                radices[radices.len() - 1 - p]
            } else {
                radices[p]
            }
        };
        (at(pass), (0..pass).map(at).product())
    }
}

/// Everything the kernel is specialised on (shape-independent batch sizes and
/// strides travel as runtime scalars).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StageConfig {
    /// Length of the stage's transform.
    pub n: usize,
    /// Radices of the Stockham passes, over `n` or over the convolution's length.
    pub radices: Vec<usize>,
    /// The cyclic convolution a length that is not 7-smooth runs as.
    pub convolution: Option<Convolution>,
    pub threads_per_signal: usize,
    pub signals_per_cube: usize,
    /// Output pairs a thread computes of an odd first pass's butterfly, whose
    /// work is split over threads where it has more ([`butterfly_split`]).
    pub butterfly_pairs: usize,
    pub inverse: bool,
    pub input: InputForm,
    pub output: OutputForm,
    /// Window over the stage's input sequence (real samples, bins or values).
    pub load: Window,
    /// Window over the stage's output sequence (bins, real samples or values).
    pub store: Window,
    pub load_signals_fastest: bool,
    pub store_signals_fastest: bool,
    /// Shared-memory distance between two signals of the tile.
    pub smem_stride: usize,
    /// One padding word every 32 values of a signal in shared memory (see
    /// [`slot`]): what keeps strided Stockham writes apart in the banks.
    pub padded_slots: bool,
    /// Normalisation factor applied at the store, as `f32::to_bits`.
    pub scale_bits: u32,
    pub post_twiddle: Option<PostTwiddle>,
    /// Skip last-pass butterflies whose outputs the store window drops.
    pub prune: bool,
    pub load_fold: Option<AxisFold>,
    pub store_fold: Option<AxisFold>,
    /// Offset in the factors array of a table indexed by axis index that
    /// multiplies each loaded value (a Bluestein chirp).
    pub load_factor: Option<usize>,
    /// Likewise for each stored value (a chirp, or the kernel's spectrum).
    pub store_factor: Option<usize>,
    /// The tile arrives in shared memory, filled by the caller (the plane
    /// kernel's image), instead of being read from global memory.
    pub load_shared: bool,
    /// The tile stays in shared memory for the caller to take.
    pub store_shared: bool,
    /// Pairs of input floats (a complex value, two real samples) are read as
    /// one 8-byte vector: the input array is bound with vector size 2 (see
    /// [`StageConfig::with_layout`]).
    pub vector_input: bool,
    /// Likewise for the output's pairs.
    pub vector_output: bool,
    /// The transformed axis of the input is contiguous (stride 1), known when
    /// the kernel compiles: address arithmetic then needs no runtime stride
    /// (see [`StageConfig::with_layout`]).
    pub unit_input_axis: bool,
    /// Likewise for the output's axis.
    pub unit_output_axis: bool,
    /// The tiles form one row along `c` (the batch extents `a` and `b` are 1),
    /// known when the kernel compiles: a tile's coordinates then need no
    /// runtime division; set where that pays ([`coordinates_pay`]).
    pub one_tile_row: bool,
    /// Resident cubes that walk the tiles, staging the next tile's input in
    /// shared memory while they transform the current one (see
    /// [`fft_stage_kernel`]); `None`: one tile per cube, whose first pass
    /// reads global memory.
    pub prefetch: Option<TileFill>,
}

/// How a resident cube stages the input of the tile it transforms next: as
/// it lies in global memory (8-byte complex pairs, the input bound with
/// vector size 2), for the first pass to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileFill {
    /// Asynchronous copies (CUDA's `cp.async`) that hold no registers and
    /// land while the cube runs the passes after the first: one pair each, or
    /// two (16 bytes) where every signal's input is one contiguous,
    /// 16-byte-aligned row that the load window takes whole.
    AsyncCopies { pairs: usize },
    /// Plain loads, synchronous: the same walk over tiles where the device
    /// has no asynchronous copies (it overlaps nothing; tests run it).
    Loads,
}

impl StageConfig {
    /// Complex pairs each asynchronous staging copy moves (0: no such copies).
    fn pairs_per_copy(&self) -> usize {
        match self.prefetch {
            Some(TileFill::AsyncCopies { pairs }) => pairs,
            _ => 0,
        }
    }

    pub fn threads_per_cube(&self) -> usize {
        self.threads_per_signal * self.signals_per_cube
    }

    /// Signals of the batch one tile covers: two per slot for twin forms.
    pub fn signals_per_tile(&self) -> usize {
        self.input.signals_per_slot() * self.signals_per_cube
    }

    /// Length of the Stockham passes: `n`, or the convolution's length.
    pub fn pass_len(&self) -> usize {
        Convolution::pass_len(self.convolution, self.n)
    }

    fn rader(&self) -> bool {
        self.convolution == Some(Convolution::Rader)
    }

    /// Length of the input sequence the load window refers to.
    pub fn input_seq_len(&self) -> usize {
        self.load_fold.map_or(self.input.seq_len(self.n), |fold| fold.seq_len)
    }

    /// Whether a staged store walks the transform's elements (folded and real
    /// stores: the window drops some) rather than the dense window (unfolded
    /// complex stores).
    pub fn store_walks_elements(&self) -> bool {
        self.store_fold.is_some() || self.output.is_real()
    }

    /// Length of the output sequence the store window refers to.
    pub fn output_seq_len(&self) -> usize {
        self.store_fold.map_or(self.output.seq_len(self.n), |fold| fold.seq_len)
    }

    /// Complex values of one signal the staged load fills.
    pub fn load_len(&self) -> usize {
        self.input.load_len(self.n)
    }

    /// Real stages index a twiddle table of `2n` entries (packing needs `W_2n`).
    pub fn twiddle_table_step(&self) -> usize {
        if self.input == InputForm::HermitianPacked || self.output == OutputForm::Untangled {
            2
        } else {
            1
        }
    }

    /// Takes in what the global layout fixes. Where `unit_strides`, a
    /// contiguous transformed axis compiles its stride in. Pairs go through
    /// 8-byte I/O wherever every pair the stage reads (writes) is two
    /// adjacent floats at an even offset: always for complex values; for real
    /// pairs when the axis is contiguous, every batch stride even and the
    /// window keeps whole pairs. One vector load replaces two 4-byte loads at
    /// an 8-byte stride, halving the L1 wavefronts of the row transforms.
    pub fn with_layout(mut self, layout: &StageLayout, unit_strides: bool) -> Self {
        self.unit_input_axis = unit_strides && layout.input[3] == 1;
        self.unit_output_axis = unit_strides && layout.output[3] == 1;
        let extents = [layout.na, layout.nb, layout.nc];
        let real_pairs_whole = |strides: &[usize; 4], window: Window, seq_len: usize, fold: Option<AxisFold>| {
            let even_batches = (0..3).all(|d| extents[d] == 1 || strides[d].is_multiple_of(2));
            let whole_window = matches!(window, Window::Prefix(len) if len.min(seq_len).is_multiple_of(2));
            fold.is_none() && strides[3] == 1 && even_batches && whole_window
        };
        self.vector_input = match self.input {
            InputForm::Complex | InputForm::Hermitian | InputForm::HermitianPacked | InputForm::HermitianTwins => true,
            InputForm::RealPairs => real_pairs_whole(&layout.input, self.load, self.input_seq_len(), self.load_fold),
            InputForm::Real | InputForm::RealTwins => false,
        };
        self.vector_output = match self.output {
            OutputForm::Complex | OutputForm::Untangled | OutputForm::TwinSpectra => true,
            OutputForm::RealPairs => {
                real_pairs_whole(&layout.output, self.store, self.output_seq_len(), self.store_fold)
            }
            OutputForm::RealPart | OutputForm::TwinReals => false,
        };
        self
    }
}

/// Whether a stage's tiles take their coordinates without a runtime division
/// when they form one row ([`StageConfig::one_tile_row`]): resident cubes,
/// which find them for every tile they walk, and one-tile cubes whose tile goes
/// through shared memory both ways. Passes that read or write global memory
/// directly gain nothing from it, and a last pass that stores from registers
/// lost with it (benches/results/2026-11-26_tile_coordinates_h100.md).
pub(crate) fn coordinates_pay(cfg: &StageConfig) -> bool {
    cfg.prefetch.is_some() || !(loads_directly(cfg) || stores_directly(cfg))
}

/// Shared-memory distance between two signals of `slots` complex values: one
/// padding word every 32 (see [`slot`]) and an odd total, so that neither the
/// strided Stockham writes nor signals side by side fall into one bank.
pub fn smem_stride_for(slots: usize) -> usize {
    (padded_len(slots, true) + 1) | 1
}

/// Shared-memory words a signal of `slots` complex values spans (see [`slot`]).
pub fn padded_len(slots: usize, padded: bool) -> usize {
    if padded {
        slots + slots / 32
    } else {
        slots
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

/// Shared-memory position of element `x` of a signal: one padding word every
/// 32 values where `padded` (see [`StageConfig::padded_slots`]).
#[cube]
pub(crate) fn slot(x: usize, #[comptime] padded: bool) -> usize {
    if comptime![padded] {
        x + x / 32
    } else {
        x
    }
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
/// with constant twiddles, odd ones pair `x_j` with `x_{r-j}`, the others are
/// composites of those.
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
    } else if comptime![dft_split(r).is_none()] {
        small_prime_dft::<F>(re, im, base, stride, r, inverse);
    } else {
        composite_dft::<F>(re, im, base, stride, comptime![dft_split(r).unwrap()], inverse);
    }
}

/// In-register DFT of length `a·b` as `b` DFTs of length `a`, then `a` of
/// length `b`, gathering and scattering by the split's index maps
/// ([`DftSplit::sample`], [`DftSplit::bin`]); Cooley–Tukey multiplies the
/// twiddles `W_ab^{n2·k1}` between the layers, Good–Thomas needs none. The
/// maps are comptime, so the gather and scatter only rename registers.
#[cube]
fn composite_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] split: DftSplit,
    #[comptime] inverse: bool,
) {
    let (a, b) = comptime![(split.first, split.second)];
    let r = comptime![a * b];
    // Layer one: column n2 of length a at t[n2·a + n1].
    let mut tr = Array::<F>::new(r);
    let mut ti = Array::<F>::new(r);
    #[unroll]
    for n2 in 0..b {
        #[unroll]
        for n1 in 0..a {
            let sample = comptime![split.sample(n1, n2)];
            tr[n2 * a + n1] = re[base + sample * stride];
            ti[n2 * a + n1] = im[base + sample * stride];
        }
        small_dft::<F>(&mut tr, &mut ti, n2 * a, 1usize, a, inverse);
    }
    if comptime![!split.good_thomas] {
        #[unroll]
        for n2 in 1..b {
            #[unroll]
            for k1 in 1..a {
                let at = n2 * a + k1;
                // Quarter turns (W^{r/4}, W^{r/2}, W^{3r/4}) are exact and cost no multiply.
                let quarter = comptime![if (4 * n2 * k1) % r == 0 { 4 * n2 * k1 / r } else { 0 }];
                let (wr, wi) = if comptime![quarter == 1] {
                    rotate_quarter::<F>(tr[at], ti[at], inverse)
                } else if comptime![quarter == 2] {
                    (F::new(0.0) - tr[at], F::new(0.0) - ti[at])
                } else if comptime![quarter == 3] {
                    rotate_quarter::<F>(tr[at], ti[at], !inverse)
                } else {
                    let angle = comptime![2.0 * core::f64::consts::PI * (n2 * k1) as f64 / r as f64];
                    let c = F::new(comptime![angle.cos() as f32]);
                    let s = F::new(comptime![(if inverse { angle.sin() } else { -angle.sin() }) as f32]);
                    complex_mul::<F>(tr[at], ti[at], c, s)
                };
                tr[at] = wr;
                ti[at] = wi;
            }
        }
    }
    // Layer two: row k1 of length b at t[k1 + a·n2], its output k2 at t[k1 + a·k2].
    #[unroll]
    for k1 in 0..a {
        small_dft::<F>(&mut tr, &mut ti, k1, a, b, inverse);
    }
    #[unroll]
    for k1 in 0..a {
        #[unroll]
        for k2 in 0..b {
            let bin = comptime![split.bin(k1, k2)];
            re[base + bin * stride] = tr[k1 + a * k2];
            im[base + bin * stride] = ti[k1 + a * k2];
        }
    }
}

/// DFT of prime length `r` by pairing inputs `j` and `r - j`:
/// `y_k = x_0 + Σ_j cos(2πjk/r)·(x_j + x_{r-j}) ∓ i·Σ_j sin(2πjk/r)·(x_j - x_{r-j})`
/// and `y_{r-k}` the same with the sign of the sine sum flipped.
#[cube]
fn small_prime_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
) {
    let half = comptime![r / 2];
    let mut sum_r = Array::<F>::new(half);
    let mut sum_i = Array::<F>::new(half);
    let mut diff_r = Array::<F>::new(half);
    let mut diff_i = Array::<F>::new(half);
    let (x0r, x0i) = (re[base], im[base]);
    let mut y0r = x0r;
    let mut y0i = x0i;
    #[unroll]
    for j in 0..half {
        let a = base + (j + 1) * stride;
        let b = base + (r - 1 - j) * stride;
        sum_r[j] = re[a] + re[b];
        sum_i[j] = im[a] + im[b];
        diff_r[j] = re[a] - re[b];
        diff_i[j] = im[a] - im[b];
        y0r += sum_r[j];
        y0i += sum_i[j];
    }
    re[base] = y0r;
    im[base] = y0i;
    #[unroll]
    for k in 0..half {
        let mut cr = x0r;
        let mut ci = x0i;
        let mut sr = F::new(0.0);
        let mut si = F::new(0.0);
        #[unroll]
        for j in 0..half {
            let angle = comptime![2.0 * core::f64::consts::PI * (((j + 1) * (k + 1)) % r) as f64 / r as f64];
            let c = F::new(comptime![angle.cos() as f32]);
            let s = F::new(comptime![angle.sin() as f32]);
            cr += c * sum_r[j];
            ci += c * sum_i[j];
            sr += s * diff_r[j];
            si += s * diff_i[j];
        }
        // Forward: y_k = C - i·S, y_{r-k} = C + i·S; inverse swaps them.
        let (lo, hi) = if inverse {
            (r - 1 - k, k + 1)
        } else {
            (k + 1, r - 1 - k)
        };
        re[base + lo * stride] = cr + si;
        im[base + lo * stride] = ci - sr;
        re[base + hi * stride] = cr - si;
        im[base + hi * stride] = ci + sr;
    }
}

/// Reads the complex twiddle `exp(∓2πi·e/len)` from a table of `len` entries.
#[cube]
fn table_twiddle<F: Float>(table: &Array<F>, e: usize, #[comptime] inverse: bool) -> (F, F) {
    let (wr, wi) = table_value::<F>(table, e);
    if inverse {
        (wr, F::new(0.0) - wi)
    } else {
        (wr, wi)
    }
}

/// Where a tile's signals live and where its outputs go: everything the passes
/// need to read the first pass straight from global memory and write the last
/// pass straight back.
#[derive(CubeType, Clone, Copy)]
pub(crate) struct TileCoords {
    /// Flat input/output offsets of the tile's first signal.
    pub in_base: usize,
    pub out_base: usize,
    pub in_sc: usize,
    pub out_sc: usize,
    pub in_axis: usize,
    pub out_axis: usize,
    /// Batch coordinates of the tile: `b` and the first `c`.
    pub b: usize,
    pub c0: usize,
    pub nc: usize,
}

/// Offset of index `j` along an axis of the given stride, the stride a
/// compile-time 1 where `unit`.
#[cube]
fn axis_offset(j: usize, stride: usize, #[comptime] unit: bool) -> usize {
    if comptime![unit] {
        j
    } else {
        j * stride
    }
}

/// Reads complex entry `e` of a table of precomputed factors.
#[cube]
fn table_value<F: Float>(table: &Array<F>, e: usize) -> (F, F) {
    (table[2 * e], table[2 * e + 1])
}

/// Whether axis index `axis` carries data under `fold` in a stage of length
/// `n`: folds whose `len` is shorter than the axis they cover (Bluestein's
/// zero-padded convolution) drop the tail.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::single_match)]
fn within_fold(axis: usize, #[comptime] n: usize, #[comptime] fold: Option<AxisFold>) -> bool {
    let mut within = true;
    match comptime![fold] {
        Some(f) => {
            if comptime![f.len < n * f.k_mul] {
                within = axis < comptime![f.len];
            }
        }
        None => {}
    }
    within
}

/// Where a Hermitian input (bins `0..=len/2` of a length-`len` spectrum) holds
/// axis index `axis`: the bin, and whether the value is its conjugate
/// (`X[len-k] = conj X[k]`).
#[cube]
pub(crate) fn hermitian_bin(axis: usize, #[comptime] len: usize) -> (usize, bool) {
    let mirrored = 2 * axis > len;
    (select(mirrored, len - axis, axis), mirrored)
}

/// The imaginary part at an axis index from its bin's: negated when mirrored,
/// and, like pocketfft, ignored at DC and Nyquist.
#[cube]
pub(crate) fn hermitian_imag<F: Float>(vi: F, bin: usize, mirrored: bool, #[comptime] len: usize) -> F {
    let mut out = select(mirrored, F::new(0.0) - vi, vi);
    if bin == 0 || 2 * bin == len {
        out = F::new(0.0);
    }
    out
}

/// Where element `k` of the tile's signal `s` comes from: the signal's offset,
/// the axis index the load window refers to, and whether the batch (and a
/// fold's length) holds it.
#[cube]
fn load_source(at: TileCoords, s: usize, k: usize, #[comptime] cfg: StageConfig) -> (usize, usize, bool) {
    let d = fold_dim_index(at.b, at.c0 + s, cfg.load_fold);
    let axis = axis_index(k, d, cfg.load_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.load_fold);
    (at.in_base + s * at.in_sc, axis, inside)
}

/// Element `k` of the tile's signal `s`, zero outside the load window.
#[cube]
// The cube macro expands a comptime `match`, not an `if let` or match guards.
#[allow(clippy::single_match, clippy::collapsible_match)]
fn load_element<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let in_seq = comptime![cfg.input_seq_len()];
    // A twin slot's first signal; its second lies one signal further along `c`.
    let first = if comptime![cfg.input.is_twin()] { 2 * s } else { s };
    let (sig, axis, inside) = load_source(at, first, k, cfg.clone());
    let twin_inside = inside && at.c0 + first + 1 < at.nc;
    let mut vr = F::new(0.0);
    let mut vi = F::new(0.0);
    match comptime![cfg.input] {
        InputForm::RealTwins => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
            if held && twin_inside {
                vi = read_float::<F, N>(input, sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::HermitianTwins => {
            // A + iB from bins A[k] and B[k] of the two signals.
            let len = comptime![cfg.n];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (ar, ai) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = ar;
                vi = hermitian_imag::<F>(ai, bin, mirrored, len);
            }
            if held && twin_inside {
                let (br, bi) = read_pair::<F, N>(
                    input,
                    sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr -= hermitian_imag::<F>(bi, bin, mirrored, len);
                vi += br;
            }
        }
        InputForm::RealPairs => {
            // Complex slot k packs real samples 2k (re) and 2k + 1 (im).
            let (held0, j0) = window_position(2 * axis, cfg.load, in_seq);
            if comptime![cfg.vector_input] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    let (a, b) = read_pair::<F, N>(input, (sig + j0) / 2, true);
                    vr = a;
                    vi = b;
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.load, in_seq);
                if held0 && inside {
                    vr = read_float::<F, N>(input, sig + axis_offset(j0, at.in_axis, cfg.unit_input_axis));
                }
                if held1 && inside {
                    vi = read_float::<F, N>(input, sig + axis_offset(j1, at.in_axis, cfg.unit_input_axis));
                }
            }
        }
        InputForm::Real => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::Hermitian => {
            let len = comptime![cfg.load_fold.map_or(cfg.n, |f| f.len)];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = hermitian_imag::<F>(b, bin, mirrored, len);
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = b;
            }
        }
    }
    match comptime![cfg.load_factor] {
        Some(offset) => {
            if inside {
                let (fr, fi) = table_value::<F>(factors, offset + axis);
                let (tr, ti) = complex_mul::<F>(vr, vi, fr, fi);
                vr = tr;
                vi = ti;
            }
        }
        None => {}
    }
    (vr, vi)
}

/// Writes transform output `k` of the tile's signal `s` if the store window
/// holds it: four-step twiddled, multiplied by its factor, scaled, and written
/// in the stage's output form.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match, clippy::collapsible_match)]
fn store_element<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    let out_seq = comptime![cfg.output_seq_len()];
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)]);
    let sig = at.out_base + s * at.out_sc;
    let d = fold_dim_index(at.b, at.c0 + s, cfg.store_fold);
    let axis = axis_index(k, d, cfg.store_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.store_fold);
    let (mut vr, mut vi) = value;
    match comptime![cfg.post_twiddle] {
        Some(pt) => {
            let d2 = if comptime![pt.dim == 1] { at.b } else { at.c0 + s };
            let e = (d2 * k) % comptime![pt.total];
            let (cr, ci) = table_twiddle::<F>(post_coarse, e / comptime![pt.fine_len], cfg.inverse);
            let (fr, fi) = table_twiddle::<F>(post_fine, e % comptime![pt.fine_len], cfg.inverse);
            let (wr, wi) = complex_mul::<F>(cr, ci, fr, fi);
            let (tr, ti) = complex_mul::<F>(vr, vi, wr, wi);
            vr = tr;
            vi = ti;
        }
        None => {}
    }
    match comptime![cfg.store_factor] {
        Some(offset) => {
            if inside {
                let (fr, fi) = table_value::<F>(factors, offset + axis);
                let (tr, ti) = complex_mul::<F>(vr, vi, fr, fi);
                vr = tr;
                vi = ti;
            }
        }
        None => {}
    }
    match comptime![cfg.output] {
        OutputForm::RealPairs => {
            let (held0, j0) = window_position(2 * axis, cfg.store, out_seq);
            if comptime![cfg.vector_output] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    write_pair::<F, N>(output, (sig + j0) / 2, vr * scale, vi * scale, true);
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.store, out_seq);
                if held0 && inside {
                    output[sig + axis_offset(j0, at.out_axis, cfg.unit_output_axis)] = Vector::new(vr * scale);
                }
                if held1 && inside {
                    output[sig + axis_offset(j1, at.out_axis, cfg.unit_output_axis)] = Vector::new(vi * scale);
                }
            }
        }
        OutputForm::RealPart | OutputForm::TwinReals => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                output[sig + axis_offset(j, at.out_axis, cfg.unit_output_axis)] = Vector::new(vr * scale);
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                write_pair::<F, N>(
                    output,
                    sig + axis_offset(j, at.out_axis, cfg.unit_output_axis),
                    vr * scale,
                    vi * scale,
                    cfg.vector_output,
                );
            }
        }
    }
}

/// Writes transform output `k` of the tile's slot `s` ([`store_element`]):
/// a twin slot's real and imaginary parts go to its two signals.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_slot_value<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.output == OutputForm::TwinReals] {
        let (vr, vi) = value;
        let zero = F::new(0.0);
        store_element::<F, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s,
            k,
            (vr, zero),
            cfg.clone(),
        );
        store_element::<F, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s + 1,
            k,
            (vi, zero),
            cfg,
        );
    } else {
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, s, k, value, cfg);
    }
}

/// Fewest butterflies per signal with which a first or last pass of a small
/// radix touches global memory directly in a stage of its own; shorter runs go
/// through shared memory in coalesced order.
pub(crate) const MIN_DIRECT_RUN: usize = 8;
/// Largest radix whose pass may go through shared memory with several
/// butterflies per signal: that pass works in place behind a barrier, so each
/// thread holds every output of its butterfly across it.
const MAX_STAGED_RADIX: usize = 32;

/// Whether a first or last pass of radix `r` touches global memory in runs that
/// coalesce: signals side by side, more than one butterfly per signal and, for
/// radices up to [`MAX_STAGED_RADIX`] in a stage that writes global memory, at
/// least [`MIN_DIRECT_RUN`]. Otherwise the tile goes through shared memory in
/// coalesced order, which pays for passes of few butterflies per signal (C2C
/// 17, 23, 85) but not where a few large prime-radix butterflies would stage
/// (141 = 47·3) nor in the plane launch's first stage, whose output stays in
/// shared memory (benches/results/2026-11-25_prime_radices_h100.md).
fn direct_runs_coalesce(cfg: &StageConfig, r: usize, signals_fastest: bool) -> bool {
    let butterflies = cfg.n / r;
    let long_runs = butterflies >= MIN_DIRECT_RUN || r > MAX_STAGED_RADIX || cfg.store_shared;
    signals_fastest || (butterflies > 1 && long_runs)
}

/// Whether the first pass reads global memory directly (not when the input
/// must be whole in shared memory first: a convolution, a tile the caller
/// fills, a packed Hermitian input spread over a four-step fold, reads that
/// would not coalesce, a split first pass whose threads each read the whole
/// butterfly).
pub(crate) fn loads_directly(cfg: &StageConfig) -> bool {
    reads_global_unsplit(cfg) && pass_split(cfg, &Round::first(cfg), 0) == 1
}

/// Whether an unsplit first pass would read global memory directly
/// ([`loads_directly`]).
fn reads_global_unsplit(cfg: &StageConfig) -> bool {
    let folds_on_load =
        cfg.input != InputForm::HermitianPacked || (cfg.load_fold.is_none() && cfg.load_factor.is_none());
    !cfg.load_shared
        && folds_on_load
        && cfg.convolution.is_none()
        && cfg
            .radices
            .first()
            .is_some_and(|&r| direct_runs_coalesce(cfg, r, cfg.load_signals_fastest))
}

/// Whether the stage's first pass splits its butterflies over threads
/// ([`pass_split`]) where it would stage its tile in shared memory anyway: a
/// split thread reads every input of its butterfly, which from global memory
/// costs more than the split saves
/// (benches/results/2026-11-25_split_butterflies_h100.md).
pub(crate) fn splits_first_pass(cfg: &StageConfig) -> bool {
    !reads_global_unsplit(cfg) && pass_split(cfg, &Round::first(cfg), 0) > 1
}

/// Whether a resident cube can stage a tile of this stage ahead of time
/// ([`TileFill`]): complex pairs copied as they are (no factor, no folding of
/// bins) from global memory for a first pass that would read them there.
pub(crate) fn stages_ahead(cfg: &StageConfig) -> bool {
    cfg.input == InputForm::Complex
        && cfg.load_factor.is_none()
        && !cfg.load_shared
        && stages_convolution(cfg)
        && !cfg.radices.is_empty()
        && cfg.vector_input
}

/// Whether a stage's convolution, if any, can read a staged tile: Rader's,
/// whose unsplit first pass gathers its slots from the staged input through the
/// factors table; not Bluestein's, whose chirp runs past the input. Only
/// `TilePrefetch::Always` takes Rader's rows there: most Rader lengths ran
/// slower resident (benches/results/2026-11-26_resident_split_h100.md).
fn stages_convolution(cfg: &StageConfig) -> bool {
    match cfg.convolution {
        None => true,
        // x[0] lands in its slot as the first pass writes, after the turn of
        // a one-pass plan would have read it.
        Some(Convolution::Rader) => cfg.radices.len() > 1 && pass_split(cfg, &Round::first(cfg), 0) == 1,
        Some(Convolution::Bluestein(_)) => false,
    }
}

/// Whether a packed Hermitian input is folded in shared memory after a staged
/// load; a first pass that reads global memory folds the bins as it reads them.
pub(crate) fn folds_in_shared(cfg: &StageConfig) -> bool {
    cfg.input == InputForm::HermitianPacked && !loads_directly(cfg)
}

/// Whether the last pass writes global memory directly: not when the caller
/// takes the tile, not after a convolution's last step, nor when the store
/// walks the tile in another order than the passes (the transposed store of a
/// four-step pass), nor when the writes would not coalesce; an untangling
/// store only where [`untangles_in_registers`].
pub(crate) fn stores_directly(cfg: &StageConfig) -> bool {
    !cfg.store_shared
        && cfg.convolution.is_none()
        && cfg
            .radices
            .last()
            .is_some_and(|&r| direct_runs_coalesce(cfg, r, cfg.store_signals_fastest))
        && cfg.store_signals_fastest == cfg.load_signals_fastest
        && (cfg.output != OutputForm::Untangled || untangles_in_registers(cfg))
        && cfg.output != OutputForm::TwinSpectra
}

/// Whether an untangling (R2C) stage pairs bins `k` and `n - k` in the last
/// pass's registers instead of through shared memory after it: each thread
/// takes a butterfly and its mirror ([`untangled_units`]). Only where every
/// thread gets a pair and two butterflies hold no more values than the plan's
/// largest radix (R2C 1000): elsewhere idle threads or doubled registers made
/// it slower (benches/results/2026-11-25_fewest_passes_h100.md).
fn untangles_in_registers(cfg: &StageConfig) -> bool {
    let Some(&r) = cfg.radices.last() else {
        return false;
    };
    let largest = cfg.radices.iter().copied().max().unwrap_or(r);
    untangled_units(cfg.n / r) >= cfg.threads_per_signal && 2 * r <= largest
}

/// Units of work of an untangling last pass with `quarter` butterflies: unit
/// `u > 0` is butterfly `u` with its mirror `quarter - u`; unit 0 is butterfly
/// 0 (its own mirror) with, for an even `quarter`, butterfly `quarter / 2`
/// (also its own).
pub(crate) fn untangled_units(quarter: usize) -> usize {
    quarter.div_ceil(2)
}

/// Bin `k` of a real signal's spectrum from `z = Z[k]` and `y = Z[n-k]` of the
/// half-length transform of its packed pairs, given `w = W_2n^k`:
/// `X[k] = (z + conj y)/2 - i/2 · w · (z - conj y)`.
#[cube]
fn untangle_bin<F: Float>(zr: F, zi: F, yr: F, yi: F, wr: F, wi: F) -> (F, F) {
    let (dr, di) = complex_mul::<F>(zr - yr, zi + yi, wr, wi);
    ((zr + yr + di) * F::new(0.5), (zi - yi - dr) * F::new(0.5))
}

/// Stores bins `a` and `n - a` of the spectrum from `Z[a]` and `Z[n-a]`; the
/// second twiddle is `W_2n^(n-a) = -conj W_2n^a`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_bin_pair<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    signal: usize,
    a: usize,
    z: (F, F),
    y: (F, F),
    #[comptime] both: bool,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.n];
    let (wr, wi) = table_twiddle::<F>(twiddles, a, false);
    let (zr, zi) = z;
    let (yr, yi) = y;
    let x = untangle_bin::<F>(zr, zi, yr, yi, wr, wi);
    store_element::<F, N>(output, post_coarse, post_fine, factors, at, signal, a, x, cfg.clone());
    if both {
        let x = untangle_bin::<F>(yr, yi, zr, zi, F::new(0.0) - wr, wi);
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, signal, n - a, x, cfg);
    }
}

/// Bins `a` and, when `both`, `n - a` that a unit of an untangling last pass
/// stores, with `a = offset + u` for unit `u` (see [`untangled_units`]): `Z[a]`
/// sits in the unit's register slot `z` and `Z[n-a]` in slot `y`. Slots
/// `0..r` hold butterfly `u`'s outputs, `r..2r` its mirror's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BinPair {
    pub offset: usize,
    pub z: usize,
    pub y: usize,
    pub both: bool,
}

/// The bin pairs of unit 0 (`first`) or of any other unit of an untangling
/// last pass of radix `r` with `quarter` butterflies. Output `t` of butterfly
/// `i` is `Z[i + t·n/r]`, and `n - (i + t·n/r) = (n/r - i) + (r-1-t)·n/r`: for
/// unit `u > 0` that is output `r-1-t` of its mirror. Butterfly 0 is its own
/// mirror through `t ↔ r - t` (`t = 0`: `Z[0]` gives `X[0]` and `X[n]`), and
/// for an even `quarter` butterfly `quarter/2` in unit 0's mirror slots is its
/// own through `t ↔ r-1-t`.
pub(crate) fn untangled_bin_pairs(quarter: usize, r: usize, first: bool) -> Vec<BinPair> {
    if !first {
        return (0..r)
            .map(|t| BinPair {
                offset: t * quarter,
                z: t,
                y: r + (r - 1 - t),
                both: true,
            })
            .collect();
    }
    let zero = (0..=r / 2).map(|t| {
        let y = (r - t) % r;
        BinPair {
            offset: t * quarter,
            z: t,
            y,
            both: t == 0 || t != y,
        }
    });
    let half = (0..r.div_ceil(2))
        .filter(|_| quarter.is_multiple_of(2))
        .map(|t| BinPair {
            offset: quarter / 2 + t * quarter,
            z: r + t,
            y: r + (r - 1 - t),
            both: t != r - 1 - t,
        });
    zero.chain(half).collect()
}

/// Stores the bins of unit `u` of an untangling last pass, whose butterflies'
/// outputs sit in registers from `at_slot` (see [`untangled_bin_pairs`]).
#[cube]
// The cube macro unrolls index ranges over comptime lists, not iterators.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
fn store_untangled_unit<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    signal: usize,
    u: usize,
    re: &Array<F>,
    im: &Array<F>,
    #[comptime] at_slot: usize,
    #[comptime] r: usize,
    #[comptime] cfg: StageConfig,
) {
    // Unit 0 holds the self-mirrored butterflies, every other unit a butterfly and its mirror.
    let first = comptime![untangled_bin_pairs(cfg.n / r, r, true)];
    let rest = comptime![untangled_bin_pairs(cfg.n / r, r, false)];
    if u == 0 {
        #[unroll]
        for p in 0..comptime![first.len()] {
            let pair = comptime![first[p]];
            let (z, y) = comptime![(at_slot + pair.z, at_slot + pair.y)];
            store_bin_pair::<F, N>(
                output,
                post_coarse,
                post_fine,
                twiddles,
                factors,
                at,
                signal,
                comptime![pair.offset],
                (re[z], im[z]),
                (re[y], im[y]),
                comptime![pair.both],
                cfg.clone(),
            );
        }
    } else {
        #[unroll]
        for p in 0..comptime![rest.len()] {
            let pair = comptime![rest[p]];
            let (z, y) = comptime![(at_slot + pair.z, at_slot + pair.y)];
            store_bin_pair::<F, N>(
                output,
                post_coarse,
                post_fine,
                twiddles,
                factors,
                at,
                signal,
                u + comptime![pair.offset],
                (re[z], im[z]),
                (re[y], im[y]),
                comptime![pair.both],
                cfg.clone(),
            );
        }
    }
}

/// True when some output of butterfly `i` of the last pass lies in the store
/// window, whose outputs are `i + t·n/r`; butterflies with none are skipped.
#[cube]
fn butterfly_needed(i: usize, #[comptime] cfg: StageConfig, #[comptime] r: usize) -> bool {
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

/// Stockham pass `pass` (radix `r`, the round's `pass`-th) over every signal of
/// the tile, then the following passes up to `until`. Pass `p` reads element
/// `i + j·n/r`, twiddles it by `W^{j·(i mod span)}` and writes DFT output `t`
/// to `(i - i mod span)·r + i mod span + t·span`. The passes run over
/// [`StageConfig::pass_len`] as `round` says.
#[cube]
// The comptime switch around the untangling store stays an outer `if`; the
// cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::collapsible_if, clippy::single_match)]
fn stockham_passes<F: Float, NI: Size, NO: Size>(
    input: &Array<Vector<F, NI>>,
    staged: &SharedMemory<Vector<F, NI>>,
    output: &mut Array<Vector<F, NO>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    held: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    at: TileCoords,
    signal: usize,
    thread: usize,
    #[comptime] pass: usize,
    #[comptime] until: usize,
    #[comptime] round: Round,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.pass_len()];
    let (r, span) = comptime![round.radix_and_span(&cfg.radices, pass)];
    let inverse = comptime![round.inverse];
    let last = comptime![pass + 1 == cfg.radices.len()];
    let turn = comptime![last && round.turn];
    // A resident cube's first pass reads the input it staged, as it lies in global memory.
    let from_staged = comptime![pass == 0 && cfg.prefetch.is_some()];
    let from_global = comptime![pass == 0 && loads_directly(&cfg) && !from_staged];
    let to_global = comptime![last && stores_directly(&cfg)];
    let threads = comptime![cfg.threads_per_signal];
    let quarter_n = comptime![n / r];
    // An untangling last pass gives each thread butterfly u and its mirror
    // n/r - u, whose outputs are the bins k and n - k each output needs.
    let untangle = comptime![to_global && cfg.output == OutputForm::Untangled];
    let units = comptime![if untangle {
        untangled_units(quarter_n)
    } else {
        quarter_n
    }];
    let slots = comptime![if untangle { 2usize } else { 1usize }];
    let per_thread = comptime![units.div_ceil(threads)];
    // Mixed radices leave some threads without a butterfly in some passes.
    let ragged = comptime![per_thread * threads != units];
    // Twiddle table holds `n * table_step` entries (twice n for packed real stages).
    let table_step = comptime![cfg.twiddle_table_step()];
    let exp_step = comptime![n / (span * r) * table_step];
    let base = signal * comptime![cfg.smem_stride];

    if comptime![pass_split(&cfg, &round, pass) > 1] {
        split_first_pass::<F, NI, NO>(
            input,
            staged,
            output,
            twiddles,
            post_coarse,
            post_fine,
            factors,
            smem_re,
            smem_im,
            at,
            r,
            inverse,
            cfg.clone(),
        );
    } else {
        let mut re = Array::<F>::new(comptime![per_thread * slots * r]);
        let mut im = Array::<F>::new(comptime![per_thread * slots * r]);

        #[unroll]
        for q in 0..per_thread {
            let u = thread + q * threads;
            let exists = !ragged || u < units;
            #[unroll]
            for h in 0..slots {
                // The mirror of butterfly 0 is itself; an even n/r pairs it with n/2r.
                let i = if comptime![h == 0] {
                    u
                } else {
                    select(u == 0, comptime![quarter_n / 2], quarter_n - u)
                };
                let mut needed = exists && (!to_global || untangle || butterfly_needed(i, cfg.clone(), r));
                if comptime![h == 1 && quarter_n % 2 == 1] {
                    needed = needed && u != 0;
                }
                let at_slot = comptime![(q * slots + h) * r];
                if needed {
                    let k = i % span;
                    // One table read per butterfly: W^j = (W^1)^j by recurrence.
                    let (w1r, w1i) = if comptime![span > 1 && holds_twiddles(&cfg)] {
                        let at_held = comptime![2 * (held_twiddle_offset(&cfg, pass) + q)];
                        (held[at_held], held[at_held + 1])
                    } else if comptime![span > 1] {
                        table_twiddle::<F>(twiddles, k * exp_step, inverse)
                    } else {
                        (F::new(1.0), F::new(0.0))
                    };
                    let mut wr = F::new(1.0);
                    let mut wi = F::new(0.0);
                    #[unroll]
                    for j in 0..r {
                        let (mut xr, mut xi) = read_pass_element::<F, NI>(
                            input,
                            staged,
                            factors,
                            twiddles,
                            smem_re,
                            smem_im,
                            at,
                            signal,
                            base,
                            i,
                            j * quarter_n,
                            pass,
                            cfg.clone(),
                        );
                        if comptime![pass == 0] {
                            match comptime![round.chirp] {
                                Some(len) => {
                                    let e = i + j * quarter_n;
                                    let (fr, fi) = table_value::<F>(factors, select(e < len, e, 0usize));
                                    let (tr, ti) = complex_mul::<F>(xr, xi, fr, fi);
                                    // `select`, not a product by zero: the slots past `len` were never written.
                                    let zero = F::new(0.0);
                                    xr = select(e < len, tr, zero);
                                    xi = select(e < len, ti, zero);
                                }
                                None => {}
                            }
                        }
                        if comptime![span > 1] && j > 0 {
                            if comptime![j == 1] {
                                wr = w1r;
                                wi = w1i;
                            } else {
                                let (nr, ni) = complex_mul::<F>(wr, wi, w1r, w1i);
                                wr = nr;
                                wi = ni;
                            }
                            let (yr, yi) = complex_mul::<F>(xr, xi, wr, wi);
                            re[at_slot + j] = yr;
                            im[at_slot + j] = yi;
                        } else {
                            re[at_slot + j] = xr;
                            im[at_slot + j] = xi;
                        }
                    }
                    small_dft::<F>(&mut re, &mut im, at_slot, 1usize, r, inverse);
                    if comptime![turn] {
                        turn_to_inverse::<F>(
                            &mut re,
                            &mut im,
                            factors,
                            smem_re,
                            smem_im,
                            signal,
                            i,
                            at_slot,
                            r,
                            cfg.clone(),
                        );
                    }
                }
                if to_global && !untangle && needed {
                    // Last pass: span = n / r, so output t of butterfly i is element i + t·n/r.
                    #[unroll]
                    for t in 0..r {
                        store_slot_value::<F, NO>(
                            output,
                            post_coarse,
                            post_fine,
                            factors,
                            at,
                            signal,
                            i + t * quarter_n,
                            (re[at_slot + t], im[at_slot + t]),
                            cfg.clone(),
                        );
                    }
                }
            }
            // Only an untangling pass has the mirror slots this indexes.
            if comptime![untangle] {
                if exists {
                    store_untangled_unit::<F, NO>(
                        output,
                        post_coarse,
                        post_fine,
                        twiddles,
                        factors,
                        at,
                        signal,
                        u,
                        &re,
                        &im,
                        comptime![q * slots * r],
                        r,
                        cfg.clone(),
                    );
                }
            }
        }
        if !to_global {
            if !from_global {
                // In place: every read of this pass must land before any write.
                sync_cube();
            }
            if comptime![from_staged && cfg.rader()] {
                // Rader's x[0], which the turn and the last pass add, into
                // the slot after the convolution's before the staged tile is
                // refilled after this pass.
                if thread == 0 {
                    let x0 = staged[signal * comptime![cfg.load_len()]];
                    let at = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
                    smem_re[at] = x0[0];
                    smem_im[at] = x0[1];
                }
            }
            // Rader's last inverse pass adds x[0] (in the slot after the
            // convolution's) to every entry as it writes it, so that the store
            // reads one slot an output
            // (benches/results/2026-11-26_resident_split_h100.md).
            let adds_x0 = comptime![cfg.rader() && last && (round.reversed || cfg.radices.len() == 1)];
            let mut x0r = F::new(0.0);
            let mut x0i = F::new(0.0);
            if comptime![adds_x0] {
                let x0 = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
                x0r = smem_re[x0];
                x0i = smem_im[x0];
            }
            #[unroll]
            for q in 0..per_thread {
                let i = thread + q * threads;
                if !ragged || i < quarter_n {
                    // A turning pass writes as the inverse's first pass (span 1) would.
                    let written = comptime![if turn { 1usize } else { span }];
                    let k = i % written;
                    let dst = (i - k) * r + k;
                    #[unroll]
                    for t in 0..r {
                        let at = base + slot(dst + t * written, cfg.padded_slots);
                        if comptime![adds_x0] {
                            smem_re[at] = re[q * r + t] + x0r;
                            smem_im[at] = im[q * r + t] + x0i;
                        } else {
                            smem_re[at] = re[q * r + t];
                            smem_im[at] = im[q * r + t];
                        }
                    }
                }
            }
            sync_cube();
        }
    }

    // After a turn the passes go on from the inverse's second.
    let (following, upto, next_round) = comptime![if turn {
        (1usize, cfg.radices.len(), Round::inverse_of_turn())
    } else {
        (pass + 1, until, round)
    }];
    if comptime![following < upto] {
        stockham_passes::<F, NI, NO>(
            input,
            staged,
            output,
            twiddles,
            post_coarse,
            post_fine,
            factors,
            held,
            smem_re,
            smem_im,
            at,
            signal,
            thread,
            following,
            upto,
            next_round,
            cfg,
        );
    }
}

/// Element `i + offset` of the tile's signal `signal` as pass `pass` reads
/// it: from the input a resident cube staged, from global memory (a first
/// pass that loads directly) or from the tile in shared memory, where the
/// signal starts at `base`. Each source adds the offset itself, as the
/// unsplit pass always spelled it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn read_pass_element<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    staged: &SharedMemory<Vector<F, N>>,
    factors: &Array<F>,
    twiddles: &Array<F>,
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    at: TileCoords,
    signal: usize,
    base: usize,
    i: usize,
    offset: usize,
    #[comptime] pass: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let from_staged = comptime![pass == 0 && cfg.prefetch.is_some()];
    let from_global = comptime![pass == 0 && loads_directly(&cfg) && !from_staged];
    if from_staged {
        let k = if comptime![cfg.rader()] {
            rader_source::<F>(factors, i + offset, cfg.clone())
        } else {
            i + offset
        };
        let v = staged[signal * comptime![cfg.load_len()] + k];
        (v[0], v[1])
    } else if from_global {
        load_pass_input::<F, N>(input, factors, twiddles, at, signal, i + offset, cfg.clone())
    } else {
        (
            smem_re[base + slot(i + offset, cfg.padded_slots)],
            smem_im[base + slot(i + offset, cfg.padded_slots)],
        )
    }
}

/// Threads each butterfly of pass `pass` of `round` is split over
/// ([`split_first_pass`]): those of a first pass of a large odd radix
/// ([`butterfly_split`]), unless the pass applies Bluestein's chirp, turns a
/// convolution or untangles its store; 1 otherwise.
pub(crate) fn pass_split(cfg: &StageConfig, round: &Round, pass: usize) -> usize {
    if pass >= cfg.radices.len() {
        return 1;
    }
    let (r, _) = round.radix_and_span(&cfg.radices, pass);
    let last = pass + 1 == cfg.radices.len();
    let untangles = last && stores_directly(cfg) && cfg.output == OutputForm::Untangled;
    if pass == 0 && round.chirp.is_none() && !(last && round.turn) && !untangles {
        butterfly_split(r, cfg.butterfly_pairs)
    } else {
        1
    }
}

/// Output `t` of a butterfly of odd radix `r` that slot `m` of a split
/// unit's outputs holds ([`split_first_pass`]): slot 0 is `y_0` (the first
/// chunk's alone), slots `2p + 1` and `2p + 2` the pair of chunk entry `p`,
/// `y_k` then `y_{r-k}` (swapped for the inverse), `k = chunk·pairs + p + 1`.
pub(crate) fn split_output(r: usize, pairs: usize, chunk: usize, m: usize, inverse: bool) -> Option<usize> {
    if m == 0 {
        return (chunk == 0).then_some(0);
    }
    let k = chunk * pairs + (m - 1) / 2 + 1;
    let first = m % 2 == 1;
    (k <= r / 2).then_some(if first != inverse { k } else { r - k })
}

/// (chunk, signal, butterfly) of unit `w` of a split first pass with
/// `butterflies` butterflies a signal: chunks slowest, so that a warp's
/// lanes share one (its constants are compiled in), then butterflies (rows)
/// or signals (columns) fastest, as the loads coalesce.
#[cube]
fn split_unit(w: usize, #[comptime] butterflies: usize, #[comptime] cfg: StageConfig) -> (usize, usize, usize) {
    let signals = comptime![cfg.signals_per_cube];
    let per_chunk = comptime![cfg.signals_per_cube * butterflies];
    let rest = w % per_chunk;
    if comptime![cfg.load_signals_fastest] {
        (w / per_chunk, rest % signals, rest / signals)
    } else {
        (w / per_chunk, rest / butterflies, rest % butterflies)
    }
}

/// A first pass of odd radix `r` whose butterflies are split over
/// [`butterfly_split`] threads each. The cube deals its units (signal,
/// butterfly, chunk) over all its threads; unit `chunk` of a butterfly
/// computes the output pairs `(y_k, y_{r-k})` of its chunk of `k` (and `y_0`
/// for chunk 0) as [`small_prime_dft`] does, streaming the input pairs
/// `(x_j, x_{r-j})` through its accumulators instead of holding all `r`
/// values and outputs. The first pass has no twiddles. Outputs are held
/// across the barrier where the pass reads the tile it overwrites.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match)]
fn split_first_pass<F: Float, NI: Size, NO: Size>(
    input: &Array<Vector<F, NI>>,
    staged: &SharedMemory<Vector<F, NI>>,
    output: &mut Array<Vector<F, NO>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    at: TileCoords,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
    #[comptime] cfg: StageConfig,
) {
    let butterflies = comptime![cfg.pass_len() / r];
    let split = comptime![butterfly_split(r, cfg.butterfly_pairs)];
    let pairs = comptime![(r / 2).div_ceil(split)];
    let outputs = comptime![2 * pairs + 1];
    let units = comptime![cfg.signals_per_cube * butterflies * split];
    let threads = comptime![cfg.threads_per_cube()];
    let rounds = comptime![units.div_ceil(threads)];
    let to_global = comptime![cfg.radices.len() == 1 && stores_directly(&cfg)];
    // As the unsplit pass: only a first pass that reads global memory itself
    // writes the tile without a barrier first.
    let from_global = comptime![loads_directly(&cfg) && cfg.prefetch.is_none()];
    let lane = UNIT_POS as usize;
    let mut out_re = Array::<F>::new(comptime![rounds * outputs]);
    let mut out_im = Array::<F>::new(comptime![rounds * outputs]);
    #[unroll]
    for q in 0..rounds {
        let w = lane + q * threads;
        let (chunk, s, i) = split_unit(w, butterflies, cfg.clone());
        let base = s * comptime![cfg.smem_stride];
        #[unroll]
        for c in 0..split {
            if lane < threads && w < units && chunk == c {
                let (x0r, x0i) = read_pass_element::<F, NI>(
                    input,
                    staged,
                    factors,
                    twiddles,
                    smem_re,
                    smem_im,
                    at,
                    s,
                    base,
                    i,
                    0usize,
                    0usize,
                    cfg.clone(),
                );
                let first = comptime![c * pairs];
                let count = comptime![pairs.min(r / 2 - c * pairs)];
                // Per output pair: the cosine sums' re, im, the sine sums' re, im.
                let mut acc = Array::<F>::new(comptime![4 * pairs]);
                #[unroll]
                for p in 0..count {
                    acc[4 * p] = x0r;
                    acc[4 * p + 1] = x0i;
                    acc[4 * p + 2] = F::new(0.0);
                    acc[4 * p + 3] = F::new(0.0);
                }
                let mut y0r = x0r;
                let mut y0i = x0i;
                #[unroll]
                for j in 0..comptime![r / 2] {
                    let (ar, ai) = read_pass_element::<F, NI>(
                        input,
                        staged,
                        factors,
                        twiddles,
                        smem_re,
                        smem_im,
                        at,
                        s,
                        base,
                        i,
                        comptime![(j + 1) * butterflies],
                        0usize,
                        cfg.clone(),
                    );
                    let (br, bi) = read_pass_element::<F, NI>(
                        input,
                        staged,
                        factors,
                        twiddles,
                        smem_re,
                        smem_im,
                        at,
                        s,
                        base,
                        i,
                        comptime![(r - 1 - j) * butterflies],
                        0usize,
                        cfg.clone(),
                    );
                    let (sum_r, sum_i, diff_r, diff_i) = (ar + br, ai + bi, ar - br, ai - bi);
                    if comptime![c == 0] {
                        y0r += sum_r;
                        y0i += sum_i;
                    }
                    #[unroll]
                    for p in 0..count {
                        let angle = comptime![
                            2.0 * core::f64::consts::PI * (((j + 1) * (first + p + 1)) % r) as f64 / r as f64
                        ];
                        let cos = F::new(comptime![angle.cos() as f32]);
                        let sin = F::new(comptime![angle.sin() as f32]);
                        acc[4 * p] += cos * sum_r;
                        acc[4 * p + 1] += cos * sum_i;
                        acc[4 * p + 2] += sin * diff_r;
                        acc[4 * p + 3] += sin * diff_i;
                    }
                }
                let held = comptime![q * outputs];
                out_re[held] = y0r;
                out_im[held] = y0i;
                #[unroll]
                for p in 0..count {
                    // C ∓ i·S in slot 2p + 1, C ± i·S in 2p + 2 (see `split_output`).
                    let (cr, ci, sr, si) = (acc[4 * p], acc[4 * p + 1], acc[4 * p + 2], acc[4 * p + 3]);
                    out_re[held + 2 * p + 1] = cr + si;
                    out_im[held + 2 * p + 1] = ci - sr;
                    out_re[held + 2 * p + 2] = cr - si;
                    out_im[held + 2 * p + 2] = ci + sr;
                }
            }
        }
    }
    if comptime![!from_global && !to_global] {
        // In place: every read of this pass must land before any write.
        sync_cube();
    }
    #[unroll]
    for q in 0..rounds {
        let w = lane + q * threads;
        let (chunk, s, i) = split_unit(w, butterflies, cfg.clone());
        #[unroll]
        for c in 0..split {
            if lane < threads && w < units && chunk == c {
                #[unroll]
                for m in 0..outputs {
                    match comptime![split_output(r, pairs, c, m, inverse)] {
                        Some(t) => {
                            let value = (out_re[comptime![q * outputs + m]], out_im[comptime![q * outputs + m]]);
                            if comptime![to_global] {
                                if butterfly_needed(i, cfg.clone(), r) {
                                    store_slot_value::<F, NO>(
                                        output,
                                        post_coarse,
                                        post_fine,
                                        factors,
                                        at,
                                        s,
                                        i + comptime![t] * butterflies,
                                        value,
                                        cfg.clone(),
                                    );
                                }
                            } else {
                                // Span 1: output t of butterfly i goes to i·r + t.
                                let to = s * comptime![cfg.smem_stride] + slot(i * r + comptime![t], cfg.padded_slots);
                                smem_re[to] = value.0;
                                smem_im[to] = value.1;
                            }
                        }
                        None => {}
                    }
                }
            }
        }
    }
    if comptime![!to_global] {
        sync_cube();
    }
}

/// A convolution's turn (see [`Round::turn`]) on butterfly `i` of the first
/// transform's last pass, whose output `t` in registers `at_slot + t` is
/// element `i + t·m/r` of the transform: each times the kernel's spectrum,
/// then the inverse's radix-`r` DFT over them. Rader's `A[0] = Σ a` (`X[0]`
/// less `x[0]`) is kept aside first.
#[cube]
// The comptime switch stays an outer `if`: without Rader's, no code of it.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn turn_to_inverse<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    signal: usize,
    i: usize,
    #[comptime] at_slot: usize,
    #[comptime] r: usize,
    #[comptime] cfg: StageConfig,
) {
    let m = comptime![cfg.pass_len()];
    let kernel = comptime![cfg.n];
    if comptime![cfg.rader()] {
        if i == 0 {
            // X[0] = x[0] + Σ a.
            let base = signal * comptime![cfg.smem_stride];
            let dc = base + slot(m + 1, cfg.padded_slots);
            let x0 = base + slot(m, cfg.padded_slots);
            smem_re[dc] = re[at_slot] + smem_re[x0];
            smem_im[dc] = im[at_slot] + smem_im[x0];
        }
    }
    #[unroll]
    for t in 0..r {
        let e = i + t * comptime![m / r];
        let (fr, fi) = table_value::<F>(factors, kernel + e);
        let (yr, yi) = complex_mul::<F>(re[at_slot + t], im[at_slot + t], fr, fi);
        re[at_slot + t] = yr;
        im[at_slot + t] = yi;
    }
    small_dft::<F>(re, im, at_slot, 1usize, r, true);
}

/// Fills the tile's shared memory with its signals' (windowed) input from
/// global memory, walking in the order the loads coalesce in.
#[cube]
pub(crate) fn load_tile<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let load_len = comptime![cfg.load_len()];
    if comptime![tile_loads_ahead(&cfg)] {
        if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
            load_rounds_ahead::<F, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        } else {
            load_flat_ahead::<F, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        }
    } else if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
        let (s, thread) = unit_in_tile(cfg.clone());
        let threads = comptime![cfg.threads_per_signal];
        #[unroll]
        for round in 0..comptime![load_len.div_ceil(threads)] {
            let (k, held) = unit_walk_element(thread, round, threads, load_len);
            if held {
                load_tile_element::<F, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            }
        }
    } else {
        let step = comptime![cfg.threads_per_cube()];
        let fastest = comptime![cfg.load_signals_fastest];
        let mut flat = UNIT_POS as usize;
        let (mut s, mut k) = split_flat(flat, load_len, signals, fastest);
        while flat < comptime![load_len * signals] {
            load_tile_element::<F, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
            s = next_s;
            k = next_k;
            flat += step;
        }
    }
    sync_cube();
}

/// A flat walk's load of the tile (see [`load_tile`]) unrolled over its
/// rounds, issuing every round's global load before it places any value
/// ([`flat_loads_ahead`]).
#[cube]
fn load_flat_ahead<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let load_len = comptime![cfg.load_len()];
    let signals = comptime![cfg.signals_per_cube];
    let total = comptime![load_len * signals];
    let step = comptime![cfg.threads_per_cube()];
    let fastest = comptime![cfg.load_signals_fastest];
    let rounds = comptime![total.div_ceil(step)];
    let first = UNIT_POS as usize;
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
}

/// A unit walk's load of its signal's elements ([`walks_units`]) that issues
/// every round's global load before it places any value in shared memory, so
/// that the loads' latencies overlap ([`loads_ahead`]).
#[cube]
fn load_rounds_ahead<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let (s, thread) = unit_in_tile(cfg.clone());
    let load_len = comptime![cfg.load_len()];
    let threads = comptime![cfg.threads_per_signal];
    let rounds = comptime![load_len.div_ceil(threads)];
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
    }
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
    }
}

/// Element `k` of the tile's signal `s` from global memory to its slot in
/// shared memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_tile_element<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) {
    let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
    place_element::<F>(factors, smem_re, smem_im, s, k, vr, vi, cfg);
}

/// Writes loaded element `k` of the tile's signal `s` to its slot in shared
/// memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn place_element<F: Float>(
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    vr: F,
    vi: F,
    #[comptime] cfg: StageConfig,
) {
    let to = s * comptime![cfg.smem_stride] + input_slot::<F>(factors, k, cfg.clone());
    smem_re[to] = vr;
    smem_im[to] = packed_bin_imag::<F>(vi, k, cfg);
}

/// Element `thread + round · threads` of a unit walk over `len` elements of
/// a signal ([`walks_units`]), and whether the signal has it: always but in
/// a ragged last round, where the check is the only one made at run time.
#[cube]
fn unit_walk_element(
    thread: usize,
    #[comptime] round: usize,
    #[comptime] threads: usize,
    #[comptime] len: usize,
) -> (usize, bool) {
    let k = thread + round * threads;
    (k, comptime![(round + 1) * threads <= len] || k < len)
}

/// Most rounds of a unit walk, which unrolls them all.
const MAX_UNIT_WALK_ROUNDS: usize = 32;

/// Whether the tile's load or store walks `len` elements of every signal
/// unit by unit: each unit takes the elements `thread + round ·
/// threads_per_signal` of its own signal ([`unit_in_tile`]), in rounds
/// unrolled at compile time, so that every index but the unit's own is a
/// constant; a store reads every round before it writes any. Otherwise the
/// walk is flat over the tile and carries (signal, element) from round to
/// round ([`advance_flat`]).
///
/// Only a convolution's rows walk units, in runs of at least 8 threads (64
/// bytes) a signal: with Rader's slot tables that cuts the index arithmetic of
/// the permuted load and store. Column tiles walked by units ran slower
/// (benches/results/2026-11-25_unit_walks_h100.md).
pub(crate) fn walks_units(cfg: &StageConfig, len: usize, signals_fastest: bool) -> bool {
    let rows = !signals_fastest && !cfg.load_signals_fastest;
    rows && cfg.convolution.is_some()
        && cfg.threads_per_signal >= 8
        && len.div_ceil(cfg.threads_per_signal) <= MAX_UNIT_WALK_ROUNDS
}

/// Whether a unit walk's load issues all its rounds' global loads before it
/// places any value ([`load_rounds_ahead`]), rather than placing each as it
/// lands, so that the loads' latencies overlap: every input but a Hermitian
/// spectrum's, whose bins ran slower that way and keep placing each value as it
/// lands (benches/results/2026-11-26_loads_ahead_h100.md).
fn loads_ahead(cfg: &StageConfig) -> bool {
    !matches!(
        cfg.input,
        InputForm::Hermitian | InputForm::HermitianPacked | InputForm::HermitianTwins
    )
}

/// Most rounds a flat walk's load holds in registers ([`flat_loads_ahead`]).
const MAX_FLAT_ROUNDS_AHEAD: usize = 16;

/// Whether a flat walk's load (not a unit walk's) unrolls its rounds and issues
/// all their loads before placing any value ([`load_flat_ahead`]): an input
/// [`loads_ahead`] takes, in at most [`MAX_FLAT_ROUNDS_AHEAD`] rounds, but for
/// rows of complex pairs, which ran slower that way and keep the loop
/// (benches/results/2026-11-26_loads_ahead_h100.md).
fn flat_loads_ahead(cfg: &StageConfig) -> bool {
    let rounds = (cfg.load_len() * cfg.signals_per_cube).div_ceil(cfg.threads_per_cube());
    let rows_of_pairs = cfg.input == InputForm::Complex && !cfg.load_signals_fastest;
    loads_ahead(cfg) && !rows_of_pairs && rounds <= MAX_FLAT_ROUNDS_AHEAD
}

/// Whether [`load_tile`] issues every round's load before it places any
/// value: [`loads_ahead`] for a unit walk, [`flat_loads_ahead`] for a flat one.
pub(crate) fn tile_loads_ahead(cfg: &StageConfig) -> bool {
    if walks_units(cfg, cfg.load_len(), cfg.load_signals_fastest) {
        loads_ahead(cfg)
    } else {
        flat_loads_ahead(cfg)
    }
}

/// Starts staging the complex input of the tile's signals in `staged`, as it
/// lies in global memory (zeros outside the load window), element `k` of
/// signal `s` at `s · load_len + k` ([`TileFill`]). Asynchronous copies only
/// start the transfer: the caller commits them to a barrier and waits; plain
/// loads end at a cube barrier.
#[cube]
fn stage_tile<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    at: TileCoords,
    staged: &mut SharedMemory<Vector<F, N>>,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let load_len = comptime![cfg.load_len()];
    let in_seq = comptime![cfg.input_seq_len()];
    let threads = comptime![cfg.threads_per_cube()];
    let fastest = comptime![cfg.load_signals_fastest];
    let pairs = comptime![cfg.pairs_per_copy()];
    if comptime![pairs == 2] {
        // Whole contiguous rows: copy q of signal s moves pairs 2q and 2q + 1.
        let copies = comptime![load_len / 2];
        let mut flat = UNIT_POS as usize;
        let (mut s, mut q) = split_flat(flat, copies, signals, false);
        while flat < comptime![copies * signals] {
            let from = at.in_base + s * at.in_sc + 2 * q;
            // A source of no elements zero-fills the copy (signals past the batch).
            let len = select(at.c0 + s < at.nc, 2usize, 0usize);
            let to = s * load_len + 2 * q;
            copy_async_checked(&input.slice(from, from + len), &mut staged.slice_mut(to, to + 2), 4u32);
            let (next_s, next_q) = advance_flat(s, q, threads, copies, signals, false);
            s = next_s;
            q = next_q;
            flat += threads;
        }
    } else {
        let mut flat = UNIT_POS as usize;
        let (mut s, mut k) = split_flat(flat, load_len, signals, fastest);
        while flat < comptime![load_len * signals] {
            let (sig, axis, inside) = load_source(at, s, k, cfg.clone());
            let (held, j) = window_position(axis, cfg.load, in_seq);
            let valid = held && inside;
            let from = select(valid, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis), 0usize);
            let to = s * load_len + k;
            if comptime![pairs == 1] {
                // A source of no elements zero-fills the pair.
                let len = select(valid, 1usize, 0usize);
                copy_async_checked(&input.slice(from, from + len), &mut staged.slice_mut(to, to + 1), 2u32);
            } else {
                let v = input[from];
                let mut pair = Vector::<F, N>::empty();
                pair[0] = select(valid, v[0], F::new(0.0));
                pair[1] = select(valid, v[1], F::new(0.0));
                staged[to] = pair;
            }
            let (next_s, next_k) = advance_flat(s, k, threads, load_len, signals, fastest);
            s = next_s;
            k = next_k;
            flat += threads;
        }
    }
    if comptime![pairs == 0] {
        sync_cube();
    }
}

/// The slot of a Rader stage's input `k` (`output` false) or output `k`
/// (`output` true), from the stage's factors (see [`Convolution::Rader`]).
#[cube]
fn rader_slot<F: Float>(factors: &Array<F>, k: usize, #[comptime] output: bool) -> usize {
    let at = if comptime![output] { 2 * k + 1 } else { 2 * k };
    usize::cast_from(u32::reinterpret(factors[at]))
}

/// The input `g^-s` that slot `s` of a Rader stage's convolution holds, from
/// the stage's factors (see [`Convolution::Rader`]).
#[cube]
fn rader_source<F: Float>(factors: &Array<F>, s: usize, #[comptime] cfg: StageConfig) -> usize {
    let table = comptime![2 * cfg.n + 2 * cfg.pass_len()];
    usize::cast_from(u32::reinterpret(factors[table + s]))
}

/// Where element `k` of a signal's input goes in its shared-memory tile:
/// slot `k`, or for Rader's algorithm input `s` of the convolution where
/// `k = g^-s`, and `x[0]` in the slot after the convolution's.
#[cube]
pub(crate) fn input_slot<F: Float>(factors: &Array<F>, k: usize, #[comptime] cfg: StageConfig) -> usize {
    if comptime![cfg.rader()] {
        slot(rader_slot::<F>(factors, k, false), cfg.padded_slots)
    } else {
        slot(k, cfg.padded_slots)
    }
}

/// The imaginary part of loaded value `k`: like pocketfft, irfft ignores it at
/// DC and Nyquist of a packed Hermitian input.
#[cube]
// The comptime switch stays an outer `if`.
#[allow(clippy::collapsible_if)]
pub(crate) fn packed_bin_imag<F: Float>(vi: F, k: usize, #[comptime] cfg: StageConfig) -> F {
    let mut out = vi;
    if comptime![cfg.input == InputForm::HermitianPacked] {
        if k == 0 || k == comptime![cfg.n] {
            out = F::new(0.0);
        }
    }
    out
}

/// Packed C2R: folds the `n + 1` Hermitian bins of each signal in shared memory
/// into the half-length complex spectrum of its real pairs.
#[cube]
pub(crate) fn fold_packed_tile<F: Float>(
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    twiddles: &Array<F>,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    let n = comptime![cfg.n];
    let half = comptime![cfg.n / 2];
    let base = signal * comptime![cfg.smem_stride];
    let mut k = thread;
    while k <= half {
        let (xr, xi) = (
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
        );
        let (yr, yi) = (
            smem_re[base + slot(n - k, cfg.padded_slots)],
            smem_im[base + slot(n - k, cfg.padded_slots)],
        );
        let (zr, zi) = fold_bins::<F>(xr, xi, yr, yi, twiddles, k);
        smem_re[base + slot(k, cfg.padded_slots)] = zr;
        smem_im[base + slot(k, cfg.padded_slots)] = zi;
        if k != 0 && 2 * k != n {
            let (zr, zi) = fold_bins::<F>(yr, yi, xr, xi, twiddles, n - k);
            smem_re[base + slot(n - k, cfg.padded_slots)] = zr;
            smem_im[base + slot(n - k, cfg.padded_slots)] = zi;
        }
        k += comptime![cfg.threads_per_signal];
    }
    sync_cube();
}

/// Value `k` of the half-length spectrum of a real signal's pairs, from bins
/// `x = X[k]` and `y = X[n-k]` of the signal's spectrum:
/// `Z[k] = (X[k] + conj X[n-k]) + i·W_2n^{-k}·(X[k] - conj X[n-k])`, `W_2n = exp(-iπ/n)`.
#[cube]
fn fold_bins<F: Float>(xr: F, xi: F, yr: F, yi: F, twiddles: &Array<F>, k: usize) -> (F, F) {
    let (wr, wi) = table_twiddle::<F>(twiddles, k, true);
    let (dr, di) = complex_mul::<F>(xr - yr, xi + yi, wr, wi);
    (xr + yr - di, xi - yi + dr)
}

/// Value `k` of what the first pass transforms, read from global memory: the
/// windowed input element, or for a packed Hermitian input the value folded
/// from bins `k` and `n - k`.
#[cube]
fn load_pass_input<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    twiddles: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    if comptime![cfg.input == InputForm::HermitianPacked] {
        let n = comptime![cfg.n];
        let (xr, xi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
        let (yr, yi) = load_element::<F, N>(input, factors, at, s, n - k, cfg.clone());
        let xi = packed_bin_imag::<F>(xi, k, cfg.clone());
        let yi = packed_bin_imag::<F>(yi, n - k, cfg.clone());
        fold_bins::<F>(xr, xi, yr, yi, twiddles, k)
    } else {
        load_element::<F, N>(input, factors, at, s, k, cfg)
    }
}

/// The complex transform of every signal of the tile: the Stockham passes, or
/// the two transforms of a [`Convolution`], which turn from one to the other
/// at the kernel's spectrum in registers ([`Round::turn`]; Rader's `Σ a`
/// kept aside there), Bluestein's with the chirp applied as the first pass
/// reads and in [`tile_output`].
///
/// Turning in registers saves the kernel's product a pass over shared memory
/// and a barrier (benches/results/2026-11-25_convolution_turn_h100.md).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn transform_tile<F: Float, NI: Size, NO: Size>(
    input: &Array<Vector<F, NI>>,
    output: &mut Array<Vector<F, NO>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    at: TileCoords,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    if comptime![!cfg.radices.is_empty()] {
        let round = comptime![Round::first(&cfg)];
        // Only a resident cube's passes read staged input (see `resident_tiles`).
        let unstaged = SharedMemory::<Vector<F, NI>>::new(1usize);
        // Nor do other cubes hold twiddles (see `held_twiddles`).
        let unheld = Array::<F>::new(1usize);
        stockham_passes::<F, NI, NO>(
            input,
            &unstaged,
            output,
            twiddles,
            post_coarse,
            post_fine,
            factors,
            &unheld,
            smem_re,
            smem_im,
            at,
            signal,
            thread,
            0usize,
            comptime![cfg.radices.len()],
            round,
            cfg.clone(),
        );
    }
}

/// Output `k` of the tile's signal `s` from its transform in shared memory: the
/// value itself, the bin untangled from the half-length transform,
/// Bluestein's value times the chirp, or Rader's `x[0] + c[log k]` (`x[0] +
/// Σ a` for `X[0]`), which the passes summed in its slot.
#[cube]
pub(crate) fn tile_output<F: Float>(
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let n = comptime![cfg.n];
    let base = s * comptime![cfg.smem_stride];
    if comptime![cfg.output == OutputForm::Untangled] {
        // X[k] = (Z[k] + conj Z[n-k])/2 - i/2 · W_2n^k · (Z[k] - conj Z[n-k])
        // k runs over 0..=n: Z[n] is Z[0].
        let za = select(k == n, 0usize, k);
        let zc = select(k == 0, 0usize, n - k);
        let (zr, zi) = (
            smem_re[base + slot(za, cfg.padded_slots)],
            smem_im[base + slot(za, cfg.padded_slots)],
        );
        let (yr, yi) = (
            smem_re[base + slot(zc, cfg.padded_slots)],
            smem_im[base + slot(zc, cfg.padded_slots)],
        );
        let (wr, wi) = table_twiddle::<F>(twiddles, k, false);
        untangle_bin::<F>(zr, zi, yr, yi, wr, wi)
    } else if comptime![cfg.convolution.is_some() && !cfg.rader()] {
        // Bluestein's output chirp.
        let (fr, fi) = table_value::<F>(factors, k);
        complex_mul::<F>(
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
            fr,
            fi,
        )
    } else if comptime![cfg.rader()] {
        // The passes added x[0] already.
        let at = base + slot(rader_slot::<F>(factors, k, true), cfg.padded_slots);
        (smem_re[at], smem_im[at])
    } else {
        (
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
        )
    }
}

/// Writes the tile's outputs from shared memory, in the order the output coalesces in.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_tile<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    at: TileCoords,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let per_signal = comptime![if cfg.store_walks_elements() {
        cfg.n
    } else {
        cfg.store.stored_len(cfg.output_seq_len())
    }];
    let store_count = comptime![per_signal * cfg.signals_per_cube];
    let fastest = comptime![cfg.store_signals_fastest];
    let step = comptime![cfg.threads_per_cube()];
    let group = comptime![store_rounds_unrolled(&cfg, store_count.div_ceil(step))];
    if comptime![walks_units(&cfg, per_signal, fastest)] {
        // All reads first, then all stores: each round's table read, shared
        // read and store would otherwise wait on one another in turn.
        let (s, thread) = unit_in_tile(cfg.clone());
        let threads = comptime![cfg.threads_per_signal];
        let rounds = comptime![per_signal.div_ceil(threads)];
        let mut read = Array::<F>::new(comptime![4 * rounds]);
        #[unroll]
        for round in 0..rounds {
            // A ragged last round reads a real element and stores nothing of it.
            let (walked, held) = unit_walk_element(thread, round, threads, per_signal);
            let k = walked_output(select(held, walked, comptime![per_signal - 1]), cfg.clone());
            let (zr, zi, yr, yi) = read_walked_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
            read[4 * round] = zr;
            read[4 * round + 1] = zi;
            read[4 * round + 2] = yr;
            read[4 * round + 3] = yi;
        }
        #[unroll]
        for round in 0..rounds {
            let (u, held) = unit_walk_element(thread, round, threads, per_signal);
            if held {
                let k = walked_output(u, cfg.clone());
                let values = (
                    read[4 * round],
                    read[4 * round + 1],
                    read[4 * round + 2],
                    read[4 * round + 3],
                );
                write_walked_output::<F, N>(output, post_coarse, post_fine, factors, at, s, k, values, cfg.clone());
            }
        }
    } else {
        let mut flat = UNIT_POS as usize;
        let (mut s, mut u) = split_flat(flat, per_signal, signals, fastest);
        while flat < store_count {
            #[unroll]
            for _ in 0..group {
                if flat < store_count {
                    store_tile_element::<F, N>(
                        output,
                        twiddles,
                        post_coarse,
                        post_fine,
                        factors,
                        smem_re,
                        smem_im,
                        at,
                        s,
                        u,
                        cfg.clone(),
                    );
                }
                flat += step;
                let (next_s, next_u) = advance_flat(s, u, step, per_signal, signals, fastest);
                s = next_s;
                u = next_u;
            }
        }
    }
}

/// Rounds of a tile's store walk (of `rounds`) unrolled together, so that their
/// shared-memory and table reads are in flight at once: all of them for the
/// untangling store of short signals (at most 8 threads each, many signals to a
/// cube), one otherwise; unrolling more lost on other lengths
/// (benches/results/2026-11-25_fewest_passes_h100.md).
fn store_rounds_unrolled(cfg: &StageConfig, rounds: usize) -> usize {
    let short_untangled = cfg.output == OutputForm::Untangled && cfg.threads_per_signal <= 8;
    if short_untangled && rounds <= 16 {
        rounds
    } else {
        1
    }
}

/// Element `u` of the store walk of the tile's signal `s` (see [`store_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_tile_element<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    at: TileCoords,
    s: usize,
    u: usize,
    #[comptime] cfg: StageConfig,
) {
    let k = walked_output(u, cfg.clone());
    let values = read_walked_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
    write_walked_output::<F, N>(output, post_coarse, post_fine, factors, at, s, k, values, cfg);
}

/// The output a store walk's position `u` stands for: the element itself, or
/// the sequence index the store window keeps at `u`.
#[cube]
fn walked_output(u: usize, #[comptime] cfg: StageConfig) -> usize {
    if comptime![cfg.store_walks_elements() && cfg.output != OutputForm::Untangled] {
        u
    } else {
        window_index(u, cfg.store, comptime![cfg.output_seq_len()])
    }
}

/// What the store of output `k` of the tile's signal `s` reads from shared
/// memory: the output `Z[k]`, and for twin spectra `Z[n-k]` beside it.
#[cube]
fn read_walked_output<F: Float>(
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F, F, F) {
    let (zr, zi) = tile_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
    let mut yr = F::new(0.0);
    let mut yi = F::new(0.0);
    if comptime![cfg.output == OutputForm::TwinSpectra] {
        let mirror = select(k == 0, 0usize, comptime![cfg.n] - k);
        let (mr, mi) = tile_output::<F>(smem_re, smem_im, twiddles, factors, s, mirror, cfg.clone());
        yr = mr;
        yi = mi;
    }
    (zr, zi, yr, yi)
}

/// Stores output `k` of the tile's signal `s` from what
/// [`read_walked_output`] read.
#[cube]
#[allow(clippy::too_many_arguments)]
fn write_walked_output<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    values: (F, F, F, F),
    #[comptime] cfg: StageConfig,
) {
    let (zr, zi, yr, yi) = values;
    if comptime![cfg.output == OutputForm::TwinSpectra] {
        // A[k] = (Z[k] + conj Z[n-k])/2 and B[k] = (Z[k] - conj Z[n-k])/2i.
        let half = F::new(0.5);
        let a = ((zr + yr) * half, (zi - yi) * half);
        let b = ((zi + yi) * half, (yr - zr) * half);
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, 2 * s, k, a, cfg.clone());
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, 2 * s + 1, k, b, cfg);
    } else {
        store_slot_value::<F, N>(output, post_coarse, post_fine, factors, at, s, k, (zr, zi), cfg);
    }
}

/// Dense position of sequence index `k` in a window, or `len` of the dense
/// storage when the window does not hold `k` (the caller treats it as zero).
#[cube]
pub(crate) fn window_position(k: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> (bool, usize) {
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
        Window::Shifted(m) => {
            let low = comptime![m - m / 2];
            let high_start = comptime![seq_len - m / 2];
            (
                k < low || k >= high_start,
                select(k < low, k + comptime![m / 2], k - high_start),
            )
        }
        Window::ShiftedLower(m) => {
            let t = k + comptime![m / 2 + 1];
            let j = select(t >= seq_len, t - seq_len, t);
            (j < comptime![m], j)
        }
    }
}

/// Sequence index held at dense position `j` of a window.
#[cube]
pub(crate) fn window_index(j: usize, #[comptime] window: Window, #[comptime] seq_len: usize) -> usize {
    match comptime![window] {
        Window::Prefix(_) => j,
        Window::Centered(m) => {
            let low = comptime![m - m / 2];
            let shift = comptime![seq_len - m];
            select(j < low, j, j + shift)
        }
        Window::Shifted(m) => {
            let half = comptime![m / 2];
            select(j < half, j + comptime![seq_len - m / 2], j - half)
        }
        Window::ShiftedLower(m) => {
            let t = j + comptime![seq_len - m / 2 - 1];
            select(t >= seq_len, t - seq_len, t)
        }
    }
}

/// Splits a tile-local flat index into (signal, element) for the chosen walk order.
#[cube]
pub(crate) fn split_flat(
    flat: usize,
    #[comptime] len: usize,
    #[comptime] signals: usize,
    #[comptime] signals_fastest: bool,
) -> (usize, usize) {
    if signals_fastest {
        (flat % signals, flat / signals)
    } else {
        (flat / len, flat % len)
    }
}

/// [`split_flat`] of `flat + step` from that of `flat`, without dividing: the
/// store loops walk long tiles, and a division by a length that is not a
/// power of two costs several integer instructions per element.
#[cube]
fn advance_flat(
    s: usize,
    u: usize,
    #[comptime] step: usize,
    #[comptime] len: usize,
    #[comptime] signals: usize,
    #[comptime] signals_fastest: bool,
) -> (usize, usize) {
    // The fast index wraps at most once per step after its whole part is added.
    let wrap = comptime![if signals_fastest { signals } else { len }];
    let (fast, slow) = if signals_fastest { (s, u) } else { (u, s) };
    let fast = fast + comptime![step % wrap];
    let carry = fast >= wrap;
    let fast = select(carry, fast - wrap, fast);
    let slow = slow + comptime![step / wrap] + select(carry, 1usize, 0usize);
    if signals_fastest {
        (fast, slow)
    } else {
        (slow, fast)
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

/// (signal, thread within the signal) of this unit in a stage's tile: the
/// passes walk the tile in the order the global loads coalesce in.
#[cube]
pub(crate) fn unit_in_tile(#[comptime] cfg: StageConfig) -> (usize, usize) {
    let signals = comptime![cfg.signals_per_cube];
    let per_signal = comptime![cfg.threads_per_signal];
    if comptime![cfg.load_signals_fastest] {
        (UNIT_POS as usize % signals, UNIT_POS as usize / signals)
    } else {
        (UNIT_POS as usize / per_signal, UNIT_POS as usize % per_signal)
    }
}

/// The tiles of a launch: the batch extents, and the strides of the input and
/// output along `(a, b, c)` and the axis.
#[derive(CubeType, Clone, Copy)]
struct TileGrid {
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
}

// Runtime integer `div_ceil` has no cube expansion.
#[cube]
#[allow(clippy::manual_div_ceil)]
fn tile_coords(tile: usize, grid: TileGrid, #[comptime] signals: usize, #[comptime] one_row: bool) -> TileCoords {
    let (a, b, c0) = if comptime![one_row] {
        (0usize, 0usize, tile * signals)
    } else {
        let tiles_c = (grid.nc + signals - 1) / signals;
        let ab = tile / tiles_c;
        (ab / grid.nb, ab % grid.nb, (tile % tiles_c) * signals)
    };
    TileCoords {
        in_base: a * grid.in_sa + b * grid.in_sb + c0 * grid.in_sc,
        out_base: a * grid.out_sa + b * grid.out_sb + c0 * grid.out_sc,
        in_sc: grid.in_sc,
        out_sc: grid.out_sc,
        in_axis: grid.in_axis,
        out_axis: grid.out_axis,
        b,
        c0,
        nc: grid.nc,
    }
}

/// How a resident cube learns that the tile it filled is in shared memory.
#[cube]
trait TileLanding: CubeType {
    /// Ties the copies issued since the last commit to this landing.
    fn commit(&self);
    /// Returns once the committed copies have landed.
    fn wait(&self);
}

/// Asynchronous copies land on a cube barrier.
#[derive(CubeType)]
struct CopiesLanding {
    barrier: Shared<Barrier>,
}

#[cube]
impl TileLanding for CopiesLanding {
    fn commit(&self) {
        self.barrier.commit_copy_async();
    }

    fn wait(&self) {
        self.barrier.arrive_and_wait();
    }
}

/// Plain loads have landed when the fill returns: it ends at a cube barrier.
#[derive(CubeType)]
struct LoadsLanded {
    #[cube(comptime)]
    _none: (),
}

#[cube]
impl TileLanding for LoadsLanded {
    fn commit(&self) {}

    fn wait(&self) {}
}

/// The most twiddles (complex values, two registers each) a resident cube's
/// thread holds.
const MAX_HELD_TWIDDLES: usize = 8;

/// The most threads of a resident cube whose threads hold their twiddles. ptxas
/// gives a cube of up to 8 warps as many as 255 registers a thread, but caps
/// one of 9 to 12 warps at 168 (some SM sub-partition holds 3 of them), where
/// held twiddles spill (benches/results/2026-11-26_register_cap_h100.md).
pub(crate) const HELD_TWIDDLE_THREADS: usize = 256;

/// Whether a resident cube's threads hold their passes' twiddles in
/// registers ([`held_twiddles`]): a cube of at most [`HELD_TWIDDLE_THREADS`]
/// threads, a transform without a convolution (one round of passes) and
/// without an untangling last pass, at most [`MAX_HELD_TWIDDLES`] a thread.
pub(crate) fn holds_twiddles(cfg: &StageConfig) -> bool {
    let passes = cfg.radices.len();
    cfg.prefetch.is_some()
        && cfg.threads_per_cube() <= HELD_TWIDDLE_THREADS
        && cfg.convolution.is_none()
        && cfg.output != OutputForm::Untangled
        && held_twiddle_offset(cfg, passes) <= MAX_HELD_TWIDDLES
}

/// Twiddles a thread holds for the passes before `pass`: one for each of its
/// butterflies in every pass after the first (whose span is 1).
pub(crate) fn held_twiddle_offset(cfg: &StageConfig, pass: usize) -> usize {
    let later = &cfg.radices[1.min(pass)..pass];
    rounds_per_thread(cfg.pass_len(), later, cfg.threads_per_signal)
}

/// The first twiddle `W^k` of each butterfly this thread runs in each pass
/// after the first, which is the same for every tile a resident cube walks:
/// held in registers, the passes wait on no table read (NVRTC left those
/// reads in the tile loop, where their latency showed in ncu's stall samples).
#[cube]
fn held_twiddles<F: Float>(twiddles: &Array<F>, thread: usize, #[comptime] cfg: StageConfig) -> Array<F> {
    let held_len = comptime![if holds_twiddles(&cfg) {
        held_twiddle_offset(&cfg, cfg.radices.len())
    } else {
        0
    }];
    let mut held = Array::<F>::new(comptime![2 * held_len.max(1)]);
    if comptime![held_len > 0] {
        let round = comptime![Round::first(&cfg)];
        let n = comptime![cfg.pass_len()];
        let threads = comptime![cfg.threads_per_signal];
        let table_step = comptime![cfg.twiddle_table_step()];
        #[unroll]
        for pass in 1..comptime![cfg.radices.len()] {
            let (r, span) = comptime![round.radix_and_span(&cfg.radices, pass)];
            let exp_step = comptime![n / (span * r) * table_step];
            #[unroll]
            for q in 0..comptime![held_twiddle_offset(&cfg, pass + 1) - held_twiddle_offset(&cfg, pass)] {
                let k = (thread + q * threads) % span;
                let (wr, wi) = table_twiddle::<F>(twiddles, k * exp_step, round.inverse);
                let at_held = comptime![2 * (held_twiddle_offset(&cfg, pass) + q)];
                held[at_held] = wr;
                held[at_held + 1] = wi;
            }
        }
    }
    held
}

/// A resident cube's walk over the tiles `CUBE_POS, CUBE_POS + CUBE_COUNT, …`:
/// each tile's input is staged while the tile before runs its passes after
/// the first, and the first pass reads it from there instead of from global
/// memory. A long signal takes a whole SM's shared memory, so no other cube's
/// work would hide its load.
#[cube]
#[allow(clippy::too_many_arguments)]
fn resident_tiles<F: Float, NI: Size, NO: Size, L: TileLanding>(
    input: &Array<Vector<F, NI>>,
    output: &mut Array<Vector<F, NO>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    grid: TileGrid,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    landed: &L,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let passes = comptime![cfg.radices.len()];
    // 16-byte copies need 16-byte-aligned destinations.
    let mut staged = SharedMemory::<Vector<F, NI>>::new_aligned(comptime![signals * cfg.load_len()], 16usize);
    // The launch has no more cubes than tiles.
    let per_tile = comptime![cfg.signals_per_tile()];
    let held = held_twiddles::<F>(twiddles, thread, cfg.clone());
    let mut tile = CUBE_POS;
    stage_tile::<F, NI>(
        input,
        tile_coords(tile, grid, per_tile, cfg.one_tile_row),
        &mut staged,
        cfg.clone(),
    );
    landed.commit();
    while tile < grid.num_tiles {
        let following = tile + CUBE_COUNT;
        let at = tile_coords(tile, grid, per_tile, cfg.one_tile_row);
        landed.wait();
        stockham_passes::<F, NI, NO>(
            input,
            &staged,
            output,
            twiddles,
            post_coarse,
            post_fine,
            factors,
            &held,
            smem_re,
            smem_im,
            at,
            signal,
            thread,
            0usize,
            1usize,
            comptime![Round::first(&cfg)],
            cfg.clone(),
        );
        // Every read of the staged tile must be done before it is refilled: a
        // first pass that is not the last ends at a barrier already.
        if comptime![passes == 1] {
            sync_cube();
        }
        if following < grid.num_tiles {
            stage_tile::<F, NI>(
                input,
                tile_coords(following, grid, per_tile, cfg.one_tile_row),
                &mut staged,
                cfg.clone(),
            );
            landed.commit();
        }
        if comptime![passes > 1] {
            stockham_passes::<F, NI, NO>(
                input,
                &staged,
                output,
                twiddles,
                post_coarse,
                post_fine,
                factors,
                &held,
                smem_re,
                smem_im,
                at,
                signal,
                thread,
                1usize,
                passes,
                comptime![Round::first(&cfg)],
                cfg.clone(),
            );
        }
        if comptime![!stores_directly(&cfg)] {
            store_tile::<F, NO>(
                output,
                twiddles,
                post_coarse,
                post_fine,
                factors,
                smem_re,
                smem_im,
                at,
                cfg.clone(),
            );
        }
        tile = following;
    }
}

/// Transforms tiles of equal-length signals. Without [`StageConfig::prefetch`]
/// each cube takes one tile: it loads it (or its first pass reads global
/// memory), transforms it and stores it. With it, `CUBE_COUNT` resident cubes
/// each walk many tiles, staging the next tile's input while transforming
/// the current one ([`resident_tiles`]).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub fn fft_stage_kernel<F: Float, NI: Size, NO: Size>(
    input: &Array<Vector<F, NI>>,
    output: &mut Array<Vector<F, NO>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
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
    let grid = TileGrid {
        nb,
        nc,
        num_tiles,
        in_sa,
        in_sb,
        in_sc,
        in_axis,
        out_sa,
        out_sb,
        out_sc,
        out_axis,
    };
    let tile_len = comptime![cfg.signals_per_cube * cfg.smem_stride];
    let mut smem_re = SharedMemory::<F>::new(tile_len);
    let mut smem_im = SharedMemory::<F>::new(tile_len);
    let (signal, thread) = unit_in_tile(cfg.clone());

    if comptime![cfg.prefetch.is_some()] {
        if comptime![cfg.pairs_per_copy() > 0] {
            let landed = CopiesLanding {
                barrier: Barrier::shared(CUBE_DIM, UNIT_POS == 0),
            };
            resident_tiles::<F, NI, NO, CopiesLanding>(
                input,
                output,
                twiddles,
                post_coarse,
                post_fine,
                factors,
                grid,
                &mut smem_re,
                &mut smem_im,
                &landed,
                signal,
                thread,
                cfg,
            );
        } else {
            resident_tiles::<F, NI, NO, LoadsLanded>(
                input,
                output,
                twiddles,
                post_coarse,
                post_fine,
                factors,
                grid,
                &mut smem_re,
                &mut smem_im,
                &LoadsLanded { _none: () },
                signal,
                thread,
                cfg,
            );
        }
    } else {
        let tile = CUBE_POS;
        if tile >= num_tiles {
            terminate!();
        }
        let at = tile_coords(tile, grid, comptime![cfg.signals_per_tile()], cfg.one_tile_row);
        if comptime![!loads_directly(&cfg)] {
            load_tile::<F, NI>(input, factors, at, &mut smem_re, &mut smem_im, cfg.clone());
        }
        if comptime![folds_in_shared(&cfg)] {
            fold_packed_tile::<F>(&mut smem_re, &mut smem_im, twiddles, signal, thread, cfg.clone());
        }
        transform_tile::<F, NI, NO>(
            input,
            output,
            twiddles,
            post_coarse,
            post_fine,
            factors,
            &mut smem_re,
            &mut smem_im,
            at,
            signal,
            thread,
            cfg.clone(),
        );
        if comptime![!stores_directly(&cfg)] {
            store_tile::<F, NO>(
                output,
                twiddles,
                post_coarse,
                post_fine,
                factors,
                &smem_re,
                &smem_im,
                at,
                cfg,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks of a split butterfly hold every output `0..r` once, in the
    /// forward and the inverse order, however finely it is split.
    #[test]
    fn split_chunks_hold_every_output_once() {
        for r in [17usize, 19, 23, 47, 61, 67] {
            for pairs in [1usize, 4, 12, 33] {
                let split = butterfly_split(r, pairs);
                let per_chunk = (r / 2).div_ceil(split);
                for inverse in [false, true] {
                    let mut held: Vec<usize> = (0..split)
                        .flat_map(|c| {
                            (0..2 * per_chunk + 1).filter_map(move |m| split_output(r, per_chunk, c, m, inverse))
                        })
                        .collect();
                    held.sort_unstable();
                    assert_eq!(
                        held,
                        (0..r).collect::<Vec<_>>(),
                        "r {r}, pairs {pairs}, inverse {inverse}"
                    );
                }
            }
        }
    }

    /// Resident cubes of up to 8 warps hold one twiddle per butterfly of
    /// each pass after the first; larger cubes, which ptxas holds to 168
    /// registers a thread, and one-tile cubes read the table.
    #[test]
    fn resident_threads_hold_twiddles_only_where_registers_allow() {
        use super::super::lowering::whole_signal_stage;
        use super::super::factor::BUTTERFLY_PAIRS;
        let forms = (InputForm::Complex, OutputForm::Complex);
        let resident = |n: usize, radices: &[usize], threads: usize| {
            let mut cfg = whole_signal_stage(n, None, forms, 16, BUTTERFLY_PAIRS);
            cfg.radices = radices.to_vec();
            cfg.threads_per_signal = threads;
            cfg.signals_per_cube = 1;
            cfg.prefetch = Some(TileFill::AsyncCopies { pairs: 2 });
            cfg
        };
        // 7168 / 16 = 448 butterflies on 256 threads: two each; 7168 / 28 = 256: one.
        let mut cfg = resident(7168, &[16, 16, 28], 256);
        assert!(holds_twiddles(&cfg));
        assert_eq!(held_twiddle_offset(&cfg, 2), 2);
        assert_eq!(held_twiddle_offset(&cfg, 3), 3);
        cfg.prefetch = None;
        assert!(!holds_twiddles(&cfg));
        assert!(!holds_twiddles(&resident(6912, &[12, 24, 24], 288)));
        assert!(!holds_twiddles(&resident(12288, &[12, 32, 32], 384)));
    }

    /// Over all units of an untangling last pass, every bin `0..=n` is stored
    /// once, from the slots holding `Z[a]` and `Z[n-a]` (indices mod `n`).
    #[test]
    fn untangled_units_store_every_bin_once_from_its_pair() {
        for r in 2..=16usize {
            for quarter in 1..=40usize {
                let n = r * quarter;
                let mut stored = vec![0usize; n + 1];
                for u in 0..untangled_units(quarter) {
                    let mirror = if u == 0 { quarter / 2 } else { quarter - u };
                    // Slot t holds Z[u + t·quarter]; slot r + t holds Z[mirror + t·quarter].
                    let held = |slot: usize| {
                        let (i, t) = if slot < r { (u, slot) } else { (mirror, slot - r) };
                        (i + t * quarter) % n
                    };
                    for pair in untangled_bin_pairs(quarter, r, u == 0) {
                        let a = u + pair.offset;
                        assert_eq!(held(pair.z), a % n, "r {r} quarter {quarter} unit {u} {pair:?}");
                        assert_eq!(held(pair.y), (n - a) % n, "r {r} quarter {quarter} unit {u} {pair:?}");
                        stored[a] += 1;
                        if pair.both {
                            stored[n - a] += 1;
                        }
                    }
                }
                assert!(stored.iter().all(|&c| c == 1), "r {r} quarter {quarter}: {stored:?}");
            }
        }
    }
}

//! What a stage kernel is specialised on: the host-side types that describe a
//! stage (input and output forms, folds, twiddles, convolutions, rounds of
//! passes, the tile's layout) and the sizes of its tile in shared memory.

use crate::fft::fault::StageChecks;
use crate::fft::window::Window;

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
    pub(super) inverse: bool,
    /// The radices last to first: a convolution's second transform, whose
    /// first pass then reads exactly the values that the first transform's
    /// last butterflies wrote.
    pub(super) reversed: bool,
    /// Bluestein's chirp, applied by the first pass to what it reads: element
    /// `e` times entry `e` of the factors table, zero from this length on.
    pub(super) chirp: Option<usize>,
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
    ///
    /// [`butterfly_split`]: crate::fft::factor::butterfly_split
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
    /// `coords::slot`): what keeps strided Stockham writes apart in the banks.
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
    /// runtime division; set where that pays (`rules::coordinates_pay`).
    pub one_tile_row: bool,
    /// Resident cubes that walk the tiles, staging the next tile's input in
    /// shared memory while they transform the current one (see
    /// `fft_stage_kernel`); `None`: one tile per cube, whose first pass
    /// reads global memory.
    pub prefetch: Option<TileFill>,
    /// Checksums over each tile's transform (`fft/fault.rs`); `None`: unchecked.
    pub checks: Option<StageChecks>,
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
    pub(super) fn pairs_per_copy(&self) -> usize {
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

    pub(super) fn rader(&self) -> bool {
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

/// Shared-memory distance between two signals of `slots` complex values: one
/// padding word every 32 (see [`slot`]) and an odd total, so that neither the
/// strided Stockham writes nor signals side by side fall into one bank.
///
/// [`slot`]: super::coords::slot()
pub fn smem_stride_for(slots: usize) -> usize {
    (padded_len(slots, true) + 1) | 1
}

/// Shared-memory words a signal of `slots` complex values spans (see [`slot`]).
///
/// [`slot`]: super::coords::slot()
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

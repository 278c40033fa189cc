//! The lowering's choices that do not change results (`DeviceOptions`), and
//! how a plan chooses among them (`Planning`, `Measurement`).

use super::plan::FftError;

/// Choices the lowering makes that do not change results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Skip last-pass butterflies whose outputs a truncating store drops. Off
    /// by default: the memory-bound standalone FFT ran slightly slower with it
    /// (benches/results/2026-11-22_fft_h100.md); kept for compute-bound callers
    /// such as fused kernels, and tested to compute the same function.
    pub prune: bool,
    /// When an axis runs as a direct DFT of its stored windows.
    pub direct_dft: DirectDft,
    /// When the last two dimensions run as one plane launch.
    pub plane: PlaneFusion,
    /// The fewest signals side by side in a tile of a column (inner-axis)
    /// transform, as far as shared memory allows; `None`: 8. Wider tiles read
    /// and write longer runs of each row.
    pub column_signals: Option<usize>,
    /// The largest power-of-two radix of a Stockham pass, a power of two ≥ 2;
    /// `None`: [`default_max_radix`](crate::fft::default_max_radix) of the pass
    /// length. Larger radices mean fewer passes and more registers per thread.
    pub max_radix: Option<usize>,
    /// Shared memory in bytes a cube of one axis's stage may take, at least
    /// 48 KiB (what every backend we target offers); `None`: 108 KiB. Always
    /// capped at the device's limit (CUDA lets a cube opt in to more).
    pub shared_limit: Option<usize>,
    /// How primes above [`MAX_PRIME_RADIX`](crate::fft::MAX_PRIME_RADIX) whose
    /// predecessor is 7-smooth run in one cube.
    pub primes: PrimeAlgorithm,
    /// When a stage's cubes stay resident and fill their next tile while
    /// transforming the current one.
    pub prefetch: TilePrefetch,
    /// Cubes a prefetching stage launches (at most one per tile); `None`: as
    /// many as the device holds at once, or one per tile where the device
    /// does not give its number of SMs.
    pub resident_cubes: Option<usize>,
    /// How a real transform runs whose length cannot pack pairs of its own
    /// samples (an odd length).
    pub odd_real: OddReal,
    /// How the signals of a one-launch stage bound by shared memory lie there.
    pub shared_layout: SharedLayout,
    /// Most output pairs a thread computes of a butterfly of an odd first pass
    /// of radix 17 or more, which is split over threads
    /// ([`butterfly_split`](crate::fft::butterfly_split));
    /// `Some(0)` splits none; `None`: [`BUTTERFLY_PAIRS`](crate::fft::BUTTERFLY_PAIRS), or 6 where a
    /// resident stage splits a first pass of few prime-radix butterflies.
    pub butterfly_pairs: Option<usize>,
    /// Threads a cube of Rader's rows aims for, at least 1: it holds as many
    /// signals as fit them (one at least); `None`:
    /// `CONVOLUTION_ROW_THREADS` (128). The fastest count moves with the code the
    /// compiler generates, so [`FftPlan::on_device_measured`](crate::fft::FftPlan::on_device_measured) times several.
    pub convolution_row_threads: Option<usize>,
    /// Whether a stage whose transformed axis is contiguous in global memory
    /// compiles that stride in.
    pub unit_strides: UnitStrides,
    /// Whether half-precision C2C axes of 256 contiguous points run their
    /// butterflies on tensor cores where the device has them.
    pub tensor_cores: TensorCores,
}

/// Whether a half-precision plan's butterflies run as matrix products on
/// tensor cores (`fft/algorithm/tensor_core.rs`) where the device has half-precision
/// MMA and the axis suits them. Both compute the same transform, with
/// different rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TensorCores {
    #[default]
    Auto,
    Never,
}

/// Whether a stage reading (writing) a contiguous axis has its stride of 1
/// compiled into its kernel, or takes it at run time like any other. Both
/// compute the same transform. Compiled strides drop a multiply from each
/// element's address, but NVRTC's output shifts with them: they win on some
/// lengths and lose on others, so [`FftPlan::on_device_measured`](crate::fft::FftPlan::on_device_measured) times both
/// (benches/results/2026-11-26_measured_planning_h100.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnitStrides {
    #[default]
    Runtime,
    Compiled,
}

/// How the signals of a stage that runs in one launch and is bound by shared
/// memory (a convolution's, or passes of a prime radix above 7; rows or
/// columns) lie in shared memory. Both compute the same transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SharedLayout {
    /// The layout with the fewest shared-memory wavefronts per signal that a
    /// model of the stage's accesses counts (bank conflicts included): the
    /// threads each signal of a row stage takes (its own, or rounded up to a
    /// power of two below a warp), whether a padding word follows every 32
    /// values, and the distance between signals.
    #[default]
    Modelled,
    /// Each signal's own threads, a padding word every 32 values, and the
    /// smallest odd distance between signals.
    Plain,
}

/// How the R2C and C2R transforms of odd lengths run in one cube: a complex
/// transform of `n` per signal either way, as the half-length packing needs
/// an even `n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OddReal {
    /// Two signals of the batch share one complex transform, as its real and
    /// imaginary parts; their spectra separate by symmetry (`X[n-k] =
    /// conj X[k]` for each). It applies where the length runs as a
    /// convolution (Rader's, Bluestein's) or through radices up to 7 and the
    /// stage's innermost batch dimension holds two signals or more; other
    /// transforms widen ([`OddReal::Widen`]): a prime radix above 7 already
    /// binds the registers, and twins ran such lengths slower.
    #[default]
    Twins,
    /// Each signal widened to a complex one (imaginary parts zero).
    Widen,
}

/// Whether a stage's cubes stay resident, each walking many tiles: it stages
/// the next tile's input in shared memory (asynchronous copies where the
/// device has them, plain loads elsewhere) while it transforms the current
/// one. Both compute the same transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TilePrefetch {
    /// Where the device copies asynchronously, the stage reads whole
    /// contiguous rows and a cube's working tile takes at least 48 KiB (C2C
    /// 6144 and 12288 on an H100).
    #[default]
    Auto,
    /// Every stage whose complex input is copied as it is (not a real or
    /// Hermitian input, not a convolution's) and whose working tile and
    /// staged input fit the device's shared memory.
    Always,
    Never,
}

/// The algorithm for a prime length `p` above
/// [`MAX_PRIME_RADIX`](crate::fft::MAX_PRIME_RADIX) with a 7-smooth `p − 1`
/// (211, 421, …) that fits one cube; other lengths without a radix plan run
/// through Bluestein's algorithm either way. Both compute the same transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PrimeAlgorithm {
    /// Rader's cyclic convolution of length `p − 1`: two transforms of that
    /// length, against Bluestein's two of a 7-smooth length of at least
    /// `2p − 1` (211: 210 against 432 points, 421: 420 against 864).
    #[default]
    Rader,
    Bluestein,
}

/// Whether the last two axes of a transform run in one launch that keeps the
/// intermediate in shared memory (the plane kernel, `fft/plane.rs`) instead of one launch per
/// axis. Both compute the same transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlaneFusion {
    /// When the intermediate is the largest of input, intermediate and output
    /// (no truncation between the axes), the rows are not odd real signals that
    /// separate launches pair as twins, and the cube gets at least
    /// `MIN_PLANE_THREADS` threads; elsewhere two launches ran faster
    /// (benches/results/2026-11-26_plane_rules_h100.md).
    /// [`Planning::Measured`](super::Planning) times a plane the rules take
    /// against separate launches.
    #[default]
    Auto,
    /// Wherever both axes are single-cube FFTs whose image fits shared memory.
    Always,
    Never,
}

/// Whether an axis step runs as a matrix product between its stored windows
/// instead of an FFT (both compute the same transform).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirectDft {
    /// When the planner's estimate says it is faster.
    #[default]
    Auto,
    /// On every axis within the size limits (length up to 8192, a matrix of up
    /// to 2^22 floats).
    Always,
    Never,
}

/// How a plan is lowered for a device: by the lowering's rules alone
/// ([`FftPlan::on_device_with`](crate::fft::FftPlan::on_device_with)), or timing the candidates the rules cannot
/// rank ([`FftPlan::on_device_measured`](crate::fft::FftPlan::on_device_measured)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Planning {
    /// The planner's rules.
    #[default]
    Rules,
    /// Times each plan's candidate lowerings once per shape and keeps the
    /// fastest (same results; seconds of compilation per shape).
    Measured,
}

impl std::str::FromStr for Planning {
    type Err = FftError;
    fn from_str(s: &str) -> Result<Self, FftError> {
        match s {
            "rules" => Ok(Planning::Rules),
            "measured" => Ok(Planning::Measured),
            other => Err(FftError::Invalid(format!(
                "unknown planning '{other}' (expected rules or measured)"
            ))),
        }
    }
}

/// One candidate lowering and its time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measurement {
    pub options: DeviceOptions,
    /// The fastest of its timed groups, milliseconds per execution.
    pub ms: f64,
}

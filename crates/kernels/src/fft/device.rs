//! Lowering an [`FftPlan`] to kernel launches on a CubeCL device.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::banks::{shared_layout, Lanes};
use super::dft::{dft_kernel, DftConfig, DftShape, MAX_MATRIX};
use super::factor::{
    balanced_two_passes, bluestein_length, butterfly_split, default_max_radix, first_pass_in_whole_rounds,
    four_step_split, gcd, has_radix_plan, is_rader_prime, is_smooth, largest_first_pass_last, primitive_root, radices,
    radices_within, rounds_per_thread, smooth_plans, thread_rounds_on, threads_per_signal, BUTTERFLY_PAIRS,
};
use super::measure::Measurement;
use super::plane::{fft_plane_kernel, PlaneConfig};
use super::real::{fold_kernel, untangle_kernel, HalfSpectrumConfig};
use super::stage::{
    coordinates_pay, fft_stage_kernel, loads_directly, smem_stride_for, splits_first_pass, stages_ahead,
    stores_directly, tile_loads_ahead, AxisFold, Convolution, InputForm, OutputForm, PostTwiddle, StageConfig,
    StageLayout, TileFill, HELD_TWIDDLE_THREADS, MIN_DIRECT_RUN,
};
use super::{AxisKind, AxisStep, FftError, FftPlan, Window};
use crate::pairs::{pair_aligned, quad_aligned, vector_size};

/// Threads a row-mode cube aims for.
const ROW_THREADS: usize = 256;
/// Signals a column-mode tile wants side by side, so that each row of the tile
/// is at least 64 contiguous bytes. Wider tiles
/// (`DeviceOptions::column_signals`) won on some of FNO's column passes and
/// lost on others, so 8 stays.
const COLUMN_SIGNALS: usize = 8;
/// Threads a cube of Rader's rows aims for (Bluestein's, unmeasured, keep
/// [`ROW_THREADS`]). Its two transforms keep more values live than one, so
/// larger cubes cost registers and occupancy; most Rader lengths ran fastest
/// in cubes of 128, and measured planning tries 64 and 256 too
/// (benches/results/2026-11-26_measured_planning_h100.md).
pub(crate) const CONVOLUTION_ROW_THREADS: usize = 128;
/// Largest radix of Rader's two-pass rows ([`balanced_two_passes`]): radices up
/// to 24 beat three-pass plans, wider ones lost on the real transforms
/// (benches/results/2026-11-26_rader_two_passes_h100.md).
const CONVOLUTION_COMPOSITE: usize = 24;
/// Shared memory every backend we target gives a cube: the least a caller may
/// set as `DeviceOptions::shared_limit`.
const PORTABLE_SHARED: usize = 48 * 1024;
/// Shared memory a stage's cube may take by default, where the device allows it
/// (CUDA lets a cube opt in to more than 48 KiB; two such cubes fit an H100
/// SM). One cube then transforms signals of up to ~12k complex points, which
/// would otherwise take a four-step FFT's two launches
/// (benches/results/2026-11-24_composite_radices_h100.md).
const SHARED_LIMIT: usize = 108 * 1024;
const ELEMWISE_THREADS: usize = 256;
/// The smallest tile (working shared memory of one cube) whose stage of whole
/// rows runs on resident cubes that stage the next tile's input asynchronously,
/// 16 bytes per copy (odd rows 8) ([`TilePrefetch::Auto`]). Such a cube shares
/// its SM with at most three others, which cannot hide its load; smaller tiles
/// lose more to the staging than they gain. Column tiles stay one tile per
/// cube: they ran slower resident
/// (benches/results/2026-11-25_resident_cubes_h100.md).
const RESIDENT_TILE_BYTES: usize = 48 * 1024;
/// The most threads a resident cube takes when a wider radix allows (see
/// `Lowering::with_prefetch`): more threads spill registers in the resident
/// loop.
const RESIDENT_THREADS: usize = 512;
/// Largest product of an odd radix and a power of two in a resident stage's
/// passes, where it saves a pass (C2C 6144 = 16·16·24, not 3·8·16·16;
/// benches/results/2026-11-26_staged_pass_order_h100.md).
const RESIDENT_COMPOSITE: usize = 32;
/// Rounds of butterflies beyond one a pass that a resident plan on at most 8 or
/// 12 warps may take a thread ([`plan_within`]): plans within this bound beat
/// the wider cubes they replace, plans of more rounds lost
/// (benches/results/2026-11-27_eight_warp_plans_h100.md).
const RESIDENT_EXTRA_ROUNDS: usize = 2;
/// The most threads of a cube that ptxas lets take 168 registers each (12
/// warps; 13 to 16 get 128), where a resident stage on more moves if its plan
/// loops ([`plan_on_fewer_warps`]); plans of one round a pass keep their
/// threads, as moving them did not pay
/// (benches/results/2026-11-27_eight_warp_plans_h100.md).
const CAPPED_REGISTER_THREADS: usize = 384;
/// Output pairs a thread computes of a butterfly that a resident stage's first
/// pass splits ([`Lowering::split_staged_first_pass`]): the fastest count tried
/// on C2C 141 = 47·3 (benches/results/2026-11-26_resident_split_h100.md).
const RESIDENT_BUTTERFLY_PAIRS: usize = 6;
/// Threads an SM holds at once on the GPUs we tune for (Ampere, Hopper): a
/// bound on the resident cubes of a prefetching stage.
const THREADS_PER_MULTIPROCESSOR: usize = 2048;
/// Threads a plane cube aims for.
const PLANE_THREADS: usize = 512;
/// Fewest threads of a plane cube the planner takes on its own
/// ([`PlaneFusion::Auto`]) where the image leaves room for no more: thinner
/// plane cubes ran slower than two launches
/// (benches/results/2026-11-26_plane_rules_h100.md).
pub const MIN_PLANE_THREADS: usize = 128;
/// Shared memory a plane cube may take: its image and work tile; two such
/// cubes fit on an H100 SM. On backends with less the limit is theirs.
const PLANE_SHARED_LIMIT: usize = 112 * 1024;
/// Longest axis a direct DFT serves: its f32 sums run over the whole axis.
const MAX_DIRECT_LEN: usize = 8192;
/// A length without a radix plan runs as a direct DFT when its multiply-adds
/// per signal are at most this many times `m·log2 m` for the length `m` of the
/// convolution it would otherwise run as (Bluestein's, or Rader's `p − 1`).
/// Lengths with a radix plan stay FFTs, which led the direct DFT wherever
/// measured (benches/results/2026-11-22_direct_dft_h100.md,
/// 2026-11-25_rader_column_tiles_h100.md).
const DIRECT_RATIO: f64 = 16.0;

/// Where a launch reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buf {
    Input,
    Output,
    /// A scratch buffer of the given number of f32 values.
    Temp(usize, usize),
}

// A plan holds a handful of launches, built once: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Launch {
    Stage {
        cfg: StageConfig,
        layout: StageLayout,
        twiddles: Handle,
        twiddle_floats: usize,
        post: Option<(Handle, usize, Handle, usize)>,
        /// Per-index factors (Bluestein's chirp and kernel spectrum).
        factors: (Handle, usize),
        /// Cubes of a prefetching stage (at most one per tile): `None`, one per tile.
        resident_cubes: Option<usize>,
    },
    /// A direct DFT of the stored windows (see [`super::dft`]).
    Dft {
        cfg: DftConfig,
        shape: DftShape,
        matrix: Handle,
        signals: usize,
        inner: usize,
        /// Strides in floats of the input and output: (outer, inner, axis).
        input: [usize; 3],
        output: [usize; 3],
    },
    /// The last two dimensions in one launch (see [`super::plane`]).
    Plane {
        cfg: PlaneConfig,
        images: usize,
        twiddles: [(Handle, usize); 2],
    },
    /// The extra pass of a long real transform: untangle (R2C) or fold (C2R).
    HalfSpectrum {
        fold: bool,
        cfg: HalfSpectrumConfig,
        inner: usize,
        total: usize,
        twiddles: Handle,
        twiddle_floats: usize,
    },
}

struct Pass {
    launch: Launch,
    src: Buf,
    src_floats: usize,
    dst: Buf,
    dst_floats: usize,
}

/// An [`FftPlan`] lowered for one device: twiddle tables uploaded, launches chosen.
pub struct DeviceFft<R: Runtime> {
    client: ComputeClient<R>,
    plan: FftPlan,
    options: DeviceOptions,
    passes: Vec<Pass>,
    temps: Vec<usize>,
    measurements: Vec<Measurement>,
}

impl FftPlan {
    /// Lowers the plan for `client`'s device (uploads twiddle tables once).
    pub fn on_device<R: Runtime>(&self, client: &ComputeClient<R>) -> Result<DeviceFft<R>, FftError> {
        self.on_device_with(client, DeviceOptions::default())
    }

    /// [`Self::on_device`] with non-default lowering choices (for measurements).
    pub fn on_device_with<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        options: DeviceOptions,
    ) -> Result<DeviceFft<R>, FftError> {
        DeviceFft::new(client.clone(), self.clone(), options)
    }
}

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
    /// `Some(0)` splits none; `None`: [`BUTTERFLY_PAIRS`], or 6 where a
    /// resident stage splits a first pass of few prime-radix butterflies.
    pub butterfly_pairs: Option<usize>,
    /// Threads a cube of Rader's rows aims for, at least 1: it holds as many
    /// signals as fit them (one at least); `None`:
    /// [`CONVOLUTION_ROW_THREADS`]. The fastest count moves with the code the
    /// compiler generates, so [`FftPlan::on_device_measured`] times several.
    pub convolution_row_threads: Option<usize>,
    /// Whether a stage whose transformed axis is contiguous in global memory
    /// compiles that stride in.
    pub unit_strides: UnitStrides,
}

/// Whether a stage reading (writing) a contiguous axis has its stride of 1
/// compiled into its kernel, or takes it at run time like any other. Both
/// compute the same transform. Compiled strides drop a multiply from each
/// element's address, but NVRTC's output shifts with them: they win on some
/// lengths and lose on others, so [`FftPlan::on_device_measured`] times both
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

/// Exact `exp(-2πi·e/len)` for `e < count`, computed in f64, interleaved f32.
fn twiddle_table(len: usize, count: usize) -> Vec<f32> {
    (0..count)
        .flat_map(|e| {
            // Reduce the angle exactly before the trigonometry.
            let phase = -2.0 * std::f64::consts::PI * ((e % len) as f64) / len as f64;
            [phase.cos() as f32, phase.sin() as f32]
        })
        .collect()
}

/// Bluestein's chirp `exp(∓iπ·k²/n)` for `k < n` (minus for the forward
/// transform), in f64. `k² mod 2n` is reduced in integers so that the phase
/// stays exact for large `n`.
fn chirp(n: usize, inverse: bool) -> Vec<num_complex::Complex<f64>> {
    let sign = if inverse { 1.0 } else { -1.0 };
    (0..n as u128)
        .map(|k| {
            let e = (k * k % (2 * n as u128)) as f64;
            num_complex::Complex::from_polar(1.0, sign * std::f64::consts::PI * e / n as f64)
        })
        .collect()
}

fn interleave(values: &[num_complex::Complex<f64>]) -> Vec<f32> {
    values.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect()
}

/// The spectrum of Bluestein's kernel `conj(chirp)` laid out circularly over
/// `m` samples, divided by `m` (the inverse transform's normalisation).
fn bluestein_kernel_spectrum(chirp: &[num_complex::Complex<f64>], m: usize) -> Vec<f32> {
    let mut b = vec![num_complex::Complex::new(0.0, 0.0); m];
    for (j, wj) in chirp.iter().enumerate() {
        b[j] = wj.conj();
        if j > 0 {
            b[m - j] = wj.conj();
        }
    }
    rustfft::FftPlanner::<f64>::new().plan_fft_forward(m).process(&mut b);
    let scale = 1.0 / m as f64;
    b.iter_mut().for_each(|v| *v *= scale);
    interleave(&b)
}

/// For a resident stage of a 7-smooth `len` whose cube of `signals` signals
/// runs the passes `radices` on `threads` threads each, more than 8 warps in
/// all, a plan of as many passes on fewer warps, and its threads a signal.
/// ptxas caps a cube's registers a thread by the warps one SM sub-partition
/// holds of it: 255 up to 8 warps, 168 up to 12, 128 up to 16; on at most 8
/// ([`HELD_TWIDDLE_THREADS`]) the threads also hold their twiddles. The cube
/// moves to 8 warps where [`plan_within`] finds a plan there, else from more
/// than 12 warps to 12 ([`CAPPED_REGISTER_THREADS`]) where its own plan
/// already takes a thread more than one round in some pass: where each pass
/// took one round, the extra warps paid for themselves.
fn plan_on_fewer_warps(len: usize, radices: &[usize], threads: usize, signals: usize) -> Option<(Vec<usize>, usize)> {
    let cube_threads = threads * signals;
    let loops = rounds_per_thread(len, radices, threads) > radices.len();
    [(HELD_TWIDDLE_THREADS, true), (CAPPED_REGISTER_THREADS, loops)]
        .into_iter()
        .filter(|&(fewer, applies)| applies && cube_threads > fewer)
        .find_map(|(fewer, _)| plan_within(len, radices.len(), signals, fewer))
}

/// A plan of `passes` passes over a 7-smooth `len` on at most `cube_threads`
/// threads a cube of `signals` signals, and its threads a signal. It takes
/// the fewest rounds of butterflies a thread, at most
/// [`RESIDENT_EXTRA_ROUNDS`] more than one a pass; then the fewest
/// thread-rounds, then the smallest largest radix. Odd composites up to
/// [`RESIDENT_COMPOSITE`] include 27 and 25, which the fewest-pass factoring
/// never forms.
fn plan_within(len: usize, passes: usize, signals: usize, cube_threads: usize) -> Option<(Vec<usize>, usize)> {
    let max_threads = cube_threads / signals;
    if max_threads == 0 {
        return None;
    }
    let rounds = |plan: &[usize], threads: usize| rounds_per_thread(len, plan, threads);
    smooth_plans(len, passes, 2 * default_max_radix(len), RESIDENT_COMPOSITE)
        .into_iter()
        .map(|plan| {
            let fewest = rounds(&plan, max_threads);
            let threads = (1..=max_threads)
                .find(|&threads| rounds(&plan, threads) == fewest)
                .expect("max_threads takes the fewest rounds");
            let key = (
                fewest,
                thread_rounds_on(len, &plan, threads),
                plan.iter().max().copied(),
            );
            (key, plan, threads)
        })
        .filter(|((rounds, _, _), _, _)| *rounds <= passes + RESIDENT_EXTRA_ROUNDS)
        .min_by_key(|(key, _, _)| *key)
        .map(|(_, plan, threads)| (plan, threads))
}

/// Complex values a signal's tile holds: its input, the passes' sequence, and
/// Rader's `x[0]` and `X[0]` beside the convolution.
fn tile_slots(n: usize, input: InputForm, convolution: Option<Convolution>) -> usize {
    let extra = if convolution == Some(Convolution::Rader) { 2 } else { 0 };
    input.load_len(n).max(Convolution::pass_len(convolution, n) + extra)
}

/// A stage that transforms whole signals of length `n` (through a
/// convolution's length when given) in one cube, one signal at a time, rows
/// walked element first, whole sequences in and out: callers narrow it. Its
/// first pass splits its butterflies by `butterfly_pairs` where
/// [`splits_first_pass`] allows (0: never).
pub(super) fn whole_signal_stage(
    n: usize,
    convolution: Option<Convolution>,
    forms: (InputForm, OutputForm),
    max_radix: usize,
    butterfly_pairs: usize,
) -> StageConfig {
    let pass_len = Convolution::pass_len(convolution, n);
    let radix_list = radices(pass_len, max_radix).expect("pass lengths have a radix plan");
    let mut cfg = StageConfig {
        n,
        radices: radix_list,
        convolution,
        threads_per_signal: 1,
        signals_per_cube: 1,
        butterfly_pairs,
        inverse: false,
        input: forms.0,
        output: forms.1,
        load: Window::Prefix(2 * n + 1),
        store: Window::Prefix(2 * n + 1),
        load_signals_fastest: false,
        store_signals_fastest: false,
        smem_stride: smem_stride_for(tile_slots(n, forms.0, convolution)),
        padded_slots: true,
        scale_bits: 1f32.to_bits(),
        post_twiddle: None,
        prune: false,
        load_fold: None,
        store_fold: None,
        load_factor: None,
        store_factor: None,
        load_shared: false,
        store_shared: false,
        // Set once the layout is known (`StageConfig::with_layout`, `push_stage`).
        vector_input: false,
        vector_output: false,
        unit_input_axis: false,
        unit_output_axis: false,
        one_tile_row: false,
        prefetch: None,
    };
    if !splits_first_pass(&cfg) {
        cfg.butterfly_pairs = 0;
    }
    cfg.threads_per_signal = threads_per_signal(pass_len, &cfg.radices, cfg.butterfly_pairs);
    cfg
}

/// Bluestein's factors of a length-`n` transform through length `m`: the `n`
/// chirp values, then the `m` bins of the kernel's spectrum.
fn bluestein_factors(n: usize, inverse: bool, m: usize) -> Vec<f32> {
    let chirp = chirp(n, inverse);
    let mut factors = interleave(&chirp);
    factors.extend(bluestein_kernel_spectrum(&chirp, m));
    factors
}

/// Rader's factors of a transform of prime length `p` (see
/// [`Convolution::Rader`]): for each `0 <= k < p` the shared-memory slots of
/// input `k` and of output `k` as integer bit patterns (see
/// [`Convolution::Rader`]), then the spectrum of `b[t] = exp(∓2πi·(g^t mod
/// p)/p)` over `p − 1` samples divided by `p − 1`, `g` the smallest primitive
/// root, then for each slot `s < p − 1` the input `g^-s` it holds (a resident
/// cube's first pass gathers its staged input by it). Phases are reduced in
/// integers and the spectrum built in f64.
fn rader_factors(p: usize, inverse: bool) -> Vec<f32> {
    let len = p - 1;
    let g = primitive_root(p);
    // x[0] and X[0] sit in the two slots after the convolution's.
    let mut slots = vec![[len, len + 1]; p];
    let mut sources = vec![0; len];
    let mut b = Vec::with_capacity(len);
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut power = 1;
    for t in 0..len {
        // Input g^-s goes to slot s; output g^t is the convolution's entry t.
        slots[power] = [(len - t) % len, t];
        sources[(len - t) % len] = power;
        let phase = sign * 2.0 * std::f64::consts::PI * power as f64 / p as f64;
        b.push(num_complex::Complex::from_polar(1.0, phase));
        power = power * g % p;
    }
    rustfft::FftPlanner::<f64>::new().plan_fft_forward(len).process(&mut b);
    let scale = 1.0 / len as f64;
    let mut factors: Vec<f32> = slots
        .iter()
        .flat_map(|pair| pair.map(|slot| f32::from_bits(slot as u32)))
        .collect();
    factors.extend(b.iter().flat_map(|v| [(v.re * scale) as f32, (v.im * scale) as f32]));
    factors.extend(sources.iter().map(|&k| f32::from_bits(k as u32)));
    factors
}

/// The convolution a length runs as in one cube: none for lengths with a
/// radix plan, Rader's for larger primes with a 7-smooth predecessor (unless
/// asked otherwise), Bluestein's for the others.
fn convolution_for(n: usize, primes: PrimeAlgorithm) -> Option<Convolution> {
    if has_radix_plan(n) {
        None
    } else if primes == PrimeAlgorithm::Rader && is_rader_prime(n) {
        Some(Convolution::Rader)
    } else {
        Some(Convolution::Bluestein(bluestein_length(n)))
    }
}

/// The factors table of a stage run as `convolution` (one zero pair when
/// there is none: every kernel binds the array).
fn convolution_factors(n: usize, inverse: bool, convolution: Option<Convolution>) -> Vec<f32> {
    match convolution {
        None => vec![0.0, 0.0],
        Some(Convolution::Bluestein(m)) => bluestein_factors(n, inverse, m),
        Some(Convolution::Rader) => rader_factors(n, inverse),
    }
}

/// An axis step as one stage over tiles that a caller's kernel holds whole in
/// shared memory between steps of its own (the fused spectral convolution):
/// one signal per cube until the caller sets its tile, no global loads or
/// stores chosen. Cheap: the tables come apart ([`shared_stage_tables`]).
/// A caller that fills the tile itself places element `k` at
/// `stage::input_slot` (Rader's algorithm permutes it).
pub(crate) fn shared_stage(step: &AxisStep) -> StageConfig {
    let t = Transform::of(step);
    let convolution = convolution_for(t.n, PrimeAlgorithm::default());
    let mut cfg = whole_signal_stage(
        t.n,
        convolution,
        (t.input, t.output),
        default_max_radix(Convolution::pass_len(convolution, t.n)),
        0,
    );
    cfg.inverse = t.inverse;
    cfg.load = step.load;
    cfg.store = step.store;
    cfg.scale_bits = (step.scale as f32).to_bits();
    cfg
}

/// The twiddle table and the factors (Bluestein's; one zero when there are
/// none, as every kernel binds the array) of a [`shared_stage`].
pub(crate) fn shared_stage_tables(cfg: &StageConfig) -> (Vec<f32>, Vec<f32>) {
    let table_len = cfg.pass_len() * cfg.twiddle_table_step();
    let factors = convolution_factors(cfg.n, cfg.inverse, cfg.convolution);
    (twiddle_table(table_len, table_len.max(1)), factors)
}

/// The complex transform behind an axis step and the forms around it. Real
/// transforms of even length whose half has a radix plan pack real pairs into a
/// half-length transform; the others widen to a full-length complex one.
#[derive(Clone, Copy, Debug)]
struct Transform {
    n: usize,
    input: InputForm,
    output: OutputForm,
    inverse: bool,
}

impl Transform {
    fn of(step: &AxisStep) -> Self {
        let packable = step.n.is_multiple_of(2) && has_radix_plan(step.n / 2);
        let (n, input, output) = match step.kind {
            AxisKind::C2C { .. } => (step.n, InputForm::Complex, OutputForm::Complex),
            AxisKind::R2C if packable => (step.n / 2, InputForm::RealPairs, OutputForm::Untangled),
            AxisKind::R2C => (step.n, InputForm::Real, OutputForm::Complex),
            AxisKind::C2R if packable => (step.n / 2, InputForm::HermitianPacked, OutputForm::RealPairs),
            AxisKind::C2R => (step.n, InputForm::Hermitian, OutputForm::RealPart),
        };
        let inverse = matches!(step.kind, AxisKind::C2C { inverse: true } | AxisKind::C2R);
        Transform {
            n,
            input,
            output,
            inverse,
        }
    }
}

/// Where a transform reads: the buffer, its form, the window over the axis
/// sequence, how many entries the buffer holds along the axis, the length of
/// the sequence the window refers to, the number of axis indices that carry
/// data (`len`; Bluestein pads beyond it), and an optional per-index factor.
#[derive(Clone)]
struct Source {
    buf: (Buf, usize),
    form: InputForm,
    window: Window,
    stored: usize,
    seq_len: usize,
    len: usize,
    factor: Option<Vec<f32>>,
}

/// Where a transform writes; fields as [`Source`], plus the store's scale.
#[derive(Clone)]
struct Sink {
    buf: (Buf, usize),
    form: OutputForm,
    window: Window,
    stored: usize,
    seq_len: usize,
    len: usize,
    factor: Option<Vec<f32>>,
    scale: f32,
}

/// A contiguous complex scratch sequence of length `len`, read or written whole.
fn scratch_source(buf: (Buf, usize), len: usize) -> Source {
    Source {
        buf,
        form: InputForm::Complex,
        window: Window::Prefix(len),
        stored: len,
        seq_len: len,
        len,
        factor: None,
    }
}

fn scratch_sink(buf: (Buf, usize), len: usize) -> Sink {
    Sink {
        buf,
        form: OutputForm::Complex,
        window: Window::Prefix(len),
        stored: len,
        seq_len: len,
        len,
        factor: None,
        scale: 1.0,
    }
}

/// The batch around the transformed axis: `outer` signals before it, `inner` after.
#[derive(Clone, Copy)]
struct Batch {
    outer: usize,
    inner: usize,
}

impl Batch {
    fn column(&self) -> bool {
        self.inner > 1
    }
}

struct Lowering<'a, R: Runtime> {
    client: &'a ComputeClient<R>,
    passes: Vec<Pass>,
    temps: Vec<usize>,
    shared_limit: usize,
    plane_shared_limit: usize,
    max_threads: usize,
    /// Shared memory the device gives one cube (a resident stage's working tile and staged input).
    device_shared: usize,
    async_copies: bool,
    multiprocessors: Option<usize>,
    options: DeviceOptions,
}

impl<R: Runtime> Lowering<'_, R> {
    fn max_radix(&self, len: usize) -> usize {
        self.options.max_radix.unwrap_or_else(|| default_max_radix(len))
    }

    /// Threads per signal for passes over `len` ([`threads_per_signal`]), no
    /// butterfly split (the plane launch's stages).
    fn threads_for(&self, len: usize) -> usize {
        radices(len, self.max_radix(len)).map_or(1, |r| threads_per_signal(len, &r, 0))
    }

    fn butterfly_pairs(&self) -> usize {
        self.options.butterfly_pairs.unwrap_or(BUTTERFLY_PAIRS)
    }

    fn upload(&self, values: &[f32]) -> (Handle, usize) {
        (self.client.create_from_slice(f32::as_bytes(values)), values.len())
    }

    fn temp(&mut self, floats: usize) -> Buf {
        self.temps.push(floats);
        Buf::Temp(self.temps.len() - 1, floats)
    }

    /// Whether `signals` signals with passes over `pass_len` and `slots` complex
    /// values each fit one cube.
    fn fits(&self, pass_len: usize, slots: usize, signals: usize) -> bool {
        8 * signals * smem_stride_for(slots.max(pass_len)) <= self.shared_limit
            && self.threads_for(pass_len) * signals <= self.max_threads
    }

    /// Whether one cube transforms a whole signal: column tiles of mixed radix need
    /// [`COLUMN_SIGNALS`] signals side by side (longer ones coalesce better as
    /// a four-step FFT); a convolution's tiles, one signal at least.
    fn fits_single(&self, t: &Transform, convolution: Option<Convolution>, column: bool) -> bool {
        let signals = if column && convolution.is_none() {
            COLUMN_SIGNALS
        } else {
            1
        };
        self.fits(
            Convolution::pass_len(convolution, t.n),
            tile_slots(t.n, t.input, convolution),
            signals,
        )
    }

    /// A stage of whole signals over rows or columns, its first pass split by
    /// `butterfly_pairs` where it may ([`whole_signal_stage`]).
    fn single_stage_config(
        &self,
        n: usize,
        convolution: Option<Convolution>,
        forms: (InputForm, OutputForm),
        column: bool,
        signals_hint: usize,
        butterfly_pairs: usize,
    ) -> StageConfig {
        let mut cfg = whole_signal_stage(
            n,
            convolution,
            forms,
            self.max_radix(Convolution::pass_len(convolution, n)),
            butterfly_pairs,
        );
        let free_plan = self.options.max_radix.is_none();
        if convolution == Some(Convolution::Rader) && !column && free_plan && cfg.radices.len() > 2 {
            // Rader's rows in two passes, the most even split with radices up
            // to CONVOLUTION_COMPOSITE, smaller radix first (forward real
            // twins: larger first): three-pass plans are bound by their
            // instructions. The order is measured, not modelled (the bank model
            // counts both alike;
            // benches/results/2026-11-26_rader_two_passes_h100.md). A caller's
            // radix cap keeps the capped plan.
            if let Some([small, large]) = balanced_two_passes(cfg.pass_len(), CONVOLUTION_COMPOSITE) {
                cfg.radices = if forms.0 == InputForm::RealTwins {
                    vec![large, small]
                } else {
                    vec![small, large]
                };
                // Measured unsplit: an odd first radix from 17 on would split.
                cfg.butterfly_pairs = 0;
            }
        }
        if convolution.is_some() && !column {
            // A convolution's passes over rows run one butterfly of their
            // smallest radix per thread: two transforms, the permutations and
            // the kernel's product keep more values live than a plain FFT, and
            // more threads with fewer registers each hide them better. Column
            // tiles keep the fewest threads: wider ones ran slower
            // (benches/results/2026-11-25_odd_real_twins_h100.md).
            let smallest = cfg.radices.iter().copied().min().unwrap_or(1);
            cfg.threads_per_signal = (cfg.pass_len() / smallest).clamp(1, self.max_threads);
        }
        cfg.load_signals_fastest = column;
        cfg.store_signals_fastest = column;
        cfg.signals_per_cube = self.signals_per_cube(&cfg, column, signals_hint);
        cfg.prune = self.options.prune;
        cfg
    }

    /// Signals a cube of `cfg` transforms side by side, of `signals_hint` in
    /// a row of tiles: as many as fill [`ROW_THREADS`] threads (Rader's rows
    /// [`CONVOLUTION_ROW_THREADS`]; columns: at least the fewest column
    /// signals), as far as shared memory and the device's threads allow.
    fn signals_per_cube(&self, cfg: &StageConfig, column: bool, signals_hint: usize) -> usize {
        let by_smem = (self.shared_limit / (8 * cfg.smem_stride)).max(1);
        let threads_per_signal = cfg.threads_per_signal;
        let wanted = if column {
            let fewest = self.options.column_signals.unwrap_or(COLUMN_SIGNALS);
            fewest.max(ROW_THREADS / threads_per_signal)
        } else if cfg.convolution == Some(Convolution::Rader) {
            let threads = self.options.convolution_row_threads.unwrap_or(CONVOLUTION_ROW_THREADS);
            (threads / threads_per_signal).max(1)
        } else {
            ROW_THREADS / threads_per_signal
        };
        let most = wanted.min(by_smem).min(self.max_threads / threads_per_signal).max(1);
        // Spread the signals of a row of tiles evenly, so that a last, nearly
        // empty tile does not cost a whole cube.
        let tiles = signals_hint.max(1).div_ceil(most);
        signals_hint.max(1).div_ceil(tiles)
    }

    /// Whether a stage of `t` takes the modelled shared layout
    /// ([`SharedLayout::Modelled`]): only stages bound by shared memory, a
    /// convolution's or passes of a prime radix above 7, which gain from it;
    /// 7-smooth lengths, near the copy bandwidth already, moved both ways
    /// (benches/results/2026-11-25_shared_layout_h100.md).
    fn shared_bound(&self, t: &Transform, convolution: Option<Convolution>) -> bool {
        self.options.shared_layout == SharedLayout::Modelled && (convolution.is_some() || !is_smooth(t.n))
    }

    /// A column stage whose tile holds all `signals` columns of a row of tiles,
    /// if one cube can: the tile then reads and writes one contiguous block
    /// (every row whole) instead of runs of a few columns. The default radix
    /// cap is tried first, then 16, whose fewer threads per signal fit more
    /// columns (unless the caller fixed the cap)
    /// (benches/results/2026-11-25_rader_column_tiles_h100.md).
    fn whole_row_column_stage(&self, t: &Transform, signals: usize) -> Option<StageConfig> {
        let caps = match self.options.max_radix {
            Some(cap) => vec![cap],
            None => vec![default_max_radix(t.n), 16],
        };
        caps.into_iter().find_map(|cap| {
            let mut cfg = whole_signal_stage(t.n, None, (t.input, t.output), cap, 0);
            let fits = signals * cfg.threads_per_signal <= self.max_threads
                && 8 * signals * cfg.smem_stride <= self.shared_limit;
            fits.then(|| {
                cfg.signals_per_cube = signals;
                cfg.load_signals_fastest = true;
                cfg.store_signals_fastest = true;
                cfg.prune = self.options.prune;
                cfg
            })
        })
    }

    /// Makes the stage's cubes resident and prefetching ([`TilePrefetch`])
    /// where the options and the device allow; returns the cubes to launch.
    fn with_prefetch(&self, mut cfg: StageConfig, layout: &StageLayout) -> (StageConfig, Option<usize>) {
        // Rows read whole from contiguous signals; evenly placed ones stage
        // two pairs (16 bytes) per copy, the launch checking the buffer's
        // alignment, odd ones one pair.
        let extents = [layout.na, layout.nb, layout.nc];
        let whole_rows = !cfg.load_signals_fastest
            && cfg.load_fold.is_none()
            && matches!(cfg.load, Window::Prefix(len) if len >= cfg.n)
            && layout.input[3] == 1;
        let paired_rows = whole_rows
            && cfg.n.is_multiple_of(2)
            && (0..3).all(|d| extents[d] == 1 || layout.input[d].is_multiple_of(2));
        let tile_bytes = 8 * cfg.signals_per_cube * cfg.smem_stride;
        let wanted = match self.options.prefetch {
            TilePrefetch::Always => true,
            TilePrefetch::Never => false,
            TilePrefetch::Auto => self.async_copies && whole_rows && tile_bytes >= RESIDENT_TILE_BYTES,
        };
        // A signal's working tile and its staged input; fewer signals per
        // cube where they would not fit.
        let signal_bytes = 8 * (cfg.smem_stride + cfg.load_len());
        let signals = cfg.signals_per_cube.min(self.device_shared / signal_bytes);
        if !(wanted && stages_ahead(&cfg) && signals > 0) {
            return (cfg, None);
        }
        cfg.signals_per_cube = signals;
        // The resident loop keeps more values live across the passes: with
        // more than RESIDENT_THREADS threads (at most 80 registers each) the
        // passes spill, so a wider radix halves the threads where it can.
        // Composites up to RESIDENT_COMPOSITE take the plan where they save
        // a pass within those threads, the default cap before the wider. A
        // convolution keeps its own plan.
        if self.options.max_radix.is_none() && cfg.convolution.is_none() {
            let len = cfg.pass_len();
            let cap = default_max_radix(len);
            let wider = [cap, 2 * cap]
                .into_iter()
                .filter_map(|max_radix| {
                    let plan = radices_within(len, max_radix, RESIDENT_COMPOSITE)?;
                    let threads = threads_per_signal(len, &plan, cfg.butterfly_pairs);
                    (threads * cfg.signals_per_cube <= RESIDENT_THREADS).then_some((plan, threads))
                })
                .min_by_key(|(plan, _)| plan.len());
            if let Some((plan, threads)) = wider {
                if plan.len() < cfg.radices.len() || cfg.threads_per_cube() > RESIDENT_THREADS {
                    cfg.radices = plan;
                    cfg.threads_per_signal = threads;
                }
            }
            if let Some((plan, threads)) =
                plan_on_fewer_warps(len, &cfg.radices, cfg.threads_per_signal, cfg.signals_per_cube)
            {
                cfg.radices = plan;
                cfg.threads_per_signal = threads;
            }
        }
        self.split_staged_first_pass(&mut cfg);
        cfg.prefetch = Some(if self.async_copies {
            TileFill::AsyncCopies {
                pairs: if paired_rows { 2 } else { 1 },
            }
        } else {
            TileFill::Loads
        });
        // Overestimating costs nothing: surplus cubes wait and walk fewer tiles.
        let per_multiprocessor = (self.device_shared / (cfg.signals_per_cube * signal_bytes))
            .min(THREADS_PER_MULTIPROCESSOR / cfg.threads_per_cube())
            .max(1);
        let cubes = self
            .options
            .resident_cubes
            .or(self.multiprocessors.map(|sms| sms * per_multiprocessor));
        (cfg, cubes)
    }

    /// Splits the butterflies of a resident stage's first pass
    /// ([`RESIDENT_BUTTERFLY_PAIRS`]) where it is of a prime radix above 7 with
    /// fewer than [`MIN_DIRECT_RUN`] butterflies a signal: unsplit, that pass
    /// read global memory directly (a pass of such a radix through shared
    /// memory would hold all its outputs across the barrier); a resident pass
    /// reads the staged tile, where a split thread reading the whole butterfly
    /// costs shared loads only. The cube keeps its signals, even past
    /// [`RESIDENT_THREADS`], as fewer signals a cube ran slower
    /// (benches/results/2026-11-26_resident_split_h100.md). A caller's
    /// `butterfly_pairs` holds (0: unsplit).
    fn split_staged_first_pass(&self, cfg: &mut StageConfig) {
        let len = cfg.pass_len();
        let Some(&r) = cfg.radices.first() else {
            return;
        };
        let pairs = self.options.butterfly_pairs.unwrap_or(RESIDENT_BUTTERFLY_PAIRS);
        let few = len / r < MIN_DIRECT_RUN;
        if cfg.convolution.is_some() || is_smooth(r) || !few || butterfly_split(r, pairs) == 1 {
            return;
        }
        cfg.butterfly_pairs = pairs;
        cfg.threads_per_signal = threads_per_signal(len, &cfg.radices, pairs);
    }

    fn push_stage(
        &mut self,
        cfg: StageConfig,
        layout: StageLayout,
        src: (Buf, usize),
        dst: (Buf, usize),
        factors: &[f32],
    ) {
        let (mut cfg, resident_cubes) = self.with_prefetch(
            cfg.with_layout(&layout, self.options.unit_strides == UnitStrides::Compiled),
            &layout,
        );
        // Rows whose first pass reads global memory, on the passes' own threads
        // (a convolution's rows take more), start with a pass in whole rounds.
        // Resident cubes read a staged tile, and column tiles walk signals
        // fastest: there that reorder lost, and a larger first pass runs last
        // instead (benches/results/2026-11-26_first_pass_rounds_h100.md).
        if cfg.convolution.is_none() {
            let staged = cfg.prefetch.is_some() || cfg.load_signals_fastest;
            cfg.radices = if staged {
                largest_first_pass_last(cfg.pass_len(), &cfg.radices)
            } else {
                first_pass_in_whole_rounds(cfg.pass_len(), &cfg.radices, cfg.threads_per_signal)
            };
        }
        cfg.one_tile_row = layout.na == 1 && layout.nb == 1 && coordinates_pay(&cfg);
        let table_len = cfg.pass_len() * cfg.twiddle_table_step();
        let (twiddles, twiddle_floats) = self.upload(&twiddle_table(table_len, table_len.max(1)));
        let post = cfg.post_twiddle.map(|pt| {
            let coarse_len = pt.total.div_ceil(pt.fine_len);
            let coarse: Vec<f32> = (0..coarse_len)
                .flat_map(|q| {
                    let phase = -2.0 * std::f64::consts::PI * ((q * pt.fine_len) % pt.total) as f64 / pt.total as f64;
                    [phase.cos() as f32, phase.sin() as f32]
                })
                .collect();
            let (c, cf) = self.upload(&coarse);
            let (f, ff) = self.upload(&twiddle_table(pt.total, pt.fine_len));
            (c, cf, f, ff)
        });
        // Kernels bind every array argument: an unused factors table is one zero.
        let factors = self.upload(if factors.is_empty() { &[0.0, 0.0] } else { factors });
        self.passes.push(Pass {
            launch: Launch::Stage {
                cfg,
                layout,
                twiddles,
                twiddle_floats,
                post,
                factors,
                resident_cubes,
            },
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }

    fn push_half_spectrum(
        &mut self,
        fold: bool,
        cfg: HalfSpectrumConfig,
        batch: Batch,
        src: (Buf, usize),
        dst: (Buf, usize),
    ) {
        let half = cfg.n;
        let (entries, total) = if fold {
            (half, batch.outer * half * batch.inner)
        } else {
            (half + 1, batch.outer * cfg.stored * batch.inner)
        };
        let (twiddles, twiddle_floats) = self.upload(&twiddle_table(2 * half, entries));
        self.passes.push(Pass {
            launch: Launch::HalfSpectrum {
                fold,
                cfg,
                inner: batch.inner,
                total,
                twiddles,
                twiddle_floats,
            },
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }

    /// Lowers one axis step, reading `src` (shape `shape`) and writing `dst`.
    fn lower_step(
        &mut self,
        step: &AxisStep,
        shape: &[usize],
        src: (Buf, usize),
        dst: (Buf, usize),
    ) -> Result<(), FftError> {
        let batch = Batch {
            outer: shape[..step.axis].iter().product(),
            inner: shape[step.axis + 1..].iter().product(),
        };
        let dft = DftShape::of(step);
        if self.prefers_direct(step, &dft) {
            self.direct(step, dft, batch, src, dst);
            return Ok(());
        }
        let t = Transform::of(step);
        let n = t.n;
        let source = Source {
            buf: src,
            form: t.input,
            window: step.load,
            stored: step.in_len,
            seq_len: t.input.seq_len(n),
            len: n,
            factor: None,
        };
        let sink = Sink {
            buf: dst,
            form: t.output,
            window: step.store,
            stored: step.out_len,
            seq_len: t.output.seq_len(n),
            len: n,
            factor: None,
            scale: step.scale as f32,
        };
        let convolution = convolution_for(n, self.options.primes);
        if self.fits_single(&t, convolution, batch.column()) {
            self.single(&t, convolution, batch, source, sink);
            return Ok(());
        }
        let complex_floats = |len: usize| 2 * batch.outer * len * batch.inner;
        // Too long for one cube: four-step FFTs, Bluestein's for every length
        // without a radix plan.
        match (!has_radix_plan(n)).then(|| bluestein_length(n)) {
            None => {
                // Packed real transforms fold and untangle in separate passes here.
                let source = if t.input == InputForm::HermitianPacked {
                    let folded = (self.temp(complex_floats(n)), complex_floats(n));
                    let cfg = HalfSpectrumConfig {
                        n,
                        window: step.load,
                        stored: step.in_len,
                        scale_bits: 1f32.to_bits(),
                    };
                    self.push_half_spectrum(true, cfg, batch, src, folded);
                    scratch_source(folded, n)
                } else {
                    source
                };
                if t.output == OutputForm::Untangled {
                    let spectrum = (self.temp(complex_floats(n)), complex_floats(n));
                    self.four_step(n, t.inverse, batch, source, scratch_sink(spectrum, n))?;
                    let cfg = HalfSpectrumConfig {
                        n,
                        window: step.store,
                        stored: step.out_len,
                        scale_bits: sink.scale.to_bits(),
                    };
                    self.push_half_spectrum(false, cfg, batch, spectrum, dst);
                    Ok(())
                } else {
                    self.four_step(n, t.inverse, batch, source, sink)
                }
            }
            // A long chirp-z convolution: two four-step FFTs of length m, the
            // chirp applied on the first load and the last store, the kernel's
            // spectrum on the store between them.
            Some(m) => {
                let chirp = chirp(n, t.inverse);
                let w = interleave(&chirp);
                let padded = (self.temp(complex_floats(m)), complex_floats(m));
                let mut forward_sink = scratch_sink(padded, m);
                forward_sink.factor = Some(bluestein_kernel_spectrum(&chirp, m));
                self.four_step(
                    m,
                    false,
                    batch,
                    Source {
                        factor: Some(w.clone()),
                        ..source
                    },
                    forward_sink,
                )?;
                self.four_step(
                    m,
                    true,
                    batch,
                    scratch_source(padded, m),
                    Sink {
                        factor: Some(w),
                        ..sink
                    },
                )
            }
        }
    }

    /// The plane launch for steps `first` then `second` over an array of
    /// `shape`, when they transform its last two dimensions as single-cube FFTs
    /// (lengths with a radix plan, no direct DFT) whose intermediate image fits shared
    /// memory beside the work tile.
    fn plane_config(&self, first: &AxisStep, second: &AxisStep, shape: &[usize]) -> Option<PlaneConfig> {
        let rank = shape.len();
        let among_last_two = |axis: usize| axis + 2 >= rank;
        if self.options.plane == PlaneFusion::Never
            || rank < 2
            || !among_last_two(first.axis)
            || !among_last_two(second.axis)
        {
            return None;
        }
        let rows_first = first.axis == rank - 1;
        let (t1, t2) = (Transform::of(first), Transform::of(second));
        let fft_only = |step: &AxisStep, t: &Transform| {
            t.n >= 2 && has_radix_plan(t.n) && !self.prefers_direct(step, &DftShape::of(step))
        };
        let image_forms = matches!(t1.output, OutputForm::Complex | OutputForm::Untangled)
            && matches!(t2.input, InputForm::Complex | InputForm::HermitianPacked);
        if !fft_only(first, &t1) || !fft_only(second, &t2) || !image_forms {
            return None;
        }
        // Index of an axis among the last two dimensions.
        let dim = |axis: usize| axis + 2 - rank;
        let input = [shape[rank - 2], shape[rank - 1]];
        let mut image = input;
        image[dim(first.axis)] = first.out_len;
        let mut output = image;
        output[dim(second.axis)] = second.out_len;
        let floats = |dims: [usize; 2], complex: bool| dims[0] * dims[1] * if complex { 2 } else { 1 };
        let real_input = t1.input.is_real();
        let intermediate_largest = floats(image, true) >= floats(input, !real_input)
            && floats(image, true) >= floats(output, !t2.output.is_real());
        let auto = self.options.plane == PlaneFusion::Auto;
        // The plane widens real rows, where separate launches of odd smooth
        // lengths pair them two to a complex transform ([`Self::twinned`]).
        let pairs_twins = |t: &Transform| self.twinned(t, None, 2).input != t.input;
        if auto && (!intermediate_largest || pairs_twins(&t1) || pairs_twins(&t2)) {
            return None;
        }
        let stage = |step: &AxisStep, t: &Transform, rows: bool, threads: usize| {
            let mut cfg = self.single_stage_config(t.n, None, (t.input, t.output), !rows, 1, 0);
            cfg.signals_per_cube = threads / cfg.threads_per_signal;
            cfg.inverse = t.inverse;
            cfg.load = step.load;
            cfg.store = step.store;
            cfg.scale_bits = (step.scale as f32).to_bits();
            cfg
        };
        // Both stages run on every thread of the cube: a common multiple of
        // their threads per signal, no more than the stages' signals can use.
        let (a, b) = (self.threads_for(t1.n), self.threads_for(t2.n));
        let step = a / gcd(a, b) * b;
        let busy = (a * PlaneConfig::signals(rows_first, input)).max(b * PlaneConfig::signals(!rows_first, image));
        let most = PLANE_THREADS
            .min(busy.next_multiple_of(step))
            .max(step)
            .min(self.max_threads);
        // Both stages keep their threads per signal: the cube's threads are a
        // multiple of each.
        let lay_out = |cfg: StageConfig, t: &Transform, threads: usize| {
            if self.shared_bound(t, None) {
                shared_layout(&cfg, tile_slots(t.n, t.input, None), Lanes::Own, |c| {
                    threads / c.threads_per_signal
                })
            } else {
                cfg
            }
        };
        let fewest = if auto { MIN_PLANE_THREADS.min(most) } else { step };
        (1..=most / step)
            .rev()
            .map(|k| k * step)
            .take_while(|&threads| threads >= fewest)
            .find_map(|threads| {
                let mut first_stage = stage(first, &t1, rows_first, threads);
                first_stage.store_shared = true;
                let mut second_stage = stage(second, &t2, !rows_first, threads);
                second_stage.load_shared = true;
                let plain = PlaneConfig {
                    first: first_stage.clone(),
                    second: second_stage.clone(),
                    rows_first,
                    input,
                    image,
                    output,
                };
                let modelled = PlaneConfig {
                    first: lay_out(first_stage, &t1, threads),
                    second: lay_out(second_stage, &t2, threads),
                    ..plain.clone()
                };
                // Tiles the modelled layout widens past the shared memory fall
                // back to the plain layout rather than cost the cube threads.
                [modelled, plain]
                    .into_iter()
                    .find(|cfg| cfg.shared_bytes() <= self.plane_shared_limit)
            })
    }

    fn push_plane(&mut self, cfg: PlaneConfig, images: usize, src: (Buf, usize), dst: (Buf, usize)) {
        let table = |stage: &StageConfig| {
            let len = stage.pass_len() * stage.twiddle_table_step();
            self.upload(&twiddle_table(len, len))
        };
        let twiddles = [table(&cfg.first), table(&cfg.second)];
        self.passes.push(Pass {
            launch: Launch::Plane { cfg, images, twiddles },
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }

    fn prefers_direct(&self, step: &AxisStep, dft: &DftShape) -> bool {
        match self.options.direct_dft {
            _ if step.n > MAX_DIRECT_LEN || dft.work() > MAX_MATRIX => false,
            DirectDft::Always => true,
            DirectDft::Never => false,
            DirectDft::Auto if has_radix_plan(step.n) => false,
            DirectDft::Auto => {
                let m = Convolution::pass_len(convolution_for(step.n, self.options.primes), step.n) as f64;
                (dft.work() as f64) <= DIRECT_RATIO * m * m.log2()
            }
        }
    }

    /// One launch: the DFT matrix between the stored windows times every signal.
    fn direct(&mut self, step: &AxisStep, dft: DftShape, batch: Batch, src: (Buf, usize), dst: (Buf, usize)) {
        let Batch { outer, inner } = batch;
        let strides = |parts: usize, len: usize| [parts * len * inner, parts, parts * inner];
        let (matrix, _) = self.upload(&dft.matrix(step));
        self.passes.push(Pass {
            launch: Launch::Dft {
                cfg: DftConfig::for_problem(dft.rows, dft.in_parts, dft.out_parts, batch.column()),
                shape: dft,
                matrix,
                signals: outer * inner,
                inner,
                input: strides(dft.in_parts, step.in_len),
                output: strides(dft.out_parts, step.out_len),
            },
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }

    /// One launch: every signal whole in one cube.
    fn single(&mut self, t: &Transform, convolution: Option<Convolution>, batch: Batch, src: Source, dst: Sink) {
        let column = batch.column();
        let signals = if column { batch.inner } else { batch.outer };
        let t = &self.twinned(t, convolution, signals);
        let slots = signals.div_ceil(t.input.signals_per_slot());
        let whole_row = match convolution {
            None if column => self.whole_row_column_stage(t, slots),
            _ => None,
        };
        let whole_rows = whole_row.is_some();
        // Only rows split their first pass's butterflies: column tiles read
        // global memory directly, where a split multiplies the loads.
        let butterfly_pairs = if column { 0 } else { self.butterfly_pairs() };
        let mut cfg = whole_row.unwrap_or_else(|| {
            self.single_stage_config(t.n, convolution, (t.input, t.output), column, slots, butterfly_pairs)
        });
        cfg.inverse = t.inverse;
        cfg.load = src.window;
        cfg.store = dst.window;
        cfg.scale_bits = dst.scale.to_bits();
        if !whole_rows && self.shared_bound(t, convolution) {
            let tile = tile_slots(t.n, t.input, convolution);
            cfg = shared_layout(&cfg, tile, Lanes::PowerOfTwo, |c| {
                self.signals_per_cube(c, column, slots)
            });
        }
        let layout = if column {
            StageLayout {
                na: 1,
                nb: batch.outer,
                nc: batch.inner,
                input: [0, src.stored * batch.inner, 1, batch.inner],
                output: [0, dst.stored * batch.inner, 1, batch.inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: 1,
                nc: batch.outer,
                input: [0, 0, src.stored, 1],
                output: [0, 0, dst.stored, 1],
            }
        };
        let factors = convolution_factors(t.n, t.inverse, convolution);
        self.push_stage(cfg, layout, src.buf, dst.buf, &factors);
    }

    /// `t` with two signals to a complex transform ([`OddReal::Twins`]) where
    /// it widens real signals, the stage's innermost batch dimension holds
    /// `signals ≥ 2` of them, and the transform runs as a convolution or
    /// through radices up to 7. Lengths with a prime radix above 7, whose
    /// butterflies already bind the registers, ran slower as twins and widen
    /// (benches/results/2026-11-25_odd_real_twins_h100.md).
    fn twinned(&self, t: &Transform, convolution: Option<Convolution>, signals: usize) -> Transform {
        let forms = match (t.input, t.output) {
            (InputForm::Real, OutputForm::Complex) => Some((InputForm::RealTwins, OutputForm::TwinSpectra)),
            (InputForm::Hermitian, OutputForm::RealPart) => Some((InputForm::HermitianTwins, OutputForm::TwinReals)),
            _ => None,
        };
        match forms {
            Some((input, output))
                if self.options.odd_real == OddReal::Twins
                    && signals >= 2
                    && (convolution.is_some() || is_smooth(t.n)) =>
            {
                Transform { input, output, ..*t }
            }
            _ => *t,
        }
    }

    /// Two launches for a transform of a length `len` with a radix plan, too
    /// long for one cube: `len = n1 · n2`, columns of length n1 (twiddled),
    /// then rows of length n2 whose outputs land transposed (k = k1 + n1·k2).
    fn four_step(&mut self, len: usize, inverse: bool, batch: Batch, src: Source, dst: Sink) -> Result<(), FftError> {
        // Divisors of a length with a radix plan have one. Columns of
        // COLUMN_SIGNALS signals coalesce best; the longest lengths settle for narrower tiles.
        let fits = |n: usize, signals: usize| self.fits(n, n, signals);
        let (n1, n2) = four_step_split(len, |n1| fits(n1, COLUMN_SIGNALS), |n2| fits(n2, 1))
            .or_else(|| four_step_split(len, |n1| fits(n1, 1), |n2| fits(n2, 1)))
            .ok_or_else(|| FftError::Unsupported(format!("length {len} is too long for a two-level FFT")))?;
        let Batch { outer, inner } = batch;
        let column = batch.column();
        let scratch = (self.temp(2 * outer * len * inner), 2 * outer * len * inner);
        let fold_dim = if column { 1 } else { 2 };

        // Step A: columns over n1, signals (outer, n2, inner).
        let mut cfg = self.single_stage_config(
            n1,
            None,
            (src.form, OutputForm::Complex),
            true,
            if column { inner } else { n2 },
            0,
        );
        cfg.inverse = inverse;
        cfg.load = src.window;
        cfg.load_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n2,
            seq_len: src.seq_len,
            len: src.len,
        });
        cfg.post_twiddle = Some(PostTwiddle {
            dim: fold_dim,
            total: len,
            fine_len: n2,
        });
        cfg.load_factor = src.factor.as_ref().map(|_| 0);
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n2,
                nc: inner,
                input: [src.stored * inner, 0, 1, inner],
                output: [len * inner, inner, 1, n2 * inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n2,
                input: [0, src.stored, 0, 1],
                output: [0, len, 1, n2],
            }
        };
        self.push_stage(cfg, layout, src.buf, scratch, src.factor.as_deref().unwrap_or_default());

        // Step B: rows over n2, signals (outer, k1, inner), transposed store.
        let mut cfg = self.single_stage_config(
            n2,
            None,
            (InputForm::Complex, dst.form),
            column,
            if column { inner } else { n1 },
            0,
        );
        cfg.store_signals_fastest = true;
        cfg.signals_per_cube = cfg
            .signals_per_cube
            .max(COLUMN_SIGNALS.min(n1))
            .min(self.shared_limit / (8 * cfg.smem_stride))
            .min(self.max_threads / cfg.threads_per_signal)
            .max(1);
        cfg.inverse = inverse;
        cfg.store = dst.window;
        cfg.store_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n1,
            seq_len: dst.seq_len,
            len: dst.len,
        });
        cfg.scale_bits = dst.scale.to_bits();
        cfg.store_factor = dst.factor.as_ref().map(|_| 0);
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n1,
                nc: inner,
                input: [len * inner, n2 * inner, 1, inner],
                output: [dst.stored * inner, 0, 1, inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n1,
                input: [0, len, n2, 1],
                output: [0, dst.stored, 0, 1],
            }
        };
        self.push_stage(cfg, layout, scratch, dst.buf, dst.factor.as_deref().unwrap_or_default());
        Ok(())
    }
}

fn cube_count(cubes: usize) -> CubeCount {
    const MAX_X: usize = 65535;
    if cubes <= MAX_X {
        CubeCount::Static(cubes as u32, 1, 1)
    } else {
        CubeCount::Static(MAX_X as u32, cubes.div_ceil(MAX_X) as u32, 1)
    }
}

impl<R: Runtime> DeviceFft<R> {
    fn new(client: ComputeClient<R>, plan: FftPlan, options: DeviceOptions) -> Result<Self, FftError> {
        if let Some(r) = options.max_radix.filter(|&r| r < 2 || !r.is_power_of_two()) {
            return Err(FftError::Invalid(format!("max_radix {r} is not a power of two ≥ 2")));
        }
        if options.convolution_row_threads == Some(0) {
            return Err(FftError::Invalid("convolution_row_threads must be at least 1".into()));
        }
        if let Some(bytes) = options.shared_limit.filter(|&b| b < PORTABLE_SHARED) {
            return Err(FftError::Invalid(format!(
                "shared_limit {bytes} is below the {PORTABLE_SHARED} bytes every backend gives a cube"
            )));
        }
        let props = client.properties();
        let shared_limit = props
            .hardware
            .max_shared_memory_size
            .min(options.shared_limit.unwrap_or(SHARED_LIMIT));
        let max_threads = (props.hardware.max_units_per_cube as usize).min(1024);
        let mut lowering = Lowering {
            client: &client,
            passes: Vec::new(),
            temps: Vec::new(),
            shared_limit,
            plane_shared_limit: props.hardware.max_shared_memory_size.min(PLANE_SHARED_LIMIT),
            max_threads,
            device_shared: props.hardware.max_shared_memory_size,
            async_copies: props.features.copy_async,
            multiprocessors: props.hardware.num_streaming_multiprocessors.map(|n| n as usize),
            options,
        };
        let mut shape = plan.input_shape().to_vec();
        let steps = plan.steps();
        let mut src = (Buf::Input, plan.input_floats());
        let mut i = 0;
        while i < steps.len() {
            let plane = steps
                .get(i + 1)
                .and_then(|next| lowering.plane_config(&steps[i], next, &shape));
            let taken = if plane.is_some() { 2 } else { 1 };
            let mut out_shape = shape.clone();
            for step in &steps[i..i + taken] {
                out_shape[step.axis] = step.out_len;
            }
            let dst = if i + taken == steps.len() {
                (Buf::Output, plan.output_floats())
            } else {
                let floats = 2 * out_shape.iter().product::<usize>();
                (lowering.temp(floats), floats)
            };
            match plane {
                Some(cfg) => lowering.push_plane(cfg, shape[..shape.len() - 2].iter().product(), src, dst),
                None => lowering.lower_step(&steps[i], &shape, src, dst)?,
            }
            src = dst;
            shape = out_shape;
            i += taken;
        }
        let Lowering { passes, temps, .. } = lowering;
        Ok(DeviceFft {
            client,
            plan,
            options,
            passes,
            temps,
            measurements: Vec::new(),
        })
    }

    pub(super) fn with_measurements(mut self, measurements: Vec<Measurement>) -> Self {
        self.measurements = measurements;
        self
    }

    pub fn plan(&self) -> &FftPlan {
        &self.plan
    }

    /// The lowering choices this plan was built with.
    pub fn options(&self) -> DeviceOptions {
        self.options
    }

    /// The candidates timed to choose this plan, fastest or not
    /// ([`FftPlan::on_device_measured`]); empty where none were.
    pub fn measurements(&self) -> &[Measurement] {
        &self.measurements
    }

    /// Number of kernel launches one execution makes.
    pub fn launches(&self) -> usize {
        self.passes.len()
    }

    /// The configurations of the stage launches, in launch order.
    fn stage_configs(&self) -> impl Iterator<Item = &StageConfig> {
        self.passes.iter().filter_map(|pass| match &pass.launch {
            Launch::Stage { cfg, .. } => Some(cfg),
            _ => None,
        })
    }

    /// Signals each stage launch's cube transforms side by side, in launch order.
    pub fn stage_tiles(&self) -> Vec<usize> {
        self.stage_configs().map(|cfg| cfg.signals_per_cube).collect()
    }

    /// Threads each stage launch gives one signal, in launch order.
    pub fn stage_threads(&self) -> Vec<usize> {
        self.stage_configs().map(|cfg| cfg.threads_per_signal).collect()
    }

    /// The radices of each stage launch's passes, in launch order.
    pub fn stage_radices(&self) -> Vec<Vec<usize>> {
        self.stage_configs().map(|cfg| cfg.radices.clone()).collect()
    }

    /// Number of plane launches (two axes in one kernel) one execution makes.
    pub fn plane_launches(&self) -> usize {
        self.passes
            .iter()
            .filter(|pass| matches!(pass.launch, Launch::Plane { .. }))
            .count()
    }

    /// Threads of each plane launch's cubes, in launch order.
    pub fn plane_threads(&self) -> Vec<usize> {
        self.passes
            .iter()
            .filter_map(|pass| match &pass.launch {
                Launch::Plane { cfg, .. } => Some(cfg.threads()),
                _ => None,
            })
            .collect()
    }

    /// Number of stage launches that transform two real signals per complex
    /// transform ([`OddReal::Twins`]).
    pub fn twin_launches(&self) -> usize {
        self.stage_configs().filter(|cfg| cfg.input.is_twin()).count()
    }

    /// Number of launches that run a prime length through Rader's algorithm.
    pub fn rader_launches(&self) -> usize {
        self.stage_configs()
            .filter(|cfg| cfg.convolution == Some(Convolution::Rader))
            .count()
    }

    /// Number of stage launches with a contiguous axis's stride compiled in
    /// ([`UnitStrides::Compiled`]).
    pub fn unit_stride_launches(&self) -> usize {
        self.stage_configs()
            .filter(|cfg| cfg.unit_input_axis || cfg.unit_output_axis)
            .count()
    }

    /// Number of stage launches whose tiles take their coordinates without a
    /// runtime division (one row of tiles; see `stage::coordinates_pay`).
    pub fn one_row_launches(&self) -> usize {
        self.stage_configs().filter(|cfg| cfg.one_tile_row).count()
    }

    /// Number of stage launches whose tile load issues all its rounds' loads
    /// before placing any value (see `stage::tile_loads_ahead`).
    pub fn loads_ahead_launches(&self) -> usize {
        self.stage_configs()
            .filter(|cfg| cfg.prefetch.is_none() && !loads_directly(cfg) && tile_loads_ahead(cfg))
            .count()
    }

    /// Number of stage launches whose cubes stay resident and fill their next
    /// tile while transforming the current one ([`TilePrefetch`]).
    pub fn resident_launches(&self) -> usize {
        self.stage_configs().filter(|cfg| cfg.prefetch.is_some()).count()
    }

    /// Number of stage launches that untangle a real transform's bins in the
    /// last pass's registers (see `untangles_in_registers` in `stage.rs`):
    /// the kernel's own test, an untangling stage whose last pass stores directly.
    pub fn register_untangling_launches(&self) -> usize {
        self.stage_configs()
            .filter(|cfg| cfg.output == OutputForm::Untangled && stores_directly(cfg))
            .count()
    }

    /// Runs the transform. `input` holds `plan().input_floats()` f32 values
    /// (at least `plan().input_extent()`), `output` room for `plan().output_floats()`.
    pub fn execute(&self, input: &Handle, output: &Handle) -> Result<(), FftError> {
        let check = |h: &Handle, floats: usize, what: &str| {
            let bytes = h.size_in_used() as usize;
            if bytes < floats * 4 {
                Err(FftError::Buffer(format!(
                    "{what} holds {bytes} bytes, the plan needs {}",
                    floats * 4
                )))
            } else {
                Ok(())
            }
        };
        check(input, self.plan.input_extent(), "input")?;
        check(output, self.plan.output_floats(), "output")?;
        let temps: Vec<Handle> = self.temps.iter().map(|&f| self.client.empty(f * 4)).collect();
        let resolve = |b: Buf| -> Handle {
            match b {
                Buf::Input => input.clone(),
                Buf::Output => output.clone(),
                Buf::Temp(i, _) => temps[i].clone(),
            }
        };
        for pass in &self.passes {
            let src = resolve(pass.src);
            let dst = resolve(pass.dst);
            self.launch(pass, src, dst);
        }
        Ok(())
    }

    fn launch(&self, pass: &Pass, src: Handle, dst: Handle) {
        let client = &self.client;
        let array = |h: Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h, len) };
        // An input read as a crop may end before the plan's dense size.
        let src_floats = pass.src_floats.min(src.size_in_used() as usize / 4);
        // SAFETY: the kernels launch without bounds checks: every index they
        // form stays inside the arrays sized here, and their stores are
        // guarded by their windows. The oracle checks found no access out of
        // bounds under cubecl's `check_mode = "validate"` on CUDA
        // (benches/README.md, "Validating the unchecked kernels").
        unsafe {
            match &pass.launch {
                Launch::Stage {
                    cfg,
                    layout,
                    twiddles,
                    twiddle_floats,
                    post,
                    factors,
                    resident_cubes,
                } => {
                    let tiles = layout.na * layout.nb * layout.nc.div_ceil(cfg.signals_per_tile());
                    // A buffer that starts inside a pair (a view at an odd float offset) reads floats one by one.
                    let mut cfg = cfg.clone();
                    cfg.vector_input &= pair_aligned(&src);
                    cfg.vector_output &= pair_aligned(&dst);
                    // Staging copies whole pairs: without them a cube takes one tile.
                    let resident = resident_cubes.filter(|_| cfg.vector_input);
                    if !cfg.vector_input {
                        cfg.prefetch = None;
                    }
                    if cfg.prefetch == Some(TileFill::AsyncCopies { pairs: 2 }) && !quad_aligned(&src) {
                        cfg.prefetch = Some(TileFill::AsyncCopies { pairs: 1 });
                    }
                    let cubes = resident.map_or(tiles, |cubes| cubes.clamp(1, tiles));
                    let (coarse, coarse_len, fine, fine_len) = match post {
                        Some((c, cl, f, fl)) => (c.clone(), *cl, f.clone(), *fl),
                        None => (twiddles.clone(), *twiddle_floats, twiddles.clone(), *twiddle_floats),
                    };
                    fft_stage_kernel::launch_unchecked::<f32, R>(
                        client,
                        cube_count(cubes),
                        CubeDim::new_1d(cfg.threads_per_cube() as u32),
                        vector_size(cfg.vector_input),
                        vector_size(cfg.vector_output),
                        array(src, src_floats),
                        array(dst, pass.dst_floats),
                        array(twiddles.clone(), *twiddle_floats),
                        array(coarse, coarse_len),
                        array(fine, fine_len),
                        array(factors.0.clone(), factors.1),
                        layout.nb,
                        layout.nc,
                        tiles,
                        layout.input[0],
                        layout.input[1],
                        layout.input[2],
                        layout.input[3],
                        layout.output[0],
                        layout.output[1],
                        layout.output[2],
                        layout.output[3],
                        cfg,
                    );
                }
                Launch::Dft {
                    cfg,
                    shape,
                    matrix,
                    signals,
                    inner,
                    input,
                    output,
                } => {
                    dft_kernel::launch_unchecked::<f32, R>(
                        client,
                        cube_count(cfg.cubes(shape.rows, *signals)),
                        CubeDim::new_1d(cfg.threads() as u32),
                        array(src, src_floats),
                        array(dst, pass.dst_floats),
                        array(matrix.clone(), shape.rows * shape.terms),
                        shape.rows,
                        shape.terms,
                        *signals,
                        *inner,
                        input[0],
                        input[1],
                        input[2],
                        output[0],
                        output[1],
                        output[2],
                        *cfg,
                    );
                }
                Launch::Plane { cfg, images, twiddles } => {
                    fft_plane_kernel::launch_unchecked::<f32, R>(
                        client,
                        cube_count(*images),
                        CubeDim::new_1d(cfg.threads() as u32),
                        vector_size(cfg.first.vector_input),
                        vector_size(cfg.second.vector_output),
                        array(src, src_floats),
                        array(dst, pass.dst_floats),
                        array(twiddles[0].0.clone(), twiddles[0].1),
                        array(twiddles[1].0.clone(), twiddles[1].1),
                        *images,
                        cfg.clone(),
                    );
                }
                Launch::HalfSpectrum {
                    fold,
                    cfg,
                    inner,
                    total,
                    twiddles,
                    twiddle_floats,
                } => {
                    let launch = if *fold {
                        fold_kernel::launch_unchecked::<f32, R>
                    } else {
                        untangle_kernel::launch_unchecked::<f32, R>
                    };
                    launch(
                        client,
                        cube_count(total.div_ceil(ELEMWISE_THREADS)),
                        CubeDim::new_1d(ELEMWISE_THREADS as u32),
                        array(src, src_floats),
                        array(dst, pass.dst_floats),
                        array(twiddles.clone(), *twiddle_floats),
                        *inner,
                        *total,
                        *cfg,
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident stages on more than 8 warps move to a plan of as many passes
    /// on at most 8 where it takes at most two extra rounds: 27 = 3·9 as one
    /// radix where three 3s would not fit three passes on 256 threads, and a
    /// cube of two signals gets half the threads each.
    #[test]
    fn resident_plans_move_to_eight_warps_within_two_extra_rounds() {
        let plan = |len, signals| plan_within(len, 3, signals, HELD_TWIDDLE_THREADS);
        assert_eq!(plan(6912, 1), Some((vec![27, 16, 16], 256)));
        assert_eq!(plan(6144, 1), Some((vec![24, 16, 16], 256)));
        assert_eq!(plan(6720, 1), Some((vec![28, 16, 15], 240)));
        assert_eq!(plan(1536, 2), Some((vec![16, 16, 6], 128)));
        // Three passes of two rounds each (20·20·20 on 200 threads), or a
        // prime factor above 7: no plan.
        assert_eq!(plan(8000, 1), None);
        assert_eq!(plan(11 * 512, 1), None);
        assert_eq!(plan(6144, 512), None);
        for (len, signals) in [(6912, 1), (6144, 1), (6720, 1), (1536, 2)] {
            let (radices, threads) = plan(len, signals).unwrap();
            assert_eq!(radices.iter().product::<usize>(), len);
            assert!(threads * signals <= HELD_TWIDDLE_THREADS);
            assert!(radices.iter().all(|&r| r <= RESIDENT_COMPOSITE));
        }
    }

    /// A cube of more than 12 warps whose plan loops moves to 12 when no
    /// plan fits 8; one whose every pass is one round stays.
    #[test]
    fn resident_cubes_past_twelve_warps_move_only_where_their_plan_loops() {
        let fewer = |len, radices: &[usize], threads| plan_on_fewer_warps(len, radices, threads, 1);
        assert_eq!(fewer(6912, &[12, 24, 24], 288), Some((vec![27, 16, 16], 256)));
        assert_eq!(fewer(10752, &[16, 28, 24], 448), Some((vec![32, 21, 16], 336)));
        assert_eq!(fewer(10368, &[18, 24, 24], 432), Some((vec![32, 18, 18], 324)));
        assert_eq!(fewer(7776, &[18, 18, 24], 432), None);
        assert_eq!(fewer(7168, &[16, 16, 28], 256), None);
        assert_eq!(fewer(12288, &[12, 32, 32], 384), None);
    }

    /// Rader's table places input `k = g^-s` in slot `s` and takes output
    /// `k = g^t` from the convolution's entry `t` (`x[0]` and `Σ a` in the
    /// two slots after), as integer bit patterns the kernel reinterprets.
    #[test]
    fn rader_factors_hold_the_permutations_as_integer_slots() {
        for p in [71usize, 211, 421, 4201] {
            let m = p - 1;
            let g = primitive_root(p);
            let power = |e: usize| (0..e).fold(1usize, |acc, _| acc * g % p);
            let factors = rader_factors(p, false);
            assert_eq!(factors.len(), 2 * p + 3 * m);
            let slot = |at: usize| factors[at].to_bits() as usize;
            for s in 0..m {
                let source = slot(2 * p + 2 * m + s);
                assert_eq!(slot(2 * source), s, "p = {p}: slot {s} gathers input {source}");
            }
            let (mut inputs, mut outputs) = (vec![false; m + 1], vec![false; m + 2]);
            for k in 0..p {
                let (input, output) = (slot(2 * k), slot(2 * k + 1));
                if k == 0 {
                    assert_eq!((input, output), (m, m + 1));
                } else {
                    assert_eq!(power((m - input) % m), k, "p = {p}: input {k} in slot {input}");
                    assert_eq!(power(output), k, "p = {p}: output {k} from entry {output}");
                }
                assert!(
                    !std::mem::replace(&mut inputs[input], true),
                    "p = {p}: slot {input} twice"
                );
                assert!(
                    !std::mem::replace(&mut outputs[output], true),
                    "p = {p}: entry {output} twice"
                );
            }
        }
    }
}

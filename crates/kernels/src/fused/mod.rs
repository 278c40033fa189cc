//! The fused spectral convolution along one axis (TurboFNO's FFT→CGEMM→iFFT):
//! `y[b, o, ·, e] = inverse( Σ_i forward(x[b, i, ·, e])[k] · W[i, o, k, e] )`
//! in one kernel, the spectrum never leaving the chip.
//!
//! A cube owns a tile of batches and output channels at one inner position `e`
//! (the retained modes of the axes after this one, each with its own weights)
//! and every retained mode `k` of the axis. Its transforms are the Stockham
//! passes of [`crate::fft`]'s stage kernel (any length: mixed radix, Rader or
//! Bluestein, real or complex input) on tiles in shared memory. Two
//! schedules ([`Schedule`], `kernel.rs`) order the contraction:
//! - **streamed:** the input channels a chunk at a time: the chunk's pencils
//!   of every batch of the tile transformed, their retained modes multiplied
//!   by the weights into accumulators of (output channel, mode) pairs in
//!   registers; an epilogue stages the accumulated modes of a few output
//!   channels at a time in shared memory for the inverse;
//! - **resident:** every input channel's modes of the batch tile transformed
//!   into shared memory first, then contracted there in place a round of
//!   modes at a time (each weight loaded once a cube, used for every batch of
//!   the tile), then the inverse transforms read them.
//!
//! The inverse zero-pads the modes through its stage's load window and writes
//! the output once.
//!
//! The same kernel runs the input gradient (the adjoint transforms, `conj(W)ᵀ`
//! and the Hermitian bin weights as a per-mode scale) and can write the forward
//! spectrum it computes, which the weight gradient needs.

mod kernel;

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::cgemm::{ModeBias, Strides};
use crate::fft::factor::gcd;
use crate::fft::stage::{StageConfig, StageLayout};
use crate::fft::{shared_stage, shared_stage_tables, AxisStep, FftError, FftPlan};
use crate::pairs::{pair_aligned, vector_size};
use crate::precision::Native;
use kernel::fused_kernel;

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

/// How a cube orders its contraction (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Input channels a chunk at a time, accumulators in registers.
    Streamed,
    /// Every input channel's modes in shared memory (`cin` of them), contracted
    /// in place; each thread sums `group` output channels of one mode.
    Resident { cin: usize, group: usize },
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
    pub schedule: Schedule,
    pub conj_weight: bool,
    pub scaled: bool,
    pub biased: bool,
    pub write_spectrum: bool,
    /// The weight read a complex value per 8-byte load (cleared at launch for
    /// a weight that does not start on 8 bytes).
    pub vector_weight: bool,
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

    /// Floats of the modes buffer: streamed, the chunk's spectra for every
    /// batch of the tile in the k-loop and one inverse tile's accumulated modes
    /// in the epilogue; resident, every row of every batch of the tile.
    fn modes_len(&self) -> usize {
        let rows = match self.schedule {
            Schedule::Streamed => (self.batch_tile * self.chunk()).max(self.out_signals()),
            Schedule::Resident { .. } => self.batch_tile * self.resident_rows(),
        };
        2 * self.modes * rows
    }

    /// Rows of modes a batch holds in the resident schedule: its input
    /// channels, then (in place) its output tile, read by whole inverse tiles.
    fn resident_rows(&self) -> usize {
        let cin = match self.schedule {
            Schedule::Resident { cin, .. } => cin,
            Schedule::Streamed => 0,
        };
        cin.max(self.out_tile.next_multiple_of(self.out_signals()))
    }

    /// Modes a round of the resident contraction covers: a lane each, for
    /// every group of output channels.
    fn resident_modes_per_round(&self) -> usize {
        let group = match self.schedule {
            Schedule::Resident { group, .. } => group,
            Schedule::Streamed => 1,
        };
        (self.threads() / self.out_tile.div_ceil(group)).clamp(1, self.modes)
    }

    /// Input channels whose weights a resident thread loads at once (and the
    /// next block's in flight while it multiplies these): the most of 4, 2, 1
    /// that divides the channels and keeps the block within
    /// [`RESIDENT_WEIGHTS`] complex values a thread.
    fn resident_depth(&self) -> usize {
        match self.schedule {
            Schedule::Resident { cin, group } => [4, 2, 1]
                .into_iter()
                .find(|d| cin % d == 0 && d * group <= RESIDENT_WEIGHTS)
                .unwrap_or(1),
            Schedule::Streamed => 1,
        }
    }

    /// Shared memory the cube uses, in bytes.
    pub fn shared_bytes(&self) -> usize {
        4 * (2 * self.work_len() + self.modes_len())
    }

    /// (output channel, mode) pairs of the streamed contraction per thread.
    pub fn contraction_pairs(&self) -> usize {
        (self.out_tile * self.modes).div_ceil(self.threads())
    }

    /// Contraction accumulators per thread (complex).
    pub fn accumulators(&self) -> usize {
        match self.schedule {
            Schedule::Streamed => self.contraction_pairs() * self.batch_tile,
            Schedule::Resident { group, .. } => group * self.batch_tile,
        }
    }

    /// Whether a cube of these tiles fits a device's cubes, and the
    /// accumulators a thread may hold (and, resident, every group of output
    /// channels has a thread).
    pub fn fits(&self, limits: CubeLimits) -> bool {
        let groups_fit = match self.schedule {
            Schedule::Streamed => true,
            Schedule::Resident { group, .. } => group >= 1 && self.out_tile.div_ceil(group) <= self.threads(),
        };
        groups_fit
            && self.shared_bytes() <= limits.shared_bytes
            && self.threads() <= limits.threads
            && self.accumulators() <= MAX_ACCUMULATORS
    }
}

/// What a device's cubes may take: bytes of shared memory and threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubeLimits {
    pub shared_bytes: usize,
    pub threads: usize,
}

impl CubeLimits {
    /// What every backend we target gives.
    pub const PORTABLE: CubeLimits = CubeLimits {
        shared_bytes: 48 * 1024,
        threads: 1024,
    };

    /// `client`'s device's (CUDA grants far more shared memory than 48 KiB).
    pub fn of<R: Runtime>(client: &ComputeClient<R>) -> Self {
        let hardware = &client.properties().hardware;
        CubeLimits {
            shared_bytes: hardware.max_shared_memory_size,
            threads: hardware.max_units_per_cube as usize,
        }
    }
}

/// Threads a cube aims for.
const THREADS: usize = 256;
/// Signals of a stage's tile at most (short transforms have one thread each).
const MAX_TILE_SIGNALS: usize = 32;
/// Output channels a thread contracts in the resident schedule, at most.
const RESIDENT_GROUP: usize = 4;
/// Complex weights a resident thread loads per block of input channels, at most.
const RESIDENT_WEIGHTS: usize = 16;
/// Threads of a resident cube, about.
const RESIDENT_THREADS: usize = 512;
/// Output channels a resident cube owns at most.
const RESIDENT_OUT_TILE: usize = 64;
/// Contraction accumulators a thread may hold (complex values).
const MAX_ACCUMULATORS: usize = 32;
/// Cubes wanted in flight (one per multiprocessor of a large GPU): tiles
/// shrink until the grid has this many.
const MIN_CUBES: usize = 132;
/// Cubes a resident grid keeps at least: halving the batch tile further
/// re-reads the weights, which cost more than the idle multiprocessors
/// (benches/results/2026-11-29_fused_contraction_h200.md).
const MIN_RESIDENT_CUBES: usize = 96;

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
        if !smallest.fits(CubeLimits::PORTABLE) {
            return Err(FftError::Unsupported(format!(
                "fused transforms of lengths {} and {} need {} threads and {} bytes of shared memory per cube (at most {}, {})",
                fwd.n,
                inv.n,
                smallest.threads(),
                smallest.shared_bytes(),
                CubeLimits::PORTABLE.threads,
                CubeLimits::PORTABLE.shared_bytes
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
    fn stages_for_cube(&self, target_threads: usize) -> (StageConfig, StageConfig) {
        let (mut forward, mut inverse) = self.stages.clone();
        let (tf, ti) = (forward.threads_per_signal, inverse.threads_per_signal);
        let common = tf / gcd(tf, ti) * ti;
        // Whole multiples of both stages' threads, at most the target, tiles of
        // at most MAX_TILE_SIGNALS and no more input channels than there are.
        let most_signals = MAX_TILE_SIGNALS.min(self.cin.next_power_of_two());
        let multiple = (1..=(target_threads / common).max(1))
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
        let (forward, inverse) = self.stages_for_cube(THREADS);
        let mut cfg = FusedConfig {
            forward,
            inverse,
            modes: self.modes(),
            batch_tile: self.batch.next_power_of_two().min(4),
            // Every output channel in one tile where possible: each tile
            // transforms the whole input again.
            out_tile: self.cout.next_power_of_two().min(64),
            schedule: Schedule::Streamed,
            conj_weight: self.conj_weight,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            write_spectrum,
            vector_weight: true,
        };
        // Shrink the tiles until they fit, the batch tile first, then for
        // parallelism the output tile only down to 16 (smaller ones repeat the
        // forward transforms).
        loop {
            let (over, few) = (!cfg.fits(CubeLimits::PORTABLE), self.cubes(&cfg) < MIN_CUBES);
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

    /// The schedule and tiles a launch takes on a device whose cubes have
    /// `limits`: resident where it fits (measured faster
    /// on every anchor it fits: benches/results/2026-11-29_fused_contraction_h200.md),
    /// streamed otherwise.
    pub fn chosen_config(&self, write_spectrum: bool, limits: CubeLimits) -> FusedConfig {
        self.resident_config(write_spectrum, limits)
            .unwrap_or_else(|| self.config(write_spectrum))
    }

    /// The resident schedule's tiles within a device's `limits`, on cubes of
    /// about 512 threads (fewer where the device allows fewer), if any fit: up
    /// to 64 output channels and 8 batches a cube, shrunk until they fit
    /// (batches first), then for parallelism the batch tile and then the
    /// output tile down to 32 (the sweep's best on the anchors, same file).
    pub fn resident_config(&self, write_spectrum: bool, limits: CubeLimits) -> Option<FusedConfig> {
        // The stages and flags are the same for every tile tried: built once.
        let base = self.resident_base(write_spectrum, RESIDENT_THREADS.min(limits.threads));
        let tiles = |batch_tile, out_tile| self.with_resident_tiles(&base, batch_tile, out_tile);
        let mut cfg = tiles(self.batch.next_power_of_two().min(8), self.cout.min(RESIDENT_OUT_TILE));
        while !cfg.fits(limits) {
            if cfg.batch_tile > 1 {
                cfg = tiles(cfg.batch_tile / 2, cfg.out_tile);
            } else if cfg.out_tile > 1 {
                cfg = tiles(1, cfg.out_tile.div_ceil(2));
            } else {
                return None;
            }
        }
        while self.cubes(&cfg) < MIN_RESIDENT_CUBES {
            if cfg.batch_tile > 1 {
                cfg = tiles(cfg.batch_tile / 2, cfg.out_tile);
            } else if cfg.out_tile > 32 {
                cfg = tiles(1, cfg.out_tile / 2);
            } else {
                break;
            }
        }
        Some(cfg)
    }

    /// The resident schedule on cubes of about `threads` threads with the given
    /// tiles; each thread contracts enough output channels (up to
    /// [`RESIDENT_GROUP`]) for the cube's threads to cover the tile's modes.
    /// It may not fit the device ([`FusedConfig::fits`]).
    pub fn resident_tiles(
        &self,
        write_spectrum: bool,
        threads: usize,
        batch_tile: usize,
        out_tile: usize,
    ) -> FusedConfig {
        self.with_resident_tiles(&self.resident_base(write_spectrum, threads), batch_tile, out_tile)
    }

    /// This problem's flags with the stages of a cube of about `threads` threads.
    fn resident_base(&self, write_spectrum: bool, threads: usize) -> FusedConfig {
        let (forward, inverse) = self.stages_for_cube(threads);
        FusedConfig {
            forward,
            inverse,
            ..self.config(write_spectrum)
        }
    }

    /// `base` (stages and flags) resident with the given tiles (see [`Self::resident_tiles`]).
    fn with_resident_tiles(&self, base: &FusedConfig, batch_tile: usize, out_tile: usize) -> FusedConfig {
        let pairs = out_tile * self.modes();
        let group = pairs
            .div_ceil(base.threads())
            .next_power_of_two()
            .clamp(1, RESIDENT_GROUP.min(out_tile));
        FusedConfig {
            batch_tile,
            out_tile,
            schedule: Schedule::Resident { cin: self.cin, group },
            ..base.clone()
        }
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
        self.dispatch(
            self.chosen_config(buffers.spectrum.is_some(), CubeLimits::of(client)),
            client,
            tables,
            buffers,
        )
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
        let (forward, inverse) = self.stages_for_cube(cfg.threads());
        let own = FusedConfig {
            forward,
            inverse,
            ..self.config(buffers.spectrum.is_some())
        };
        let tiles = |c: &FusedConfig| FusedConfig {
            batch_tile: 0,
            out_tile: 0,
            schedule: Schedule::Streamed,
            ..c.clone()
        };
        assert_eq!(tiles(&cfg), tiles(&own), "the configuration belongs to another problem");
        if let Schedule::Resident { cin, .. } = cfg.schedule {
            assert_eq!(cin, self.cin, "the configuration belongs to another problem");
        }
        assert!(cfg.fits(CubeLimits::of(client)), "tiles that do not fit: {cfg:?}");
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
        cfg.vector_weight &= pair_aligned(weight);
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
                vector_size(cfg.vector_weight),
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

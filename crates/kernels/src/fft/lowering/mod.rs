//! Planning as data: an [`FftPlan`] with a device's limits and the caller's
//! [`DeviceOptions`] becomes a [`Recipe`], the launches one execution makes
//! with their kernel configurations and host tables. No device client here:
//! `super::device` uploads the tables and launches the recipe, and unit tests
//! check recipes on the CPU (`tests.rs` here for crate-private rules,
//! `tests/fft/planner.rs` through the public API).
//!
//! One file per way an axis runs: whole signals in one cube (`single.rs`;
//! resident cubes in `resident.rs`), a four-step FFT for longer ones
//! (`four_step.rs`), the last two axes in one launch (`plane.rs`), a direct
//! DFT (`direct.rs`); `tables.rs` builds the twiddle and convolution tables.

mod direct;
mod four_step;
mod plane;
mod resident;
mod single;
mod tables;
mod tensor_core;
#[cfg(test)]
mod tests;

pub use super::algorithm::direct_dft::{DftConfig, DftShape};
pub use super::algorithm::tensor_core::{MmaHalf, TensorCoreConfig};
pub use super::plane::PlaneConfig;
pub use super::real::HalfSpectrumConfig;
pub use super::stage::{AxisFold, Convolution, InputForm, OutputForm, PostTwiddle, StageConfig, StageLayout, TileFill};
pub use plane::MIN_PLANE_THREADS;
pub(crate) use single::{shared_stage, shared_stage_tables, CONVOLUTION_ROW_THREADS};

use super::factor::{default_max_radix, has_radix_plan, radices, threads_per_signal, BUTTERFLY_PAIRS};
use super::fault::{FaultTolerance, StageChecks};
use super::options::{DeviceOptions, DirectDft, PlaneFusion, TensorCores};
use super::plan::{AxisKind, AxisStep, FftError, FftPlan};
use super::stage::{smem_stride_for, tile_slots};
use super::window::Window;
pub use crate::limits::DeviceLimits;
use single::{convolution_for, COLUMN_SIGNALS};

/// Shared memory every backend we target gives a cube: the least a caller may
/// set as `DeviceOptions::shared_limit`.
const PORTABLE_SHARED: usize = DeviceLimits::PORTABLE.shared_memory;

/// Shared memory a stage's cube may take by default, where the device allows it
/// (CUDA lets a cube opt in to more than 48 KiB; two such cubes fit an H100
/// SM). One cube then transforms signals of up to ~12k complex points, which
/// would otherwise take a four-step FFT's two launches
/// (benches/results/2026-11-24_composite_radices_h100.md).
const SHARED_LIMIT: usize = 108 * 1024;

/// Where a launch reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    Input,
    Output,
    /// Scratch buffer `i` of the recipe, of the given number of values (in the
    /// plan's precision).
    Temp(usize, usize),
}

/// The launches of one execution, in order, and the scratch buffers they
/// share (their numbers of values). `T` as in [`Launch`].
#[derive(Clone, Debug, PartialEq)]
pub struct Recipe<T = Vec<f32>> {
    pub launches: Vec<Launch<T>>,
    pub temps: Vec<usize>,
}

impl<T> Recipe<T> {
    /// The configurations of the stage launches, in launch order.
    pub fn stages(&self) -> impl Iterator<Item = &StageConfig> {
        self.launches.iter().filter_map(|launch| match &launch.kernel {
            Kernel::Stage { cfg, .. } => Some(cfg),
            _ => None,
        })
    }

    /// The configurations of the tensor-core launches, in launch order.
    pub fn tensor_cores(&self) -> impl Iterator<Item = &TensorCoreConfig> {
        self.launches.iter().filter_map(|launch| match &launch.kernel {
            Kernel::TensorCore { cfg, .. } => Some(cfg),
            _ => None,
        })
    }

    /// The configurations of the plane launches, in launch order.
    pub fn planes(&self) -> impl Iterator<Item = &PlaneConfig> {
        self.launches.iter().filter_map(|launch| match &launch.kernel {
            Kernel::Plane { cfg, .. } => Some(cfg),
            _ => None,
        })
    }
}

/// One kernel launch and the buffers it reads and writes. `T` is a table of
/// f32 values: a host vector in a [`Recipe`], an uploaded buffer on a device.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch<T = Vec<f32>> {
    pub kernel: Kernel<T>,
    pub src: Buf,
    pub src_floats: usize,
    pub dst: Buf,
    pub dst_floats: usize,
}

/// A kernel and what it is launched with besides the buffers.
// A plan holds a handful of launches, built once: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Kernel<T = Vec<f32>> {
    /// The FFT stage kernel (see `super::stage`).
    Stage {
        cfg: StageConfig,
        layout: StageLayout,
        twiddles: T,
        /// A four-step column pass's coarse and fine twiddles.
        post: Option<[T; 2]>,
        /// Per-index factors (Rader's or Bluestein's; one zero pair where none).
        factors: T,
        /// Cubes of a prefetching stage (at most one per tile): `None`, one per tile.
        resident_cubes: Option<usize>,
        /// The checksum table of a checked stage (`fft/fault.rs`; one zero where unchecked).
        checks: T,
    },
    /// A direct DFT of the stored windows (see `super::dft`).
    Dft {
        cfg: DftConfig,
        shape: DftShape,
        matrix: T,
        signals: usize,
        inner: usize,
        /// Strides in floats of the input and output: (outer, inner, axis).
        input: [usize; 3],
        output: [usize; 3],
    },
    /// The last two dimensions in one launch (see `super::plane`).
    Plane {
        cfg: PlaneConfig,
        images: usize,
        twiddles: [T; 2],
    },
    /// Radix-16 butterflies on tensor cores (see `super::tensor_core`).
    TensorCore {
        cfg: TensorCoreConfig,
        signals: usize,
        scale: f32,
        twiddles: T,
    },
    /// The extra pass of a long real transform: untangle (R2C) or fold (C2R).
    HalfSpectrum {
        fold: bool,
        cfg: HalfSpectrumConfig,
        inner: usize,
        total: usize,
        twiddles: T,
    },
}

impl<T> Launch<T> {
    /// The same launch with each table mapped by `f` (uploaded, say).
    pub fn map_tables<U>(&self, mut f: impl FnMut(&T) -> U) -> Launch<U> {
        let kernel = match &self.kernel {
            Kernel::Stage {
                cfg,
                layout,
                twiddles,
                post,
                factors,
                resident_cubes,
                checks,
            } => Kernel::Stage {
                cfg: cfg.clone(),
                layout: *layout,
                twiddles: f(twiddles),
                post: post.as_ref().map(|[coarse, fine]| [f(coarse), f(fine)]),
                factors: f(factors),
                resident_cubes: *resident_cubes,
                checks: f(checks),
            },
            Kernel::Dft {
                cfg,
                shape,
                matrix,
                signals,
                inner,
                input,
                output,
            } => Kernel::Dft {
                cfg: *cfg,
                shape: *shape,
                matrix: f(matrix),
                signals: *signals,
                inner: *inner,
                input: *input,
                output: *output,
            },
            Kernel::Plane { cfg, images, twiddles } => Kernel::Plane {
                cfg: cfg.clone(),
                images: *images,
                twiddles: [f(&twiddles[0]), f(&twiddles[1])],
            },
            Kernel::TensorCore {
                cfg,
                signals,
                scale,
                twiddles,
            } => Kernel::TensorCore {
                cfg: *cfg,
                signals: *signals,
                scale: *scale,
                twiddles: f(twiddles),
            },
            Kernel::HalfSpectrum {
                fold,
                cfg,
                inner,
                total,
                twiddles,
            } => Kernel::HalfSpectrum {
                fold: *fold,
                cfg: *cfg,
                inner: *inner,
                total: *total,
                twiddles: f(twiddles),
            },
        };
        Launch {
            kernel,
            src: self.src,
            src_floats: self.src_floats,
            dst: self.dst,
            dst_floats: self.dst_floats,
        }
    }
}

/// The launches that run `plan` on a device of `limits` under `options`.
pub fn lower(plan: &FftPlan, limits: &DeviceLimits, options: DeviceOptions) -> Result<Recipe, FftError> {
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
    let checks = match plan.desc().fault_tolerance {
        FaultTolerance::Off => None,
        tolerance => Some(StageChecks {
            correct: tolerance == FaultTolerance::Correct,
            repair: false,
            inject: None,
        }),
    };
    // The checksums live in the stage kernel: checked plans run every axis
    // there, and compute every output their last pass's checksum sums.
    let options = match checks {
        Some(_) => DeviceOptions {
            prune: false,
            direct_dft: DirectDft::Never,
            plane: PlaneFusion::Never,
            tensor_cores: TensorCores::Never,
            ..options
        },
        None => options,
    };
    let mut lowering = Lowering {
        launches: Vec::new(),
        temps: Vec::new(),
        shared_limit: limits.shared_memory.min(options.shared_limit.unwrap_or(SHARED_LIMIT)),
        plane_shared_limit: limits.shared_memory.min(plane::PLANE_SHARED_LIMIT),
        max_threads: limits.cube_threads.min(1024),
        device_shared: limits.shared_memory,
        async_copies: limits.async_copies,
        multiprocessors: limits.multiprocessors,
        half_mma: limits
            .half_mma
            .then(|| tensor_core::mma_half(plan.desc().input_precision, plan.desc().output_precision))
            .flatten(),
        options,
        checks,
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
    Ok(Recipe {
        launches: lowering.launches,
        temps: lowering.temps,
    })
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

/// A recipe under construction: the launches so far and the limits that bound them.
struct Lowering {
    launches: Vec<Launch>,
    temps: Vec<usize>,
    shared_limit: usize,
    plane_shared_limit: usize,
    max_threads: usize,
    /// Shared memory the device gives one cube (a resident stage's working tile and staged input).
    device_shared: usize,
    async_copies: bool,
    multiprocessors: Option<usize>,
    /// The MMA operand type of a half-precision plan on a device with tensor cores.
    half_mma: Option<MmaHalf>,
    options: DeviceOptions,
    /// What every stage checks (`fft/fault.rs`).
    checks: Option<StageChecks>,
}

impl Lowering {
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
        if let Some(cfg) = self.tensor_core_config(step, batch) {
            self.tensor_core(cfg, step, batch, src, dst);
            return Ok(());
        }
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
        self.long(step, &t, batch, source, sink)
    }

    /// Appends a launch of `kernel` from `src` to `dst`.
    fn push(&mut self, kernel: Kernel, src: (Buf, usize), dst: (Buf, usize)) {
        self.launches.push(Launch {
            kernel,
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }
}

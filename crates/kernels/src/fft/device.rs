//! Running a lowered plan on a CubeCL device: the [`Recipe`]'s tables
//! uploaded once, its launches made on each execution.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::algorithm::direct_dft::{dft_kernel, DftExtentsLaunch, SignalStridesLaunch};
use super::algorithm::tensor_core::{fft_tensor_core_kernel, MmaHalf};
use super::fault::{FaultCounts, FaultInjection, FaultTargets, FaultTolerance, StageChecks};
use super::lowering::{lower, Buf, DeviceLimits, Kernel, Launch, Recipe};
use super::options::{DeviceOptions, Measurement};
use super::plan::{FftError, FftPlan};
use super::plane::fft_plane_kernel;
use super::real::{fold_kernel, untangle_kernel};
use super::stage::{fft_stage_kernel, FaultBuffersLaunch, StageConfig, StageTablesLaunch, TileFill, TileGridLaunch};
use crate::fault::FaultRecord;
use crate::grid::cube_count;
use crate::pairs::{holds_pairs, vector_size};
use crate::precision::{Bf16InF32, Native, Precision, Storage, Stored};

/// Threads a cube of the element-wise half-spectrum passes takes.
const ELEMWISE_THREADS: usize = 256;

/// A recipe's table uploaded: the buffer and its number of f32 values.
#[derive(Clone, Debug)]
pub struct Table {
    pub handle: Handle,
    pub floats: usize,
}

/// How one device holds a plan's buffers: the input, the output, and the
/// scratch buffers between launches (in the half precision where one side
/// is half, so that an f32-to-half plan moves half the bytes between launches).
#[derive(Clone, Copy, Debug)]
struct BufferStorage {
    input: Stored,
    output: Stored,
    scratch: Stored,
}

impl BufferStorage {
    fn of<R: Runtime>(plan: &FftPlan, client: &ComputeClient<R>) -> Self {
        let desc = plan.desc();
        let scratch = match desc.output_precision {
            Precision::F32 => desc.input_precision,
            half => half,
        };
        BufferStorage {
            input: desc.input_precision.stored_on(client),
            output: desc.output_precision.stored_on(client),
            scratch: scratch.stored_on(client),
        }
    }
}

/// An [`FftPlan`] lowered for one device: twiddle tables uploaded, launches chosen.
pub struct DeviceFft<R: Runtime> {
    client: ComputeClient<R>,
    plan: FftPlan,
    /// How this device holds the input's, the output's and the scratch buffers' values.
    stored: BufferStorage,
    options: DeviceOptions,
    recipe: Recipe<Table>,
    measurements: Vec<Measurement>,
    /// Faults the checked stages counted and listed for repair.
    faults: FaultRecord,
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
        let recipe = lower(self, &DeviceLimits::of(client), options)?;
        Ok(DeviceFft::upload(client, self.clone(), options, &recipe))
    }
}

impl<R: Runtime> DeviceFft<R> {
    /// `recipe` (lowered from `plan` under `options`) with its tables on `client`'s device.
    pub(super) fn upload(client: &ComputeClient<R>, plan: FftPlan, options: DeviceOptions, recipe: &Recipe) -> Self {
        let table = |values: &Vec<f32>| Table {
            handle: client.create_from_slice(f32::as_bytes(values)),
            floats: values.len(),
        };
        DeviceFft {
            client: client.clone(),
            stored: BufferStorage::of(&plan, client),
            plan,
            options,
            recipe: Recipe {
                launches: recipe.launches.iter().map(|launch| launch.map_tables(table)).collect(),
                temps: recipe.temps.clone(),
            },
            measurements: Vec::new(),
            faults: FaultRecord::new(client),
        }
    }

    pub(super) fn with_measurements(mut self, measurements: Vec<Measurement>) -> Self {
        self.measurements = measurements;
        self
    }

    pub fn plan(&self) -> &FftPlan {
        &self.plan
    }

    /// How this device holds the input's values: its element type.
    pub fn input_stored(&self) -> Stored {
        self.stored.input
    }

    /// How this device holds the output's values.
    pub fn output_stored(&self) -> Stored {
        self.stored.output
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

    /// The launches one execution makes, their tables on the device.
    pub fn recipe(&self) -> &Recipe<Table> {
        &self.recipe
    }

    /// Runs the transform. `input` holds `plan().input_floats()` values
    /// (at least `plan().input_extent()`), `output` room for
    /// `plan().output_floats()`, each value as [`Self::input_stored`] and
    /// [`Self::output_stored`] say.
    pub fn execute(&self, input: &Handle, output: &Handle) -> Result<(), FftError> {
        self.execute_launches(input, output, None)
    }

    /// [`Self::execute`] with one bit flipped as `fault` says (in a plan
    /// made with fault tolerance: the checks find it; without, nothing
    /// does). For tests and fault-injection campaigns.
    pub fn execute_with_fault(&self, input: &Handle, output: &Handle, fault: &FaultInjection) -> Result<(), FftError> {
        if self.plan.desc().fault_tolerance == FaultTolerance::Off {
            return Err(FftError::Invalid(
                "fault injection needs a plan with fault tolerance (detect or correct)".into(),
            ));
        }
        let stages = self.recipe.stages().count();
        if fault.launch >= stages {
            return Err(FftError::Invalid(format!(
                "fault injection at stage launch {} of a plan of {stages}",
                fault.launch
            )));
        }
        if fault.bit > 31 {
            return Err(FftError::Invalid(format!("bit {} of an f32", fault.bit)));
        }
        self.execute_launches(input, output, Some(fault))
    }

    /// Where a fault may be injected: per stage launch, in launch order.
    pub fn fault_targets(&self) -> Vec<FaultTargets> {
        self.recipe
            .launches
            .iter()
            .filter_map(|launch| match &launch.kernel {
                Kernel::Stage { cfg, layout, .. } => {
                    let passes = cfg.radices.len();
                    Some(FaultTargets {
                        tiles: (layout.na * layout.nb * layout.nc.div_ceil(cfg.signals_per_tile())) as u32,
                        units: cfg.threads_per_cube() as u32,
                        passes: passes + if cfg.convolution.is_some() { passes - 1 } else { 0 },
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// What the checked stages counted since the plan was made or
    /// [`Self::reset_fault_counts`] (reads the device's counters: a sync).
    pub fn fault_counts(&self) -> FaultCounts {
        self.faults.counts(&self.client)
    }

    pub fn reset_fault_counts(&mut self) {
        self.faults = FaultRecord::new(&self.client);
    }

    fn execute_launches(
        &self,
        input: &Handle,
        output: &Handle,
        fault: Option<&FaultInjection>,
    ) -> Result<(), FftError> {
        let desc = self.plan.desc();
        let check = |h: &Handle, floats: usize, stored: Stored, precision: Precision, what: &str| {
            let bytes = h.size_in_used() as usize;
            if bytes < floats * stored.bytes() {
                Err(FftError::Buffer(format!(
                    "{what} holds {bytes} bytes, the plan needs {} ({floats} values of {precision})",
                    floats * stored.bytes(),
                )))
            } else {
                Ok(())
            }
        };
        check(
            input,
            self.plan.input_extent(),
            self.stored.input,
            desc.input_precision,
            "input",
        )?;
        check(
            output,
            self.plan.output_floats(),
            self.stored.output,
            desc.output_precision,
            "output",
        )?;
        let temps: Vec<Handle> = self
            .recipe
            .temps
            .iter()
            .map(|&f| self.client.empty(f * self.stored.scratch.bytes()))
            .collect();
        let resolve = |b: Buf| -> (Handle, Stored) {
            match b {
                Buf::Input => (input.clone(), self.stored.input),
                Buf::Output => (output.clone(), self.stored.output),
                Buf::Temp(i, _) => (temps[i].clone(), self.stored.scratch),
            }
        };
        let mut stage = 0;
        for launch in &self.recipe.launches {
            let (src, from) = resolve(launch.src);
            let (dst, to) = resolve(launch.dst);
            let fault = fault.filter(|f| f.launch == stage);
            if matches!(launch.kernel, Kernel::Stage { .. }) {
                stage += 1;
            }
            match from {
                Stored::F32 => self.launch_to::<Native<f32>>(to, launch, src, dst, fault),
                Stored::F16 => self.launch_to::<Native<half::f16>>(to, launch, src, dst, fault),
                Stored::BF16 => self.launch_to::<Native<half::bf16>>(to, launch, src, dst, fault),
                Stored::BF16InF32 => self.launch_to::<Bf16InF32>(to, launch, src, dst, fault),
            }
        }
        Ok(())
    }

    /// [`Self::launch`] from `SI` values into a buffer stored as `to`.
    fn launch_to<SI: Storage>(
        &self,
        to: Stored,
        launch: &Launch<Table>,
        src: Handle,
        dst: Handle,
        fault: Option<&FaultInjection>,
    ) {
        match to {
            Stored::F32 => self.launch::<SI, Native<f32>>(launch, src, dst, fault),
            Stored::F16 => self.launch::<SI, Native<half::f16>>(launch, src, dst, fault),
            Stored::BF16 => self.launch::<SI, Native<half::bf16>>(launch, src, dst, fault),
            Stored::BF16InF32 => self.launch::<SI, Bf16InF32>(launch, src, dst, fault),
        }
    }

    /// Launches one kernel of the recipe from `SI` values into `SO` values,
    /// a stage with `fault` injected where given.
    fn launch<SI: Storage, SO: Storage>(
        &self,
        launch: &Launch<Table>,
        src: Handle,
        dst: Handle,
        fault: Option<&FaultInjection>,
    ) {
        let client = &self.client;
        let (in_bytes, out_bytes) = (size_of::<SI::Elem>(), size_of::<SO::Elem>());
        let array = |h: Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h, len) };
        let table = |t: &Table| array(t.handle.clone(), t.floats);
        // An input read as a crop may end before the plan's dense size.
        let src_floats = launch.src_floats.min(src.size_in_used() as usize / in_bytes);
        // SAFETY: the kernels launch without bounds checks: every index they
        // form stays inside the arrays sized here, and their stores are
        // guarded by their windows. The oracle checks found no access out of
        // bounds under cubecl's `check_mode = "validate"` on CUDA
        // (benches/README.md, "Validating the unchecked kernels").
        unsafe {
            match &launch.kernel {
                Kernel::Stage {
                    cfg,
                    layout,
                    twiddles,
                    post,
                    factors,
                    resident_cubes,
                    checks,
                } => {
                    let tiles = layout.na * layout.nb * layout.nc.div_ceil(cfg.signals_per_tile());
                    // A buffer that starts inside a pair (a view at an odd float offset) reads floats one by one.
                    let mut cfg = cfg.clone();
                    cfg.vector_input &= holds_pairs(&src, 1, in_bytes);
                    cfg.vector_output &= holds_pairs(&dst, 1, out_bytes);
                    // Staging copies whole pairs: without them a cube takes one tile.
                    let resident = resident_cubes.filter(|_| cfg.vector_input);
                    if !cfg.vector_input {
                        cfg.prefetch = None;
                    }
                    if cfg.prefetch == Some(TileFill::AsyncCopies { pairs: 2 }) && !holds_pairs(&src, 2, in_bytes) {
                        cfg.prefetch = Some(TileFill::AsyncCopies { pairs: 1 });
                    }
                    let cubes = resident.map_or(tiles, |cubes| cubes.clamp(1, tiles));
                    let inject = match (fault, cfg.checks.as_mut()) {
                        (Some(f), Some(stage_checks)) => {
                            stage_checks.inject = Some((f.site, f.pass));
                            [f.tile, f.unit, f.value, f.bit]
                        }
                        _ => [u32::MAX; 4],
                    };
                    let inject = client.create_from_slice(u32::as_bytes(&inject));
                    // Stages without a four-step twiddle bind the pass twiddles in its place.
                    let [coarse, fine] = post.as_ref().map_or([twiddles, twiddles], |[c, f]| [c, f]);
                    let stage = |cubes: usize, cfg: StageConfig, src: Handle, dst: Handle| {
                        fft_stage_kernel::launch_unchecked::<f32, SI, SO, R>(
                            client,
                            cube_count(cubes),
                            CubeDim::new_1d(cfg.threads_per_cube() as u32),
                            vector_size(cfg.vector_input),
                            vector_size(cfg.vector_output),
                            array(src, src_floats),
                            array(dst, launch.dst_floats),
                            StageTablesLaunch::new(table(twiddles), table(coarse), table(fine), table(factors)),
                            FaultBuffersLaunch::new(table(checks), self.faults.arg(), array(inject.clone(), 4)),
                            TileGridLaunch::new(
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
                            ),
                            cfg,
                        )
                    };
                    let repair = cfg.checks.filter(|c| c.correct).map(|c| StageConfig {
                        prefetch: None,
                        checks: Some(StageChecks {
                            repair: true,
                            inject: None,
                            ..c
                        }),
                        ..cfg.clone()
                    });
                    stage(cubes, cfg, src.clone(), dst.clone());
                    // Transforms again, from the input, the signals the stage found faulty.
                    if let Some(repair) = repair {
                        stage(1, repair, src, dst);
                    }
                }
                Kernel::Dft {
                    cfg,
                    shape,
                    matrix,
                    signals,
                    inner,
                    input,
                    output,
                } => {
                    dft_kernel::launch_unchecked::<f32, SI, SO, R>(
                        client,
                        cube_count(cfg.cubes(shape.rows, *signals)),
                        CubeDim::new_1d(cfg.threads() as u32),
                        array(src, src_floats),
                        array(dst, launch.dst_floats),
                        array(matrix.handle.clone(), shape.rows * shape.terms),
                        DftExtentsLaunch::new(shape.rows, shape.terms, *signals, *inner),
                        SignalStridesLaunch::new(input[0], input[1], input[2]),
                        SignalStridesLaunch::new(output[0], output[1], output[2]),
                        *cfg,
                    );
                }
                Kernel::Plane { cfg, images, twiddles } => {
                    fft_plane_kernel::launch_unchecked::<f32, SI, SO, R>(
                        client,
                        cube_count(*images),
                        CubeDim::new_1d(cfg.threads() as u32),
                        vector_size(cfg.first.vector_input),
                        vector_size(cfg.second.vector_output),
                        array(src, src_floats),
                        array(dst, launch.dst_floats),
                        table(&twiddles[0]),
                        table(&twiddles[1]),
                        *images,
                        cfg.clone(),
                    );
                }
                Kernel::TensorCore {
                    cfg,
                    signals,
                    scale,
                    twiddles,
                } => {
                    let mut cfg = *cfg;
                    cfg.vector_input &= holds_pairs(&src, 1, in_bytes);
                    cfg.vector_output &= holds_pairs(&dst, 2, out_bytes);
                    let transform = match cfg.mma {
                        MmaHalf::F16 => fft_tensor_core_kernel::launch_unchecked::<half::f16, SI, SO, R>,
                        MmaHalf::BF16 => fft_tensor_core_kernel::launch_unchecked::<half::bf16, SI, SO, R>,
                    };
                    transform(
                        client,
                        cube_count(cfg.cubes(*signals)),
                        CubeDim::new_1d(cfg.threads() as u32),
                        vector_size(cfg.vector_input),
                        if cfg.vector_output { 4 } else { 1 },
                        array(src, src_floats),
                        array(dst, launch.dst_floats),
                        table(twiddles),
                        *signals,
                        *scale,
                        cfg,
                    );
                }
                Kernel::HalfSpectrum {
                    fold,
                    cfg,
                    inner,
                    total,
                    twiddles,
                } => {
                    let half_spectrum = if *fold {
                        fold_kernel::launch_unchecked::<f32, SI, SO, R>
                    } else {
                        untangle_kernel::launch_unchecked::<f32, SI, SO, R>
                    };
                    half_spectrum(
                        client,
                        cube_count(total.div_ceil(ELEMWISE_THREADS)),
                        CubeDim::new_1d(ELEMWISE_THREADS as u32),
                        array(src, src_floats),
                        array(dst, launch.dst_floats),
                        table(twiddles),
                        *inner,
                        *total,
                        *cfg,
                    );
                }
            }
        }
    }
}

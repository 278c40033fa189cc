//! Plans chosen by timing candidates on the device, where the lowering's rules
//! cannot rank them ahead of time (FFTW's "measure" planning).

use std::time::{Duration, Instant};

use cubecl::prelude::*;

use super::device::DeviceFft;
use super::lowering::{lower, DeviceLimits, CONVOLUTION_ROW_THREADS};
use super::options::{DeviceOptions, Measurement, PlaneFusion, Planning, UnitStrides};
use super::plan::{FftError, FftPlan};
use super::stage::Convolution;

/// Cube sizes timed for Rader's rows. The size that suits a length moves with
/// NVRTC's output rather than with anything the plans show, so no one size wins
/// everywhere (benches/results/2026-11-26_good_thomas_h100.md).
const CONVOLUTION_ROW_CANDIDATES: [usize; 3] = [64, CONVOLUTION_ROW_THREADS, 256];
/// Rounds of timed groups, the candidates taking turns within each, so that
/// a drift in the device's clocks falls on all of them.
const ROUNDS: usize = 5;
/// About how long one timed group of back-to-back executions lasts.
const GROUP: Duration = Duration::from_millis(2);
const MAX_REPS: usize = 64;

impl FftPlan {
    /// [`Self::on_device_with`] or [`Self::on_device_measured`], as `planning` says.
    pub fn on_device_planned<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        options: DeviceOptions,
        planning: Planning,
    ) -> Result<DeviceFft<R>, FftError> {
        match planning {
            Planning::Rules => self.on_device_with(client, options),
            Planning::Measured => self.on_device_measured(client, options),
        }
    }

    /// [`Self::on_device_with`], where the candidate lowerings differ timing
    /// each on `client`'s device over the plan's own shape and keeping the
    /// fastest. The candidates: contiguous axes' strides at run time or
    /// compiled in ([`UnitStrides`]), for Rader's rows cubes of 64, 128 and 256
    /// threads, and where the rules take a plane launch, separate launches
    /// instead ([`PlaneFusion`]): the plane's gain moves with the grid in ways
    /// its rules do not see (benches/results/2026-11-26_plane_rules_h100.md). A
    /// choice `options` fixes (a cube size given, strides compiled, a plane
    /// always or never) is not varied.
    /// It costs each candidate's kernel compilations and a few dozen
    /// executions, once per plan; the measurements come with the plan
    /// ([`DeviceFft::measurements`]). Every candidate computes the same
    /// transform.
    pub fn on_device_measured<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        options: DeviceOptions,
    ) -> Result<DeviceFft<R>, FftError> {
        let limits = DeviceLimits::of(client);
        let rules = lower(self, &limits, options)?;
        let rader = rules.stages().any(|cfg| cfg.convolution == Some(Convolution::Rader));
        let row_threads: Vec<Option<usize>> = if options.convolution_row_threads.is_none() && rader {
            CONVOLUTION_ROW_CANDIDATES.into_iter().map(Some).collect()
        } else {
            vec![options.convolution_row_threads]
        };
        let planes: &[PlaneFusion] = if options.plane == PlaneFusion::Auto && rules.planes().next().is_some() {
            &[PlaneFusion::Auto, PlaneFusion::Never]
        } else {
            &[options.plane]
        };
        let strides: &[UnitStrides] = match options.unit_strides {
            UnitStrides::Runtime => &[UnitStrides::Runtime, UnitStrides::Compiled],
            UnitStrides::Compiled => &[UnitStrides::Compiled],
        };
        let mut lowered = vec![(options, rules)];
        for &plane in planes {
            for &unit_strides in strides {
                for &convolution_row_threads in &row_threads {
                    let choice = DeviceOptions {
                        convolution_row_threads,
                        unit_strides,
                        plane,
                        ..options
                    };
                    // `options` itself is lowered already.
                    if choice == options {
                        continue;
                    }
                    let recipe = lower(self, &limits, choice)?;
                    // Choices that give the same launches need no timing of their own.
                    if !lowered.iter().any(|(_, other)| *other == recipe) {
                        lowered.push((choice, recipe));
                    }
                }
            }
        }
        let mut candidates: Vec<DeviceFft<R>> = lowered
            .iter()
            .map(|(choice, recipe)| DeviceFft::upload(client, self.clone(), *choice, recipe))
            .collect();
        if candidates.len() == 1 {
            return Ok(candidates.remove(0));
        }
        let times = time_each(client, &candidates)?;
        let measurements: Vec<Measurement> = candidates
            .iter()
            .zip(&times)
            .map(|(c, &ms)| Measurement {
                options: c.options(),
                ms,
            })
            .collect();
        let fastest = (0..times.len())
            .min_by(|&a, &b| times[a].total_cmp(&times[b]))
            .expect("candidates");
        Ok(candidates.swap_remove(fastest).with_measurements(measurements))
    }
}

/// Milliseconds per execution of each candidate: the fastest of [`ROUNDS`]
/// groups, each about [`GROUP`] long.
fn time_each<R: Runtime>(client: &ComputeClient<R>, candidates: &[DeviceFft<R>]) -> Result<Vec<f64>, FftError> {
    let plan = candidates[0].plan();
    // The values do not change the work; a pattern avoids zeros' special cases.
    let values: Vec<f32> = (0..plan.input_floats()).map(|i| (i % 7) as f32 - 3.0).collect();
    let input = client.create_from_slice(f32::as_bytes(&values));
    let output = client.empty(plan.output_floats() * 4);
    let sync = || {
        cubecl::future::block_on(client.sync())
            .map_err(|e| FftError::Unsupported(format!("the device failed while timing plans: {e:?}")))
    };
    // Compiles every candidate's kernels before any timing.
    for candidate in candidates {
        candidate.execute(&input, &output)?;
    }
    sync()?;
    let start = Instant::now();
    candidates[0].execute(&input, &output)?;
    sync()?;
    let once = start.elapsed().as_secs_f64().max(1e-6);
    let reps = ((GROUP.as_secs_f64() / once).ceil() as usize).clamp(1, MAX_REPS);
    let mut fastest = vec![f64::INFINITY; candidates.len()];
    for _ in 0..ROUNDS {
        for (candidate, best) in candidates.iter().zip(&mut fastest) {
            let start = Instant::now();
            for _ in 0..reps {
                candidate.execute(&input, &output)?;
            }
            sync()?;
            *best = best.min(start.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
    }
    Ok(fastest)
}

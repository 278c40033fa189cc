//! Lowered FFT plans and fused-kernel problems with their tables, cached per
//! device: building one plans the transforms and uploads twiddle tables,
//! which a layer called every step should not pay for again. Also each device's record of the faults its
//! checked contractions found.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use burn_cubecl::CubeRuntime;
use cubecl::prelude::ComputeClient;
use fno_kernels::cgemm::Strides;
use fno_kernels::fault::{FaultCounts, FaultRecord, FaultTolerance};
use fno_kernels::fft::{DeviceFft, DeviceOptions, FftDesc, FftPlan, Planning};
use fno_kernels::fused::{FusedSpectralConv, FusedTables};
use fno_kernels::nufft::{DeviceNufft, NufftDesc, NufftType};

use crate::spec::SpectralError;

/// What is cached: a plan lowered as planned, a fused kernel's problem (its
/// two transforms and weight strides) with the transforms' tables, a
/// non-uniform FFT over one point cloud, or the fault record of the device's
/// checked contractions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Lowered {
    Fft(FftDesc, Planning),
    Fused(FftDesc, FftDesc, Strides),
    Nufft(NufftKey),
    ContractionFaults,
}

/// A non-uniform FFT: its points (by cloud id) and request (ε by its bits).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct NufftKey {
    points: u64,
    kind: NufftType,
    modes: Vec<usize>,
    eps_bits: u64,
    isign: i32,
}

type Key = (TypeId, String, Lowered);
type Cache = Mutex<HashMap<Key, Arc<dyn Any + Send + Sync>>>;

fn cache() -> &'static Cache {
    static PLANS: OnceLock<Cache> = OnceLock::new();
    PLANS.get_or_init(Default::default)
}

fn fft_error(e: fno_kernels::fft::FftError) -> SpectralError {
    SpectralError::Unsupported(e.to_string())
}

fn cached<R: CubeRuntime, T: Send + Sync + 'static>(
    device: &R::Device,
    lowered: Lowered,
    build: impl FnOnce() -> Result<T, SpectralError>,
) -> Result<Arc<T>, SpectralError> {
    let key = (TypeId::of::<R>(), format!("{device:?}"), lowered);
    if let Some(found) = cache().lock().expect("plan cache poisoned").get(&key) {
        return Ok(found.clone().downcast::<T>().expect("keyed by runtime and kind"));
    }
    let built = Arc::new(build()?);
    cache().lock().expect("plan cache poisoned").insert(key, built.clone());
    Ok(built)
}

/// The lowered plan of `desc` on `device`, built on first use as `planning`
/// says ([`Planning::Measured`] times the candidate lowerings on the device
/// the first time a shape runs).
pub fn device_fft<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    desc: FftDesc,
    planning: Planning,
) -> Result<Arc<DeviceFft<R>>, SpectralError> {
    cached::<R, _>(device, Lowered::Fft(desc.clone(), planning), || {
        FftPlan::new(desc)
            .and_then(|plan| plan.on_device_planned(client, DeviceOptions::default(), planning))
            .map_err(fft_error)
    })
}

/// The record `device`'s checked contractions count their faults in.
pub(crate) fn fault_record<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
) -> Result<Arc<FaultRecord>, SpectralError> {
    cached::<R, _>(device, Lowered::ContractionFaults, || Ok(FaultRecord::new(client)))
}

/// What the checked kernels on `device` counted since the process began:
/// its checked FFT plans' records and its contractions' (reads each: syncs).
pub(crate) fn fault_counts<R: CubeRuntime>(client: &ComputeClient<R>, device: &R::Device) -> FaultCounts {
    let (runtime, device) = (TypeId::of::<R>(), format!("{device:?}"));
    let records: Vec<_> = cache()
        .lock()
        .expect("plan cache poisoned")
        .iter()
        .filter(|((r, d, _), _)| *r == runtime && *d == device)
        .map(|((_, _, lowered), found)| (lowered.clone(), found.clone()))
        .collect();
    let mut counts = FaultCounts::default();
    for (lowered, found) in records {
        counts = counts
            + match lowered {
                Lowered::Fft(desc, _) if desc.fault_tolerance != FaultTolerance::Off => {
                    found.downcast::<DeviceFft<R>>().expect("keyed by kind").fault_counts()
                }
                Lowered::ContractionFaults => found.downcast::<FaultRecord>().expect("keyed by kind").counts(client),
                _ => FaultCounts::default(),
            };
    }
    counts
}

/// A fused kernel's problem (before its per-call settings) and its
/// transforms' tables on one device.
pub struct FusedEntry {
    pub problem: FusedSpectralConv,
    pub tables: FusedTables,
}

/// The fused problem of the transforms `forward` and `inverse` (weight strides
/// as given) and its tables on `device`, planned and uploaded on first use.
pub fn fused_problem<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    forward: FftDesc,
    inverse: FftDesc,
    weight: Strides,
) -> Result<Arc<FusedEntry>, SpectralError> {
    cached::<R, _>(device, Lowered::Fused(forward.clone(), inverse.clone(), weight), || {
        let plan = |desc: FftDesc| FftPlan::new(desc).map_err(fft_error);
        let problem = FusedSpectralConv::new(&plan(forward)?, &plan(inverse)?, weight).map_err(fft_error)?;
        let tables = problem.tables(client);
        Ok(FusedEntry { problem, tables })
    })
}

/// The plan of `desc` over the point cloud `points_id` (coordinates
/// `points`) on `device`, its points sorted and uploaded on first use.
pub(crate) fn device_nufft<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    desc: &NufftDesc,
    points_id: u64,
    points: &[f64],
) -> Result<Arc<DeviceNufft<R>>, SpectralError> {
    let key = NufftKey {
        points: points_id,
        kind: desc.kind,
        modes: desc.modes.clone(),
        eps_bits: desc.eps.to_bits(),
        isign: desc.isign,
    };
    cached::<R, _>(device, Lowered::Nufft(key), || {
        desc.on_device(client, points)
            .map_err(|e| SpectralError::Unsupported(e.to_string()))
    })
}

#[cfg(all(test, feature = "wgpu"))]
mod tests {
    use super::*;
    use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
    use cubecl::Runtime;
    use fno_kernels::fft::{Direction, FftKind};

    /// Measured planning times the candidates of a Rader length once and
    /// caches that plan apart from the rules' one, which stays as it was.
    #[test]
    fn measured_plans_are_timed_and_cached_apart_from_the_rules() {
        let device = WgpuDevice::default();
        let client = WgpuRuntime::client(&device);
        let desc = FftDesc::new(&[8, 211], &[-1], FftKind::C2C, Direction::Forward);
        let plan = |planning| device_fft::<WgpuRuntime>(&client, &device, desc.clone(), planning);
        let rules = plan(Planning::Rules).unwrap();
        assert!(rules.measurements().is_empty());
        let measured = plan(Planning::Measured);
        let again = plan(Planning::Measured);
        let (measured, again) = (measured.unwrap(), again.unwrap());
        assert!(measured.measurements().len() >= 2, "{:?}", measured.measurements());
        assert!(Arc::ptr_eq(&measured, &again), "a measured plan is built once");
        let rules_again = plan(Planning::Rules).unwrap();
        assert!(Arc::ptr_eq(&rules, &rules_again));
    }
}

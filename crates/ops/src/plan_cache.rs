//! Lowered FFT plans and fused-kernel tables, cached per device: building one
//! uploads twiddle tables, which a layer called every step
//! should not pay for again.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use burn_cubecl::CubeRuntime;
use cubecl::prelude::ComputeClient;
use fno_kernels::fft::{DeviceFft, FftDesc, FftPlan};
use fno_kernels::fused::{FusedSpectralConv, FusedTables};

use crate::spec::SpectralError;

/// What is cached: a plan, or the tables of a fused kernel's two transforms.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Lowered {
    Fft(FftDesc),
    Fused(FftDesc, FftDesc),
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

/// The lowered plan of `desc` on `device`, built on first use.
pub fn device_fft<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    desc: FftDesc,
) -> Result<Arc<DeviceFft<R>>, SpectralError> {
    cached::<R, _>(device, Lowered::Fft(desc.clone()), || {
        FftPlan::new(desc)
            .and_then(|plan| plan.on_device(client))
            .map_err(fft_error)
    })
}

/// The fused problem of the transforms `forward` and `inverse` (weight strides
/// as given) and its tables on `device`, uploaded on first use.
pub fn fused_problem<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    forward: FftDesc,
    inverse: FftDesc,
    weight: fno_kernels::cgemm::Strides,
) -> Result<(FusedSpectralConv, Arc<FusedTables>), SpectralError> {
    let plan = |desc: &FftDesc| FftPlan::new(desc.clone()).map_err(fft_error);
    let problem = FusedSpectralConv::new(&plan(&forward)?, &plan(&inverse)?, weight).map_err(fft_error)?;
    let tables = cached::<R, _>(device, Lowered::Fused(forward, inverse), || Ok(problem.tables(client)))?;
    Ok((problem, tables))
}

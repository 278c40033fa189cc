//! Lowered FFT plans, cached per device: building one uploads twiddle tables,
//! which a layer called every step should not pay for again.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use burn_cubecl::CubeRuntime;
use cubecl::prelude::ComputeClient;
use fno_kernels::fft::{DeviceFft, FftDesc, FftPlan};

use crate::spec::SpectralError;

type Key = (TypeId, String, FftDesc);
type Cache = Mutex<HashMap<Key, Arc<dyn Any + Send + Sync>>>;

fn cache() -> &'static Cache {
    static PLANS: OnceLock<Cache> = OnceLock::new();
    PLANS.get_or_init(Default::default)
}

fn fft_error(e: fno_kernels::fft::FftError) -> SpectralError {
    SpectralError::Unsupported(e.to_string())
}

/// The lowered plan of `desc` on `device`, built on first use.
pub fn device_fft<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    desc: FftDesc,
) -> Result<Arc<DeviceFft<R>>, SpectralError> {
    let key = (TypeId::of::<R>(), format!("{device:?}"), desc);
    if let Some(found) = cache().lock().expect("plan cache poisoned").get(&key) {
        return Ok(found.clone().downcast::<DeviceFft<R>>().expect("keyed by runtime type"));
    }
    let plan = FftPlan::new(key.2.clone()).map_err(fft_error)?;
    let lowered = Arc::new(plan.on_device(client).map_err(fft_error)?);
    cache()
        .lock()
        .expect("plan cache poisoned")
        .insert(key, lowered.clone());
    Ok(lowered)
}

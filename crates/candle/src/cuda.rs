//! The transforms on Candle's CUDA device: the same FFT plans as on the CPU,
//! run by our CubeCL kernels on the GPU that holds Candle's buffers. Candle
//! (cudarc) and CubeCL both work in the device's primary context, so a
//! device pointer of one is valid for the other. The values move between
//! their allocations by device-to-device copies, with no trip through the
//! host: Candle's stream is synchronised before CubeCL reads its copy, and
//! CubeCL's before Candle reads the result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::backend::BackendDevice;
use candle_core::{CudaStorage, DeviceLocation, Layout, Result};
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::prelude::*;
use cudarc::driver::{DevicePtr, DevicePtrMut};
use fno_kernels::fft::{DeviceFft, FftDesc, FftPlan};

type Plans = Mutex<HashMap<(usize, FftDesc), Arc<DeviceFft<CudaRuntime>>>>;

/// `desc`'s plan lowered for the GPU `ordinal` once (kernels, twiddle tables).
fn lowered(desc: FftDesc, ordinal: usize, client: &ComputeClient<CudaRuntime>) -> Result<Arc<DeviceFft<CudaRuntime>>> {
    static PLANS: OnceLock<Plans> = OnceLock::new();
    let mut plans = PLANS.get_or_init(Default::default).lock().expect("plan cache poisoned");
    let key = (ordinal, desc);
    if let Some(fft) = plans.get(&key) {
        return Ok(fft.clone());
    }
    let plan = FftPlan::new(key.1.clone()).map_err(candle_core::Error::wrap)?;
    let fft = Arc::new(plan.on_device(client).map_err(candle_core::Error::wrap)?);
    plans.insert(key, fft.clone());
    Ok(fft)
}

fn cuda_error(e: impl std::fmt::Debug) -> candle_core::Error {
    candle_core::Error::msg(format!("CUDA: {e:?}"))
}

/// The device pointer behind a CubeCL handle.
fn pointer(client: &ComputeClient<CudaRuntime>, handle: &cubecl::server::Handle) -> Result<u64> {
    let resource = client.get_resource(handle.clone()).map_err(cuda_error)?;
    Ok(resource.resource().ptr)
}

/// `desc`'s plan applied to the contiguous f32 values of `storage` (at
/// `layout`), into a new Candle buffer on the same device.
pub(crate) fn execute(desc: FftDesc, storage: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::msg("the transforms take contiguous tensors"))?;
    let input = storage.as_cuda_slice::<f32>()?.slice(start..end);
    let device = &storage.device;
    let ordinal = match device.location() {
        DeviceLocation::Cuda { gpu_id } => gpu_id,
        other => candle_core::bail!("a CUDA storage on {other:?}"),
    };
    let client = CudaRuntime::client(&CudaDevice { index: ordinal });
    let fft = lowered(desc, ordinal, &client)?;
    let (in_bytes, out_floats) = ((end - start) * 4, fft.plan().output_floats());
    let (x, y) = (client.empty(in_bytes), client.empty(out_floats * 4));
    let stream = device.cuda_stream();
    {
        let (src, _read) = input.device_ptr(&stream);
        // SAFETY: both ranges are `in_bytes` long on this device, in its primary context.
        unsafe { cudarc::driver::result::memcpy_dtod_async(pointer(&client, &x)?, src, in_bytes, stream.cu_stream()) }
            .map_err(cuda_error)?;
    }
    stream.synchronize().map_err(cuda_error)?;
    fft.execute(&x, &y).map_err(candle_core::Error::wrap)?;
    cubecl::future::block_on(client.sync()).map_err(cuda_error)?;
    // SAFETY: every value is written by the copy below before Candle reads it.
    let mut out = unsafe { device.alloc::<f32>(out_floats)? };
    {
        let (dst, _write) = out.device_ptr_mut(&stream);
        // SAFETY: as above, `out_floats` values on each side.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(dst, pointer(&client, &y)?, out_floats * 4, stream.cu_stream())
        }
        .map_err(cuda_error)?;
    }
    // CubeCL may reuse `y`'s memory once it is dropped.
    stream.synchronize().map_err(cuda_error)?;
    Ok(CudaStorage::wrap_cuda_slice(out, device.clone()))
}

//! Candle's CUDA device: the spectral convolution as one Candle op over the
//! Burn kernel path's unfused chain (truncated R2C → CGEMM with the bias at
//! frequency 0 → zero-padded C2R), its backward as one more. (The transforms
//! alone run on Candle's stream without copies: [`crate::replay`].)
//!
//! Candle (cudarc) and CubeCL both work in the device's primary context, so a
//! device pointer of one is valid for the other, but CubeCL 0.10 cannot adopt
//! memory it did not allocate. Values therefore cross by device-to-device
//! copies (no trip through the host): inputs are copied on Candle's stream,
//! which is synchronised before CubeCL reads them; results are copied back on
//! Candle's stream once CubeCL's is synchronised, and their CubeCL buffers
//! live until Candle's stream next synchronises here.

use std::sync::{Arc, Mutex};

use burn::tensor::{DType, Shape as BurnShape};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use candle_core::backend::BackendDevice;
use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, CustomOp2, CustomOp3, DeviceLocation, Layout, Result, Shape, Tensor,
};
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use fno_ops::{SpectralConvBackend, SpectralConvSpec, SpectralImpl};

/// The Burn backend whose kernel path the convolution runs.
type Kernels = fno_ops::Cuda;

fn cuda_error(e: impl std::fmt::Debug) -> candle_core::Error {
    candle_core::Error::msg(format!("CUDA: {e:?}"))
}

/// CubeCL buffers whose values Candle's stream (keyed by its handle) may still
/// be copying out; dropped once that stream has synchronised.
static RETIRED: Mutex<Vec<(usize, Handle)>> = Mutex::new(Vec::new());

/// Sets the release threshold of `candle`'s GPU's default memory pool, from
/// which both Candle and CubeCL allocate, to keep what is freed (as PyTorch's
/// caching allocator does), once per GPU. At the default of 0, every stream
/// synchronisation here would hand freed memory back to the driver and the
/// next large allocation would map it again.
fn keep_freed_memory(candle: &candle_core::CudaDevice) -> Result<()> {
    static KEPT: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    let gpu = candle.cuda_stream().context().cu_device();
    let mut kept = KEPT.lock().expect("memory pools poisoned");
    if kept.contains(&gpu) {
        return Ok(());
    }
    let mut threshold = u64::MAX;
    // SAFETY: `gpu` is the device of a live context; the attribute takes a u64.
    unsafe {
        let pool = cudarc::driver::result::device::get_default_mem_pool(gpu).map_err(cuda_error)?;
        cudarc::driver::result::mem_pool::set_attribute(
            pool,
            cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .map_err(cuda_error)?;
    }
    kept.push(gpu);
    Ok(())
}

/// One crossing between Candle's stream on a GPU and CubeCL's client there.
struct Bridge {
    client: ComputeClient<CudaRuntime>,
    device: CudaDevice,
    candle: candle_core::CudaDevice,
    stream: Arc<CudaStream>,
}

impl Bridge {
    fn of(candle: &candle_core::CudaDevice) -> Result<Bridge> {
        let index = match candle.location() {
            DeviceLocation::Cuda { gpu_id } => gpu_id,
            other => candle_core::bail!("a CUDA storage on {other:?}"),
        };
        let device = CudaDevice { index };
        keep_freed_memory(candle)?;
        Ok(Bridge {
            client: CudaRuntime::client(&device),
            device,
            candle: candle.clone(),
            stream: candle.cuda_stream(),
        })
    }

    fn stream_key(&self) -> usize {
        self.stream.cu_stream() as usize
    }

    /// The device pointer behind a CubeCL handle.
    fn pointer(&self, handle: &Handle) -> Result<u64> {
        let resource = self.client.get_resource(handle.clone()).map_err(cuda_error)?;
        Ok(resource.resource().ptr)
    }

    /// The contiguous f32 values of `storage` (at `layout`) copied, on
    /// Candle's stream, into a new CubeCL buffer; readable after [`Self::ready`].
    fn to_cube(&self, storage: &CudaStorage, layout: &Layout) -> Result<CubeTensor<CudaRuntime>> {
        let (start, end) = layout
            .contiguous_offsets()
            .ok_or_else(|| candle_core::Error::msg("the CUDA ops take contiguous tensors"))?;
        let input = storage.as_cuda_slice::<f32>()?.slice(start..end);
        let bytes = (end - start) * 4;
        let handle = self.client.empty(bytes.max(4));
        if bytes > 0 {
            let (src, _read) = input.device_ptr(&self.stream);
            // SAFETY: both ranges are `bytes` long on this device, in its primary context.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(self.pointer(&handle)?, src, bytes, self.stream.cu_stream())
            }
            .map_err(cuda_error)?;
        }
        let shape = BurnShape::from(layout.dims().to_vec());
        Ok(CubeTensor::new_contiguous(
            self.client.clone(),
            self.device.clone(),
            shape,
            handle,
            DType::F32,
        ))
    }

    /// Waits for Candle's stream (the copies into CubeCL's buffers, and
    /// earlier copies out of retired ones, which are then dropped).
    fn ready(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda_error)?;
        let key = self.stream_key();
        RETIRED
            .lock()
            .expect("retired buffers poisoned")
            .retain(|(stream, _)| *stream != key);
        Ok(())
    }

    /// `parts` (f32, any layout) copied one after another into a new Candle
    /// buffer, once CubeCL has computed them.
    fn to_candle(&self, parts: Vec<CubeTensor<CudaRuntime>>) -> Result<CudaStorage> {
        let parts: Vec<_> = parts.into_iter().map(into_contiguous).collect();
        if let Some(t) = parts.iter().find(|t| t.dtype != DType::F32) {
            candle_core::bail!("a {:?} result where f32 was expected", t.dtype);
        }
        cubecl::future::block_on(self.client.sync()).map_err(cuda_error)?;
        let sizes: Vec<usize> = parts.iter().map(|t| t.meta.shape().num_elements()).collect();
        // SAFETY: every value is written by the copies below before Candle reads it.
        let mut out = unsafe { self.candle.alloc::<f32>(sizes.iter().sum::<usize>().max(1))? };
        let mut at = 0;
        let mut retired = RETIRED.lock().expect("retired buffers poisoned");
        for (t, n) in parts.into_iter().zip(sizes) {
            let mut view = out.slice_mut(at..at + n);
            let (dst, _write) = view.device_ptr_mut(&self.stream);
            // SAFETY: `n` values on each side, in the same context.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(dst, self.pointer(&t.handle)?, n * 4, self.stream.cu_stream())
            }
            .map_err(cuda_error)?;
            retired.push((self.stream_key(), t.handle));
            at += n;
        }
        Ok(CudaStorage::wrap_cuda_slice(out, self.candle.clone()))
    }
}

/// What the forward keeps for the backward, in CubeCL's buffers: the input's
/// retained spectrum and the weight it was contracted with.
struct Saved {
    x_hat: CubeTensor<CudaRuntime>,
    weight: CubeTensor<CudaRuntime>,
    x_shape: Vec<usize>,
}

/// The spectral convolution as one op on Candle's CUDA device, `spec` naming
/// the modes the weight holds (the caller crops it); applied as a
/// `CustomOp2` (x, weight) or, with a bias, a `CustomOp3`.
pub(crate) struct KernelConv {
    spec: SpectralConvSpec,
    keep_saved: bool,
    saved: Arc<Mutex<Option<Saved>>>,
}

impl KernelConv {
    fn forward(
        &self,
        x: (&CudaStorage, &Layout),
        w: (&CudaStorage, &Layout),
        bias: Option<(&CudaStorage, &Layout)>,
    ) -> Result<(CudaStorage, Shape)> {
        let bridge = Bridge::of(&x.0.device)?;
        let (xc, wc) = (bridge.to_cube(x.0, x.1)?, bridge.to_cube(w.0, w.1)?);
        let bias = bias.map(|(s, l)| bridge.to_cube(s, l)).transpose()?;
        bridge.ready()?;
        let (y, x_hat) =
            Kernels::spectral_conv_forward(xc, wc.clone(), bias, &self.spec, SpectralImpl::Unfused, self.keep_saved)
                .map_err(candle_core::Error::wrap)?;
        if let Some(x_hat) = x_hat {
            *self.saved.lock().expect("saved state poisoned") = Some(Saved {
                x_hat,
                weight: wc,
                x_shape: x.1.dims().to_vec(),
            });
        }
        let shape = Shape::from(y.meta.shape().to_vec());
        Ok((bridge.to_candle(vec![y])?, shape))
    }

    /// The gradients of `args` (x, the weight and, if given, the bias) for the
    /// output gradient `grad`; `None` for those that do not take part, which
    /// spares Candle accumulating them.
    fn backward(&self, args: &[&Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let with_bias = args.len() == 3;
        let op = KernelConvGrad {
            spec: self.spec.clone(),
            saved: self.saved.clone(),
            with_bias,
        };
        let packed = grad.contiguous()?.apply_op1_no_bwd(&op)?;
        let mut at = 0;
        args.iter()
            .map(|arg| {
                let n = arg.elem_count();
                let g = packed.narrow(0, at, n)?.reshape(arg.shape())?;
                at += n;
                Ok(arg.track_op().then_some(g))
            })
            .collect()
    }
}

/// A new convolution op; it keeps what its backward needs when `keep_saved`.
pub(crate) fn kernel_conv(spec: SpectralConvSpec, keep_saved: bool) -> KernelConv {
    KernelConv {
        spec,
        keep_saved,
        saved: Arc::new(Mutex::new(None)),
    }
}

fn cpu_refused(name: &str) -> Result<(CpuStorage, Shape)> {
    candle_core::bail!("{name} runs on Candle's CUDA device; on the CPU the convolution is composed of transforms")
}

impl CustomOp2 for KernelConv {
    fn name(&self) -> &'static str {
        "fno-spectral-conv"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        cpu_refused(CustomOp2::name(self))
    }

    fn cuda_fwd(&self, x: &CudaStorage, xl: &Layout, w: &CudaStorage, wl: &Layout) -> Result<(CudaStorage, Shape)> {
        self.forward((x, xl), (w, wl), None)
    }

    fn bwd(&self, x: &Tensor, w: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let mut grads = self.backward(&[x, w], grad)?.into_iter();
        Ok((grads.next().flatten(), grads.next().flatten()))
    }
}

impl CustomOp3 for KernelConv {
    fn name(&self) -> &'static str {
        "fno-spectral-conv-biased"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        cpu_refused(CustomOp3::name(self))
    }

    fn cuda_fwd(
        &self,
        x: &CudaStorage,
        xl: &Layout,
        w: &CudaStorage,
        wl: &Layout,
        b: &CudaStorage,
        bl: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        self.forward((x, xl), (w, wl), Some((b, bl)))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let mut grads = self.backward(&[x, w, b], grad)?.into_iter();
        Ok((grads.next().flatten(), grads.next().flatten(), grads.next().flatten()))
    }
}

/// The backward of a [`KernelConv`]: the output gradient → the input, weight
/// and bias gradients, flattened one after another in one buffer.
struct KernelConvGrad {
    spec: SpectralConvSpec,
    saved: Arc<Mutex<Option<Saved>>>,
    with_bias: bool,
}

impl CustomOp1 for KernelConvGrad {
    fn name(&self) -> &'static str {
        "fno-spectral-conv-grad"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        cpu_refused(self.name())
    }

    fn cuda_fwd(&self, grad: &CudaStorage, layout: &Layout) -> Result<(CudaStorage, Shape)> {
        let (x_hat, weight, x_shape) = match &*self.saved.lock().expect("saved state poisoned") {
            Some(saved) => (saved.x_hat.clone(), saved.weight.clone(), saved.x_shape.clone()),
            None => candle_core::bail!("the spectral convolution's backward needs a forward that kept its spectrum"),
        };
        let bridge = Bridge::of(&grad.device)?;
        let g = bridge.to_cube(grad, layout)?;
        bridge.ready()?;
        let grads = Kernels::spectral_conv_backward(
            x_hat,
            &x_shape,
            weight,
            g,
            self.with_bias,
            &self.spec,
            SpectralImpl::Unfused,
        )
        .map_err(candle_core::Error::wrap)?;
        let parts: Vec<_> = [Some(grads.x), Some(grads.weight), grads.bias]
            .into_iter()
            .flatten()
            .collect();
        let floats = parts.iter().map(|t| t.meta.shape().num_elements()).sum::<usize>();
        Ok((bridge.to_candle(parts)?, Shape::from(floats)))
    }
}

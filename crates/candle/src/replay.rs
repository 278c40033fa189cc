//! Our kernels on Candle's own CUDA stream and buffers, without copies: each
//! call is recorded on a CubeCL recorder (`fno-recorder`), whose launches the
//! executor of Candle's stream then enqueues there, reading and writing the
//! Candle buffers in place. Nothing waits on the host. One recorder and one
//! executor serve each Candle stream: the executor must see every upload its
//! recorder logs (a plan's tables at planning).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::{CudaStorage, Layout, Result};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use fno_kernels::fft::{DeviceFft, FftDesc, FftPlan};
use fno_recorder::{properties::DeviceSpec, Executor, RecordingDevice, RecordingRuntime, VRange};

fn replay_error(e: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::msg(format!("replaying on Candle's stream: {e}"))
}

/// A Candle stream's recorder, executor and plans.
struct Replayer {
    client: ComputeClient<RecordingRuntime>,
    executor: Executor,
    plans: HashMap<FftDesc, Arc<DeviceFft<RecordingRuntime>>>,
}

type Replayers = Mutex<HashMap<usize, Arc<Mutex<Replayer>>>>;

/// The replayer of `stream`, made on first use (a recorder of its own).
fn replayer(stream: &Arc<CudaStream>) -> Result<Arc<Mutex<Replayer>>> {
    static REPLAYERS: OnceLock<Replayers> = OnceLock::new();
    let mut all = REPLAYERS
        .get_or_init(Default::default)
        .lock()
        .expect("replayers poisoned");
    let key = stream.cu_stream() as usize;
    if let Some(found) = all.get(&key) {
        return Ok(found.clone());
    }
    // The recorder models the stream's GPU, so the kernels are those cubecl-cuda would compile there.
    let spec = DeviceSpec::of(stream.context()).map_err(|e| replay_error(format!("{e:?}")))?;
    let replayer = Replayer {
        client: RecordingRuntime::client(&RecordingDevice::modelling(spec)),
        executor: Executor::new(stream.clone(), spec).map_err(replay_error)?,
        plans: HashMap::new(),
    };
    let replayer = Arc::new(Mutex::new(replayer));
    all.insert(key, replayer.clone());
    Ok(replayer)
}

impl Replayer {
    fn plan(&mut self, desc: FftDesc) -> Result<Arc<DeviceFft<RecordingRuntime>>> {
        if let Some(fft) = self.plans.get(&desc) {
            return Ok(fft.clone());
        }
        let plan = FftPlan::new(desc.clone()).map_err(candle_core::Error::wrap)?;
        let fft = Arc::new(plan.on_device(&self.client).map_err(candle_core::Error::wrap)?);
        self.plans.insert(desc, fft.clone());
        Ok(fft)
    }

    /// The virtual page of a recorder buffer made by `empty`.
    fn page(&self, handle: &Handle) -> Result<VRange> {
        let resource = self.client.get_resource(handle.clone()).map_err(replay_error)?;
        Ok(*resource.resource())
    }
}

/// `desc`'s plan applied to the contiguous f32 values of `storage` (at
/// `layout`), into a new Candle buffer, on Candle's stream.
pub(crate) fn execute(desc: FftDesc, storage: &CudaStorage, layout: &Layout) -> Result<CudaStorage> {
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::msg("the CUDA ops take contiguous tensors"))?;
    let candle = &storage.device;
    let stream = candle.cuda_stream();
    let input = storage.as_cuda_slice::<f32>()?;
    let replayer = replayer(&stream)?;
    let mut replayer = replayer.lock().expect("replayer poisoned");
    let fft = replayer.plan(desc)?;
    let floats = fft.plan().output_floats();
    // SAFETY: the transform writes every output value before Candle reads it.
    let mut out = unsafe { candle.alloc::<f32>(floats.max(1))? };
    // The input's whole buffer stands for Candle's, the view at its real
    // offset, so the kernels see the alignment they will get.
    let whole = replayer.client.empty(input.len() * 4);
    let x = whole
        .clone()
        .offset_start(start as u64 * 4)
        .offset_end((input.len() - end) as u64 * 4);
    let y = replayer.client.empty(floats.max(1) * 4);
    fft.execute(&x, &y).map_err(candle_core::Error::wrap)?;
    replayer.client.flush().map_err(replay_error)?;
    let records = RecordingRuntime::log(&replayer.client).drain();
    let pages = (replayer.page(&whole)?, replayer.page(&y)?);
    {
        // The guards order Candle's other streams around these uses; dropped once enqueued.
        let (x_ptr, _read) = input.device_ptr(&stream);
        let (y_ptr, _write) = out.device_ptr_mut(&stream);
        let foreign = [(pages.0, x_ptr), (pages.1, y_ptr)];
        replayer.executor.replay(&records, &foreign).map_err(replay_error)?;
    }
    Ok(CudaStorage::wrap_cuda_slice(out, candle.clone()))
}

//! [`RecordingRuntime`]: CubeCL's CUDA compiler and an H100's properties over the recording server.

use crate::{
    log::Log,
    properties::{device_properties, memory_properties, DeviceSpec, H100_SXM},
    server::RecordingServer,
    CudaCompiler,
};
use cubecl::{
    device::{Device, DeviceId, DeviceService, ServerUtilitiesHandle},
    ir::{ContiguousElements, MatrixLayout, MmaProperties, TargetProperties},
    zspace::{striding::has_pitched_row_major_strides, Shape, Strides},
};
use cubecl_cpp::cuda::mma::contiguous_elements_cuda;
use cubecl_runtime::{
    allocator::PitchedMemoryLayoutPolicy,
    client::ComputeClient,
    logging::ServerLogger,
    runtime::Runtime,
    server::{ComputeServer, ServerUtilities},
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Device type id of recorders, apart from the ids CubeCL's runtimes use (0, 1, ...).
const RECORDER_TYPE_ID: u16 = 88;

/// A recorder; each index is its own server with its own log, modelling an
/// H100 unless [`RecordingDevice::modelling`] gave it another device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RecordingDevice {
    /// Which recorder.
    pub index: u16,
}

/// Indices [`RecordingDevice::modelling`] hands out start here, above those callers pick.
const MODELLED_FROM: u16 = 1 << 15;

/// The devices recorders model, by index, read when a recorder's server starts.
static MODELLED: Mutex<BTreeMap<u16, DeviceSpec>> = Mutex::new(BTreeMap::new());

impl RecordingDevice {
    /// A new recorder modelling a device of `spec` (e.g. [`DeviceSpec::of`] the GPU a replay runs on).
    pub fn modelling(spec: DeviceSpec) -> Self {
        let mut modelled = MODELLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let index = MODELLED_FROM + modelled.len() as u16;
        modelled.insert(index, spec);
        Self { index }
    }

    /// The device this recorder models.
    pub fn spec(&self) -> DeviceSpec {
        let modelled = MODELLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        modelled.get(&self.index).copied().unwrap_or(H100_SXM)
    }
}

impl Device for RecordingDevice {
    fn from_id(device_id: DeviceId) -> Self {
        Self {
            index: device_id.index_id,
        }
    }

    fn to_id(&self) -> DeviceId {
        DeviceId::new(RECORDER_TYPE_ID, self.index)
    }
}

impl DeviceService for RecordingServer {
    fn init(id: DeviceId) -> Self {
        let spec = RecordingDevice::from_id(id).spec();
        let props = device_properties(&spec);
        let memory = memory_properties(&spec);
        let policy = PitchedMemoryLayoutPolicy::new(memory.alignment as usize);
        let logger = Arc::new(ServerLogger::default());
        let utilities = ServerUtilities::new(props, logger, Log::default(), policy);
        RecordingServer::new(utilities, &memory)
    }

    fn utilities(&self) -> ServerUtilitiesHandle {
        ComputeServer::utilities(self) as ServerUtilitiesHandle
    }
}

/// A CubeCL runtime whose launches are recorded rather than run.
///
/// Kernels compile (later, by whoever replays the log) with [`CudaCompiler`],
/// the compiler cubecl-cuda uses, and see an H100's properties, so the code
/// they generate is cubecl-cuda's.
#[derive(Debug, Clone)]
pub struct RecordingRuntime;

impl RecordingRuntime {
    /// The log of `client`'s recorder. Call `client.flush()` first so that it is complete.
    pub fn log(client: &ComputeClient<Self>) -> &Log {
        client.info()
    }
}

impl Runtime for RecordingRuntime {
    type Compiler = CudaCompiler;
    type Server = RecordingServer;
    type Device = RecordingDevice;

    fn client(device: &Self::Device) -> ComputeClient<Self> {
        ComputeClient::load(device)
    }

    fn name(_: &ComputeClient<Self>) -> &'static str {
        "cuda-recorder"
    }

    // As cubecl-cuda (runtime.rs:363-365).
    fn require_array_lengths() -> bool {
        true
    }

    // As cubecl-cuda (runtime.rs:367-370).
    fn max_cube_count() -> (u32, u32, u32) {
        (i32::MAX as u32, u16::MAX as u32, u16::MAX as u32)
    }

    fn can_read_tensor(shape: &Shape, strides: &Strides) -> bool {
        has_pitched_row_major_strides(shape, strides)
    }

    // cubecl-cuda's, verbatim (runtime.rs:376-390).
    fn target_properties() -> TargetProperties {
        TargetProperties {
            mma: MmaProperties {
                register_size_bits: 32,
                const_plane_size: 32,
                register_layout_a: MatrixLayout::RowMajor,
                register_layout_b: MatrixLayout::ColMajor,
                register_layout_acc: MatrixLayout::RowMajor,
                register_duplication_a: 1,
                register_duplication_b: 1,
                register_duplication_acc: 1,
                contiguous_elements: ContiguousElements::new(contiguous_elements_cuda),
            },
        }
    }

    fn enumerate_devices(_: u16, _: &Log) -> Vec<DeviceId> {
        vec![RecordingDevice::default().to_id()]
    }
}

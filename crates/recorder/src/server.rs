//! The recording [`ComputeServer`]: memory is virtual, launches and uploads go to a [`Log`].

use crate::{
    log::{Log, Record, RecordedLaunch, RecordedWrite},
    storage::{VRange, VirtualStorage},
    CudaCompiler,
};
use cubecl::{
    backtrace::BackTrace, bytes::Bytes, future::DynFut, ir::MemoryDeviceProperties, profile::ProfileDuration,
    stream_id::StreamId,
};
use cubecl_runtime::{
    allocator::PitchedMemoryLayoutPolicy,
    compiler::CubeTask,
    logging::ServerLogger,
    memory_management::{
        ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
        MemoryUsage,
    },
    server::{
        Binding, ComputeServer, CopyDescriptor, CubeCount, ExecutionMode, IoError, KernelArguments, ProfileError,
        ProfilingToken, ServerCommunication, ServerError, ServerUtilities,
    },
    storage::ManagedResource,
};
use std::sync::Arc;

/// A server that runs nothing: it lays buffers out in virtual memory and writes
/// down every launch and upload it is given, for a later replay on a real stream.
#[derive(Debug)]
pub struct RecordingServer {
    memory: MemoryManagement<VirtualStorage>,
    utilities: Arc<ServerUtilities<Self>>,
    log: Log,
    // Refused submissions, reported by the next `flush` or `sync`.
    errors: Vec<ServerError>,
    // Counts launches; the memory manager orders reuse by it.
    cursor: u64,
}

impl RecordingServer {
    /// A server over `utilities`, whose `info` is the log it appends to.
    pub fn new(utilities: ServerUtilities<Self>, memory_props: &MemoryDeviceProperties) -> Self {
        let memory = MemoryManagement::from_configuration(
            VirtualStorage::new(memory_props.alignment, utilities.info.clone()),
            memory_props,
            // Each allocation its own page: foreign buffers map page by page at replay.
            MemoryConfiguration::ExclusivePages,
            utilities.logger.clone(),
            MemoryManagementOptions::new("Virtual memory"),
        );
        Self {
            memory,
            log: utilities.info.clone(),
            utilities: Arc::new(utilities),
            errors: Vec::new(),
            cursor: 0,
        }
    }

    fn resolve(&mut self, binding: Binding) -> Result<VRange, IoError> {
        self.memory
            .get_resource(binding.memory, binding.offset_start, binding.offset_end)
    }

    fn record_launch(
        &mut self,
        task: Box<dyn CubeTask<CudaCompiler>>,
        count: CubeCount,
        args: KernelArguments,
        mode: ExecutionMode,
    ) -> Result<(), ServerError> {
        let cube_count = match count {
            CubeCount::Static(x, y, z) => (x, y, z),
            CubeCount::Dynamic(_) => return Err(refused("dynamic cube counts", &*task)),
        };
        if !args.tensor_maps.is_empty() {
            return Err(refused("tensor maps", &*task));
        }
        let buffers = args
            .buffers
            .into_iter()
            .map(|binding| self.resolve(binding))
            .collect::<Result<Vec<_>, _>>()?;
        let mut kernel_id = task.id();
        kernel_id.mode(mode);
        self.cursor += 1;
        self.log.push(Record::Launch(RecordedLaunch {
            kernel_id,
            task: Arc::from(task),
            mode,
            cube_count,
            buffers,
            info: args.info.data,
            dynamic_metadata_offset: args.info.dynamic_metadata_offset,
        }));
        Ok(())
    }

    fn record_write(&mut self, descriptor: CopyDescriptor, bytes: Bytes) -> Result<(), IoError> {
        if !is_contiguous(&descriptor) {
            return Err(IoError::UnsupportedStrides {
                backtrace: BackTrace::capture(),
            });
        }
        let range = self.resolve(descriptor.handle)?;
        self.log.push(Record::Write(RecordedWrite {
            range,
            bytes: bytes.to_vec(),
        }));
        Ok(())
    }

    fn take_errors(&mut self) -> Result<(), ServerError> {
        if self.errors.is_empty() {
            return Ok(());
        }
        Err(ServerError::ServerUnhealthy {
            errors: core::mem::take(&mut self.errors),
            backtrace: BackTrace::capture(),
        })
    }
}

fn refused(what: &str, task: &dyn CubeTask<CudaCompiler>) -> ServerError {
    ServerError::Generic {
        reason: format!("the recorder cannot replay {what} (kernel {})", task.name()),
        backtrace: BackTrace::capture(),
    }
}

fn cannot_read() -> ServerError {
    ServerError::Io(IoError::UnsupportedIoOperation {
        backtrace: BackTrace::capture(),
    })
}

// Row-major and dense: the only layout an upload of plain bytes can describe.
fn is_contiguous(descriptor: &CopyDescriptor) -> bool {
    let mut expected = 1;
    for (dim, stride) in descriptor.shape.iter().zip(descriptor.strides.iter()).rev() {
        if *dim > 1 && *stride != expected {
            return false;
        }
        expected *= *dim;
    }
    true
}

impl ComputeServer for RecordingServer {
    type Kernel = Box<dyn CubeTask<CudaCompiler>>;
    type Info = Log;
    type MemoryLayoutPolicy = PitchedMemoryLayoutPolicy;
    type Storage = VirtualStorage;

    fn initialize_memory(&mut self, memory: ManagedMemoryHandle, size: u64, _: StreamId) {
        // As cubecl-cuda's `Command::empty`: reserve a slice, then bind the client's handle to it.
        let bound = self
            .memory
            .reserve(size)
            .and_then(|reserved| self.memory.bind(reserved, memory, self.cursor));
        if let Err(err) = bound {
            self.errors.push(err.into());
        }
    }

    fn logger(&self) -> Arc<ServerLogger> {
        self.utilities.logger.clone()
    }

    fn utilities(&self) -> Arc<ServerUtilities<Self>> {
        self.utilities.clone()
    }

    fn read(&mut self, _: Vec<CopyDescriptor>, _: StreamId) -> DynFut<Result<Vec<Bytes>, ServerError>> {
        let err = cannot_read();
        Box::pin(async move { Err(err) })
    }

    fn write(&mut self, descriptors: Vec<(CopyDescriptor, Bytes)>, _: StreamId) {
        for (descriptor, bytes) in descriptors {
            if let Err(err) = self.record_write(descriptor, bytes) {
                self.errors.push(err.into());
            }
        }
    }

    fn sync(&mut self, _: StreamId) -> DynFut<Result<(), ServerError>> {
        let result = self.take_errors();
        Box::pin(async move { result })
    }

    fn get_resource(&mut self, binding: Binding, _: StreamId) -> Result<ManagedResource<VRange>, ServerError> {
        let memory = binding.memory.clone();
        Ok(ManagedResource::new(memory, self.resolve(binding)?))
    }

    unsafe fn launch(
        &mut self,
        kernel: Self::Kernel,
        count: CubeCount,
        args: KernelArguments,
        mode: ExecutionMode,
        _: StreamId,
    ) {
        if let Err(err) = self.record_launch(kernel, count, args, mode) {
            self.errors.push(err);
        }
    }

    fn flush(&mut self, _: StreamId) -> Result<(), ServerError> {
        self.take_errors()
    }

    fn memory_usage(&mut self, _: StreamId) -> Result<MemoryUsage, ServerError> {
        Ok(self.memory.memory_usage())
    }

    fn memory_cleanup(&mut self, _: StreamId) {
        self.memory.cleanup(true);
    }

    fn start_profile(&mut self, _: StreamId) -> Result<ProfilingToken, ServerError> {
        Err(ServerError::Generic {
            reason: "the recorder runs nothing, so it cannot time anything".into(),
            backtrace: BackTrace::capture(),
        })
    }

    fn end_profile(&mut self, _: StreamId, _: ProfilingToken) -> Result<ProfileDuration, ProfileError> {
        Err(ProfileError::Unknown {
            reason: "the recorder runs nothing, so it cannot time anything".into(),
            backtrace: BackTrace::capture(),
        })
    }

    fn allocation_mode(&mut self, mode: MemoryAllocationMode, _: StreamId) {
        self.memory.mode(mode);
    }
}

impl ServerCommunication for RecordingServer {
    const SERVER_COMM_ENABLED: bool = false;
}

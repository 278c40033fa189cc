//! What the recording server writes down: pages, launches and uploads, in submission order.

use crate::{storage::VRange, CudaCompiler};
use cubecl_runtime::{compiler::CubeTask, id::KernelId, server::ExecutionMode};
use std::sync::{Arc, Mutex, MutexGuard};

/// One kernel launch as the generated `launch` code packed it.
pub struct RecordedLaunch {
    /// The kernel's cache key, with the execution mode set (as cubecl-cuda keys its cache).
    pub kernel_id: KernelId,
    /// The kernel itself, to compile later with [`CudaCompiler`].
    pub task: Arc<dyn CubeTask<CudaCompiler>>,
    /// Checked or unchecked, as passed to `compile`.
    pub mode: ExecutionMode,
    /// Grid size in cubes.
    pub cube_count: (u32, u32, u32),
    /// The buffer arguments' ranges, in argument order, offsets applied.
    pub buffers: Vec<VRange>,
    /// Scalars, static metadata then dynamic metadata, in u64 words.
    pub info: Vec<u64>,
    /// First word of the dynamic metadata in `info`.
    pub dynamic_metadata_offset: usize,
}

impl core::fmt::Debug for RecordedLaunch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecordedLaunch")
            .field("kernel", &self.task.name())
            .field("cube_count", &self.cube_count)
            .field("buffers", &self.buffers)
            .field("info", &self.info)
            .field("dynamic_metadata_offset", &self.dynamic_metadata_offset)
            .finish()
    }
}

/// A host-to-device upload (twiddle tables, per-launch scalar arrays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedWrite {
    /// Destination, offsets applied.
    pub range: VRange,
    /// The bytes to upload.
    pub bytes: Vec<u8>,
}

/// One entry of the log.
#[derive(Debug)]
pub enum Record {
    /// A page of virtual memory comes to life (a replay backs it with device memory).
    Alloc(VRange),
    /// A page is freed.
    Free(VRange),
    /// A kernel launch.
    Launch(RecordedLaunch),
    /// An upload.
    Write(RecordedWrite),
}

/// The log shared between the server (which appends) and the caller (who drains).
///
/// The server runs on CubeCL's device thread, so call `client.flush()` before
/// [`Log::drain`] to be sure every submitted launch has been written down.
#[derive(Debug, Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Record>>>);

impl Log {
    /// Takes every record written so far, oldest first.
    pub fn drain(&self) -> Vec<Record> {
        core::mem::take(&mut *self.lock())
    }

    pub(crate) fn push(&self, record: Record) {
        self.lock().push(record);
    }

    // A panic while holding the lock cannot leave the Vec half-written, so a poisoned lock is usable.
    fn lock(&self) -> MutexGuard<'_, Vec<Record>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

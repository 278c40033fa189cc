//! Fake device memory: address ranges handed out by a bump allocator.

use crate::log::{Log, Record};
use cubecl_runtime::{
    server::IoError,
    storage::{ComputeStorage, StorageHandle, StorageId},
};
use std::collections::HashMap;

/// The first virtual address; non-zero so that a range never looks like a null pointer.
pub const VIRTUAL_BASE: u64 = 1 << 32;

/// A byte range of virtual memory, as a launch or a write sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VRange {
    /// First byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// A [`ComputeStorage`] whose allocations are address ranges and nothing else.
///
/// Ranges are never reused, even after `dealloc`, so a log stays unambiguous:
/// one virtual address names one allocation for the whole life of the storage.
/// Each page it allocates or frees goes to its log, so that a replay can back
/// the pages with device memory for as long as they live.
#[derive(Debug)]
pub struct VirtualStorage {
    next: u64,
    alignment: u64,
    pages: HashMap<StorageId, VRange>,
    log: Log,
}

impl VirtualStorage {
    /// A storage whose ranges start at multiples of `alignment` bytes, logging its pages to `log`.
    pub fn new(alignment: u64, log: Log) -> Self {
        Self {
            next: VIRTUAL_BASE,
            alignment: alignment.max(1),
            pages: HashMap::new(),
            log,
        }
    }
}

impl ComputeStorage for VirtualStorage {
    type Resource = VRange;

    fn alignment(&self) -> usize {
        self.alignment as usize
    }

    fn get(&mut self, handle: &StorageHandle) -> VRange {
        // The memory manager only asks for ids it allocated; an unknown id maps to 0
        // so that a bug shows as a null range in the log rather than a panic.
        let base = self.pages.get(&handle.id).map_or(0, |page| page.addr);
        VRange {
            addr: base + handle.offset(),
            len: handle.size(),
        }
    }

    fn alloc(&mut self, size: u64) -> Result<StorageHandle, IoError> {
        let id = StorageId::new();
        let base = self.next;
        self.next = (base + size).next_multiple_of(self.alignment);
        let page = VRange { addr: base, len: size };
        self.pages.insert(id, page);
        self.log.push(Record::Alloc(page));
        Ok(StorageHandle::new(
            id,
            cubecl_runtime::storage::StorageUtilization { offset: 0, size },
        ))
    }

    fn dealloc(&mut self, id: StorageId) {
        if let Some(page) = self.pages.remove(&id) {
            self.log.push(Record::Free(page));
        }
    }

    fn flush(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_aligned_disjoint_and_never_reused() {
        let mut storage = VirtualStorage::new(512, Log::default());
        let a = storage.alloc(1000).unwrap();
        let b = storage.alloc(24).unwrap();
        let (ra, rb) = (storage.get(&a), storage.get(&b));
        assert_eq!(
            ra,
            VRange {
                addr: VIRTUAL_BASE,
                len: 1000
            }
        );
        assert_eq!(
            rb,
            VRange {
                addr: VIRTUAL_BASE + 1024,
                len: 24
            }
        );
        storage.dealloc(a.id);
        let c = storage.alloc(1000).unwrap();
        assert_eq!(storage.get(&c).addr, VIRTUAL_BASE + 1536);
    }

    #[test]
    fn offsets_move_the_range() {
        let mut storage = VirtualStorage::new(512, Log::default());
        let page = storage.alloc(4096).unwrap();
        let view = page.offset_start(256).offset_end(1024);
        assert_eq!(
            storage.get(&view),
            VRange {
                addr: VIRTUAL_BASE + 256,
                len: 2816
            }
        );
    }
}

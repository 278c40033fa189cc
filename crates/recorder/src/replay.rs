//! What a replay of the log on a real device needs, computed without one: the
//! device address behind each virtual range, and each launch's kernel
//! parameters in the order cubecl-cuda passes them.

use crate::{
    log::{Record, RecordedLaunch},
    storage::VRange,
};
use std::{collections::BTreeMap, fmt};

/// Who holds a page's device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A caller's buffer (a Candle slice) at this device address.
    Foreign(u64),
    /// Memory the replay allocates for the page, at this address once it has.
    Internal(Option<u64>),
}

/// A virtual range that no live page holds, or a page not yet backed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// The range lies outside every live page.
    Unmapped(VRange),
    /// The range's page is the replay's to allocate and has no memory yet.
    Unbacked(VRange),
    /// A foreign buffer was registered over a page it does not fit.
    ForeignMismatch { page: VRange, foreign: VRange },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Unmapped(r) => write!(f, "virtual range {:#x}+{} lies in no live page", r.addr, r.len),
            ReplayError::Unbacked(r) => write!(f, "virtual range {:#x}+{} has no device memory yet", r.addr, r.len),
            ReplayError::ForeignMismatch { page, foreign } => write!(
                f,
                "foreign buffer {:#x}+{} does not start page {:#x}+{}",
                foreign.addr, foreign.len, page.addr, page.len
            ),
        }
    }
}

impl std::error::Error for ReplayError {}

/// The recorder's live pages, each with its backing: kept across drains of
/// the log, as a plan's tables outlive the launch that first used them.
#[derive(Clone, Debug, Default)]
pub struct AddressSpace {
    pages: BTreeMap<u64, (u64, Backing)>,
}

impl AddressSpace {
    /// Follows the log's page records: an allocated page becomes internal and
    /// unbacked, a freed one goes (its backing, if any, is returned to be released).
    pub fn apply(&mut self, record: &Record) -> Option<(VRange, Backing)> {
        match record {
            Record::Alloc(page) => {
                self.pages.insert(page.addr, (page.len, Backing::Internal(None)));
                None
            }
            Record::Free(page) => self
                .pages
                .remove(&page.addr)
                .map(|(len, backing)| (VRange { addr: page.addr, len }, backing)),
            Record::Launch(_) | Record::Write(_) => None,
        }
    }

    /// Pages the replay must allocate before it can translate their ranges.
    pub fn unbacked(&self) -> Vec<VRange> {
        self.pages
            .iter()
            .filter(|(_, (_, backing))| *backing == Backing::Internal(None))
            .map(|(&addr, &(len, _))| VRange { addr, len })
            .collect()
    }

    /// Backs the page that starts at `page.addr`: `backing` is a foreign
    /// buffer's address or the replay's own allocation.
    pub fn back(&mut self, page: VRange, backing: Backing) -> Result<(), ReplayError> {
        match self.pages.get_mut(&page.addr) {
            Some((len, slot)) if *len >= page.len => {
                *slot = backing;
                Ok(())
            }
            Some(&mut (len, _)) => Err(ReplayError::ForeignMismatch {
                page: VRange { addr: page.addr, len },
                foreign: page,
            }),
            None => Err(ReplayError::Unmapped(page)),
        }
    }

    /// The device address of `range`'s first byte.
    pub fn translate(&self, range: VRange) -> Result<u64, ReplayError> {
        let (&base, &(len, backing)) = self
            .pages
            .range(..=range.addr)
            .next_back()
            .ok_or(ReplayError::Unmapped(range))?;
        if range.addr + range.len > base + len {
            return Err(ReplayError::Unmapped(range));
        }
        match backing {
            Backing::Foreign(ptr) | Backing::Internal(Some(ptr)) => Ok(ptr + (range.addr - base)),
            Backing::Internal(None) => Err(ReplayError::Unbacked(range)),
        }
    }
}

/// A launch's kernel parameters, in cubecl-cuda's order with grid constants
/// on (vendor/cubecl-cuda/src/compute/server.rs, `launch_checked`, and
/// context.rs, `execute_task`): each buffer's device address, then the
/// dynamic metadata (uploaded to a buffer of its own) if any, then the info
/// struct (scalars and static metadata) by value if the kernel has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchParams {
    pub buffers: Vec<u64>,
    /// Words to upload; the kernel gets the upload's address after the buffers.
    pub dynamic_metadata: Option<Vec<u64>>,
    /// The info struct's words (those before the dynamic metadata), passed by value last.
    pub info: Option<Vec<u64>>,
}

impl LaunchParams {
    /// `launch`'s parameters with its buffers translated through `space`.
    pub fn of(launch: &RecordedLaunch, space: &AddressSpace) -> Result<Self, ReplayError> {
        let buffers = launch
            .buffers
            .iter()
            .map(|&range| space.translate(range))
            .collect::<Result<Vec<_>, _>>()?;
        let (info, dynamic) = launch
            .info
            .split_at(launch.dynamic_metadata_offset.min(launch.info.len()));
        Ok(Self {
            buffers,
            dynamic_metadata: (!dynamic.is_empty()).then(|| dynamic.to_vec()),
            info: (!info.is_empty()).then(|| info.to_vec()),
        })
    }

    /// How many pointers the kernel takes: buffers, then the metadata buffer.
    pub fn pointer_count(&self) -> usize {
        self.buffers.len() + usize::from(self.dynamic_metadata.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: VRange = VRange {
        addr: 1 << 32,
        len: 4096,
    };
    const OTHER: VRange = VRange {
        addr: (1 << 32) + 8192,
        len: 512,
    };

    fn space() -> AddressSpace {
        let mut space = AddressSpace::default();
        space.apply(&Record::Alloc(PAGE));
        space.apply(&Record::Alloc(OTHER));
        space
    }

    #[test]
    fn ranges_translate_by_their_page_and_offset() {
        let mut space = space();
        assert_eq!(space.unbacked(), [PAGE, OTHER]);
        let inner = VRange {
            addr: PAGE.addr + 256,
            len: 1024,
        };
        assert_eq!(space.translate(inner), Err(ReplayError::Unbacked(inner)));
        space.back(PAGE, Backing::Foreign(0x7f00_0000)).unwrap();
        space.back(OTHER, Backing::Internal(Some(0x9000_0000))).unwrap();
        assert!(space.unbacked().is_empty());
        assert_eq!(space.translate(inner), Ok(0x7f00_0000 + 256));
        assert_eq!(
            space.translate(VRange {
                addr: OTHER.addr + 8,
                len: 8
            }),
            Ok(0x9000_0008)
        );
    }

    #[test]
    fn ranges_outside_live_pages_are_refused() {
        let mut space = space();
        space.back(PAGE, Backing::Foreign(0x1000)).unwrap();
        // Past the page's end, between pages, below every page.
        let over = VRange {
            addr: PAGE.addr + 4000,
            len: 200,
        };
        let between = VRange {
            addr: PAGE.addr + 5000,
            len: 8,
        };
        let below = VRange { addr: 16, len: 8 };
        for range in [over, between, below] {
            assert_eq!(space.translate(range), Err(ReplayError::Unmapped(range)));
        }
        // A freed page goes with its backing.
        assert_eq!(space.apply(&Record::Free(PAGE)), Some((PAGE, Backing::Foreign(0x1000))));
        let start = VRange {
            addr: PAGE.addr,
            len: 8,
        };
        assert_eq!(space.translate(start), Err(ReplayError::Unmapped(start)));
        // A foreign buffer larger than the page it is meant to back.
        let big = VRange {
            addr: OTHER.addr,
            len: 1024,
        };
        assert!(matches!(
            space.back(big, Backing::Foreign(1)),
            Err(ReplayError::ForeignMismatch { .. })
        ));
    }
}

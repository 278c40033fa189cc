//! The memory pools of the GPU runtimes: how a run trades device memory for
//! speed ([`MemoryMode`]), and the pool layout each mode asks CubeCL for.
//!
//! CubeCL's own layout slices tensors out of pages of up to a quarter of the
//! device, kept for the whole run: on a large card a tensor of tens of MiB
//! holds part of a page of GiBs. The balanced layout sizes the pages by the run's widest
//! activation where the caller knows it (training): tensors sliced out of
//! pages a few times that size, CubeCL's way, and larger ones in pages of
//! their own; where it is unknown, each tensor above 1 MiB gets a page of its
//! own from size classes 1.25× apart. `ComputeClient::memory_cleanup` hands
//! the pages no tensor holds back to the driver.

use std::fmt;
use std::str::FromStr;

use cubecl::MemoryConfiguration;
use cubecl_runtime::memory_management::{MemoryPoolOptions, PoolType};

/// How a run trades device memory for speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryMode {
    /// CubeCL's pools: large pages sliced among tensors, never returned.
    Fast,
    /// Pages fitted to the tensors, returned between phases of a run.
    #[default]
    Balanced,
    /// Balanced's pools, for runs that also hold fewer live tensors by
    /// computing some again (training reruns each block in the backward pass).
    Small,
}

impl MemoryMode {
    pub const ALL: [MemoryMode; 3] = [MemoryMode::Fast, MemoryMode::Balanced, MemoryMode::Small];

    /// The name configurations and flags give it.
    pub fn name(self) -> &'static str {
        match self {
            MemoryMode::Fast => "fast",
            MemoryMode::Balanced => "balanced",
            MemoryMode::Small => "small",
        }
    }
}

impl FromStr for MemoryMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|m| m.name()).collect();
            format!("unknown memory mode '{s}' (expected one of {})", names.join(", "))
        })
    }
}

impl fmt::Display for MemoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const MIB: u64 = 1 << 20;
/// Tensors up to this size share pages (weights, biases, scalars).
const SHARED_MAX: u64 = MIB;
/// The pages they share.
const SHARED_PAGE: u64 = 16 * MIB;
/// Successive size classes of own pages: a page serves a request at least
/// 1/CLASS_RATIO its size.
const CLASS_RATIO: f64 = 1.25;
/// Allocations (as the pools count them) after which a page unused
/// throughout is freed, on runtimes that check periodically (wgpu); CUDA
/// frees only on `ComputeClient::memory_cleanup`.
const DEALLOC_PERIOD: u64 = 5000;

/// Class bounds are multiples of this: of every runtime's buffer alignment
/// (512 on CUDA, at most 256 on wgpu), as CubeCL requires.
const CLASS_ALIGNMENT: u64 = 4096;

/// The largest page of the balanced layout's sliced pools, in widest
/// activations: a few tensors a page (larger pages fragment, smaller ones
/// leave more of theirs empty).
const PAGE_OF_WIDEST: u64 = 4;
/// The smallest of those pages (CubeCL's own layout stops its sliced pools there).
const SMALLEST_TOP_PAGE: u64 = 32 * MIB;

/// The pool layout of `mode` on a device whose largest buffer is `largest`
/// bytes, for a run whose widest activation is `widest` bytes where known.
pub fn configuration(mode: MemoryMode, largest: u64, widest: Option<u64>) -> MemoryConfiguration {
    let pool_options = match (mode, widest) {
        (MemoryMode::Fast, _) => return MemoryConfiguration::default(),
        (MemoryMode::Balanced | MemoryMode::Small, Some(widest)) => sliced(widest, largest),
        (MemoryMode::Balanced | MemoryMode::Small, None) => fitted(largest),
    };
    MemoryConfiguration::Custom { pool_options }
}

/// Zero-byte buffers alone: they cannot be slices (CubeCL's layout starts so too).
fn empty_buffers() -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::ExclusivePages { max_alloc_size: 0 },
        dealloc_period: None,
    }
}

fn own_pages(max_alloc_size: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::ExclusivePages { max_alloc_size },
        dealloc_period: Some(DEALLOC_PERIOD),
    }
}

fn sliced_pages(page_size: u64, max_slice_size: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::SlicedPages {
            page_size,
            max_slice_size,
        },
        dealloc_period: None,
    }
}

/// CubeCL's sliced pools under a top page of [`PAGE_OF_WIDEST`] widest
/// activations (a power of two): pages a quarter of the one above, each
/// taking slices up to half, a quarter, … of its size; own pages above it.
fn sliced(widest: u64, largest: u64) -> Vec<MemoryPoolOptions> {
    let top = widest
        .saturating_mul(PAGE_OF_WIDEST)
        .next_power_of_two()
        .clamp(SMALLEST_TOP_PAGE, largest.max(SMALLEST_TOP_PAGE));
    let (mut page, mut levels) = (top, Vec::new());
    while page >= SMALLEST_TOP_PAGE {
        page /= 4;
        levels.push(sliced_pages(page, page >> (levels.len() + 1)));
    }
    levels.reverse();
    let mut pools = vec![empty_buffers()];
    pools.extend(levels);
    pools.push(sliced_pages(top, top));
    pools.extend(size_classes(top, largest).into_iter().map(own_pages));
    pools
}

/// Small tensors sliced out of shared pages, then one pool of own pages a
/// size class up to `largest`.
fn fitted(largest: u64) -> Vec<MemoryPoolOptions> {
    let mut pools = vec![empty_buffers(), sliced_pages(SHARED_PAGE, SHARED_MAX)];
    pools.extend(size_classes(SHARED_MAX, largest).into_iter().map(own_pages));
    pools
}

/// The upper bounds of own-page classes: from just above `from` up by
/// [`CLASS_RATIO`], aligned, the last one `largest` (none where `from` reaches it).
fn size_classes(from: u64, largest: u64) -> Vec<u64> {
    let top = largest.next_multiple_of(CLASS_ALIGNMENT);
    let mut classes = Vec::new();
    if from >= top {
        return classes;
    }
    let mut bound = from as f64;
    loop {
        bound *= CLASS_RATIO;
        let aligned = (bound as u64).next_multiple_of(CLASS_ALIGNMENT);
        if aligned >= top {
            classes.push(top);
            return classes;
        }
        classes.push(aligned);
    }
}

/// Pools for CUDA devices initialised after this call (the process's first
/// device work), for `mode` and a run whose widest activation is `widest`
/// bytes where known.
#[cfg(feature = "cuda")]
pub fn install_cuda(mode: MemoryMode, widest: Option<u64>) {
    // A quarter of the device is the largest page CubeCL's own layout makes;
    // beyond one device's memory no buffer can go.
    let largest = cuda_total_memory().unwrap_or(u64::MAX >> 8);
    cubecl::cuda::set_memory_configuration(configuration(mode, largest, widest));
}

#[cfg(feature = "cuda")]
fn cuda_total_memory() -> Option<u64> {
    use cudarc::driver::result;
    if !crate::backend::cuda_available() {
        return None;
    }
    let device = result::device::get(0).ok()?;
    // SAFETY: `device` was returned by the driver for index 0.
    unsafe { result::device::total_mem(device) }.ok().map(|b| b as u64)
}

/// Initialises wgpu's default device with the pools of `mode` (and `widest`,
/// as [`install_cuda`]); call before any work on it (wgpu's other devices
/// keep CubeCL's pools). Only the process's first call does anything.
#[cfg(feature = "wgpu")]
pub fn init_wgpu(mode: MemoryMode, widest: Option<u64>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| init_wgpu_now(mode, widest));
}

#[cfg(feature = "wgpu")]
fn init_wgpu_now(mode: MemoryMode, widest: Option<u64>) {
    use cubecl::wgpu::{init_setup, AutoGraphicsApi, RuntimeOptions, WgpuDevice};
    // wgpu refuses buffers above the adapter's limit when they are made; the
    // classes only have to reach that far.
    const WGPU_LARGEST: u64 = 1 << 36;
    let options = RuntimeOptions {
        memory_config: configuration(mode, WGPU_LARGEST, widest),
        ..Default::default()
    };
    init_setup::<AutoGraphicsApi>(&WgpuDevice::default(), options);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(p: &MemoryPoolOptions, size: u64) -> bool {
        match p.pool_type {
            PoolType::ExclusivePages { max_alloc_size } => size <= max_alloc_size,
            PoolType::SlicedPages { max_slice_size, .. } => size <= max_slice_size,
        }
    }

    fn pools(largest: u64, widest: Option<u64>) -> Vec<MemoryPoolOptions> {
        match configuration(MemoryMode::Balanced, largest, widest) {
            MemoryConfiguration::Custom { pool_options } => pool_options,
            other => panic!("the balanced mode is a layout of ours, not {other:?}"),
        }
    }

    #[test]
    fn classes_grow_by_the_ratio_up_to_the_largest_buffer() {
        let largest = 80 * 1024 * MIB;
        let classes = size_classes(SHARED_MAX, largest);
        assert_eq!(*classes.last().unwrap(), largest);
        assert!(classes.iter().all(|c| c % CLASS_ALIGNMENT == 0));
        assert!(classes[0] > SHARED_MAX && classes[0] <= SHARED_MAX * 5 / 4 + CLASS_ALIGNMENT);
        for pair in classes.windows(2) {
            let most = pair[0] as f64 * CLASS_RATIO + CLASS_ALIGNMENT as f64;
            assert!(pair[1] > pair[0] && pair[1] as f64 <= most, "{pair:?}");
        }
        // 1 MiB → 80 · 1024 MiB by 1.25×: 51 classes.
        assert_eq!(classes.len(), 51);
        assert!(size_classes(largest, largest).is_empty());
    }

    #[test]
    fn without_a_width_every_size_finds_a_pool_that_wastes_at_most_a_class() {
        let largest = 8 * 1024 * MIB;
        let pool_options = pools(largest, None);
        for size in [0, 1, 4096, MIB, MIB + 1, 37 * MIB + 3, 5000 * MIB, largest] {
            let pool = pool_options
                .iter()
                .find(|p| accepts(p, size))
                .expect("a pool for every size");
            if let PoolType::ExclusivePages { max_alloc_size } = pool.pool_type {
                if size > SHARED_MAX {
                    // The request's class holds pages of at most its bound.
                    assert!(
                        max_alloc_size as f64 <= size as f64 * CLASS_RATIO + CLASS_ALIGNMENT as f64,
                        "{size}"
                    );
                }
            }
        }
        assert!(!pool_options.iter().any(|p| accepts(p, largest + 1)));
    }

    #[test]
    fn a_known_width_slices_pages_of_a_few_widest_tensors() {
        let largest = 80 * 1024 * MIB;
        // Darcy 128², batch 16, lifting 128 channels: 128 MiB tensors.
        let options = pools(largest, Some(128 * MIB));
        let sliced: Vec<(u64, u64)> = (options.iter())
            .filter_map(|p| match p.pool_type {
                PoolType::SlicedPages {
                    page_size,
                    max_slice_size,
                } => Some((page_size / MIB, max_slice_size / MIB)),
                _ => None,
            })
            .collect();
        assert_eq!(sliced, [(8, 1), (32, 8), (128, 64), (512, 512)]);
        // The widest tensor shares a page with three others; larger ones get their own.
        let first = |size: u64| options.iter().position(|p| accepts(p, size)).unwrap();
        assert!(
            matches!(options[first(128 * MIB)].pool_type, PoolType::SlicedPages { page_size, .. } if page_size == 512 * MIB)
        );
        assert!(
            matches!(options[first(600 * MIB)].pool_type, PoolType::ExclusivePages { max_alloc_size } if max_alloc_size < 800 * MIB)
        );
        assert!(accepts(options.last().unwrap(), largest) && !accepts(options.last().unwrap(), largest + 1));
        // Narrow runs keep CubeCL's smallest top page; one wider than the device, the device.
        assert_eq!(
            pools(largest, Some(1)).len(),
            1 + 2 + size_classes(32 * MIB, largest).len()
        );
        assert!(
            matches!(pools(1 << 30, Some(1 << 40)).last().unwrap().pool_type, PoolType::SlicedPages { page_size, .. } if page_size == 1 << 30)
        );
    }

    #[test]
    fn modes_parse_from_their_names_only() {
        for mode in MemoryMode::ALL {
            assert_eq!(mode.name().parse::<MemoryMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.name());
        }
        let err = "tiny".parse::<MemoryMode>().unwrap_err();
        assert!(err.contains("'tiny'") && err.contains("fast, balanced, small"), "{err}");
        assert!(matches!(
            configuration(MemoryMode::Fast, 1 << 30, Some(MIB)),
            MemoryConfiguration::SubSlices
        ));
    }
}

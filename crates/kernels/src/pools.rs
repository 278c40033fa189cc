//! The memory pools of the GPU runtimes: how a run trades device memory for
//! speed ([`MemoryMode`]), and the pool layout each mode asks CubeCL for.
//!
//! CubeCL's own layout slices tensors out of pages of up to a quarter of the
//! device, kept for the whole run: a 40 MiB tensor may hold a 1.25 GiB page on
//! an 80 GB card. The fitted layout gives each tensor above 1 MiB a page of
//! its own, from size classes 1.25× apart, and `ComputeClient::memory_cleanup`
//! hands the pages no tensor holds back to the driver.

use std::fmt;
use std::str::FromStr;

use cubecl::MemoryConfiguration;
use cubecl_runtime::memory_management::{MemoryPoolOptions, PoolType};

/// How a run trades device memory for speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryMode {
    /// CubeCL's pools: large pages sliced among tensors, never returned.
    Fast,
    /// Pages fitted to the tensors, returned between epochs.
    #[default]
    Balanced,
}

impl MemoryMode {
    pub const NAMES: [&'static str; 2] = ["fast", "balanced"];
}

impl FromStr for MemoryMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fast" => Ok(MemoryMode::Fast),
            "balanced" => Ok(MemoryMode::Balanced),
            other => Err(format!(
                "unknown memory mode '{other}' (expected {})",
                MemoryMode::NAMES.join(" or ")
            )),
        }
    }
}

impl fmt::Display for MemoryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryMode::Fast => "fast",
            MemoryMode::Balanced => "balanced",
        })
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

/// The pool layout of `mode` on a device whose largest buffer is `largest` bytes.
pub fn configuration(mode: MemoryMode, largest: u64) -> MemoryConfiguration {
    match mode {
        MemoryMode::Fast => MemoryConfiguration::default(),
        MemoryMode::Balanced => MemoryConfiguration::Custom {
            pool_options: fitted(largest),
        },
    }
}

/// Empty buffers alone, small tensors sliced out of shared pages, then one
/// exclusive pool per size class up to `largest`.
fn fitted(largest: u64) -> Vec<MemoryPoolOptions> {
    let mut pools = vec![
        // Zero-byte buffers cannot be slices (CubeCL's own layout starts so too).
        MemoryPoolOptions {
            pool_type: PoolType::ExclusivePages { max_alloc_size: 0 },
            dealloc_period: None,
        },
        MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: SHARED_PAGE,
                max_slice_size: SHARED_MAX,
            },
            dealloc_period: None,
        },
    ];
    pools.extend(size_classes(largest).into_iter().map(|max| MemoryPoolOptions {
        pool_type: PoolType::ExclusivePages { max_alloc_size: max },
        dealloc_period: Some(DEALLOC_PERIOD),
    }));
    pools
}

/// The upper bounds of the own-page classes: from just above [`SHARED_MAX`]
/// up by [`CLASS_RATIO`], aligned, the last one `largest`.
fn size_classes(largest: u64) -> Vec<u64> {
    let top = largest.next_multiple_of(CLASS_ALIGNMENT);
    let mut classes = Vec::new();
    let mut bound = SHARED_MAX as f64;
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
/// device work), for `mode`.
#[cfg(feature = "cuda")]
pub fn install_cuda(mode: MemoryMode) {
    // A quarter of the device is the largest page CubeCL's own layout makes;
    // beyond one device's memory no buffer can go.
    let largest = cuda_total_memory().unwrap_or(u64::MAX >> 8);
    cubecl::cuda::set_memory_configuration(configuration(mode, largest));
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

/// Initialises wgpu's default device with the pools of `mode`; call before
/// any work on it (wgpu's other devices keep CubeCL's pools). Only the
/// process's first call does anything.
#[cfg(feature = "wgpu")]
pub fn init_wgpu(mode: MemoryMode) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| init_wgpu_now(mode));
}

#[cfg(feature = "wgpu")]
fn init_wgpu_now(mode: MemoryMode) {
    use cubecl::wgpu::{init_setup, AutoGraphicsApi, RuntimeOptions, WgpuDevice};
    // wgpu refuses buffers above the adapter's limit when they are made; the
    // classes only have to reach that far.
    const WGPU_LARGEST: u64 = 1 << 36;
    let options = RuntimeOptions {
        memory_config: configuration(mode, WGPU_LARGEST),
        ..Default::default()
    };
    init_setup::<AutoGraphicsApi>(&WgpuDevice::default(), options);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_grow_by_the_ratio_up_to_the_largest_buffer() {
        let largest = 80 * 1024 * MIB;
        let classes = size_classes(largest);
        assert_eq!(*classes.last().unwrap(), largest);
        assert!(classes.iter().all(|c| c % CLASS_ALIGNMENT == 0));
        assert!(classes[0] > SHARED_MAX && classes[0] <= SHARED_MAX * 5 / 4 + CLASS_ALIGNMENT);
        for pair in classes.windows(2) {
            let most = pair[0] as f64 * CLASS_RATIO + CLASS_ALIGNMENT as f64;
            assert!(pair[1] > pair[0] && pair[1] as f64 <= most, "{pair:?}");
        }
        // 1 MiB → 80 GiB by 1.25×: 51 classes.
        assert_eq!(classes.len(), 51);
    }

    #[test]
    fn every_size_finds_a_pool_that_wastes_at_most_a_class() {
        let largest = 8 * 1024 * MIB;
        let MemoryConfiguration::Custom { pool_options } = configuration(MemoryMode::Balanced, largest) else {
            panic!("the balanced mode is a layout of ours");
        };
        let accepts = |p: &MemoryPoolOptions, size: u64| match p.pool_type {
            PoolType::ExclusivePages { max_alloc_size } => size <= max_alloc_size,
            PoolType::SlicedPages { max_slice_size, .. } => size <= max_slice_size,
        };
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
    fn modes_parse_from_their_names_only() {
        for name in MemoryMode::NAMES {
            assert_eq!(name.parse::<MemoryMode>().unwrap().to_string(), name);
        }
        let err = "small".parse::<MemoryMode>().unwrap_err();
        assert!(err.contains("'small'") && err.contains("fast or balanced"), "{err}");
        assert!(matches!(
            configuration(MemoryMode::Fast, 1 << 30),
            MemoryConfiguration::SubSlices
        ));
    }
}

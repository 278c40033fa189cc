//! What every checked kernel shares (the FFT's stages, the CGEMM): the
//! fault-tolerance modes, and the device's fault record that the kernels count
//! into and list faulty work in for a repair launch. Design: docs/abft.md.

use std::ops::{Add, Sub};
use std::str::FromStr;

use cubecl::prelude::*;
use cubecl::server::Handle;

/// Whether kernels check their results by checksums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FaultTolerance {
    /// No checksums.
    #[default]
    Off,
    /// Count results whose checksums disagree (outputs left as computed).
    Detect,
    /// Count them and compute each such result again.
    Correct,
}

impl FromStr for FaultTolerance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(FaultTolerance::Off),
            "detect" => Ok(FaultTolerance::Detect),
            "correct" => Ok(FaultTolerance::Correct),
            other => Err(format!(
                "unknown fault tolerance '{other}' (expected off, detect or correct)"
            )),
        }
    }
}

/// What a device counted since its record was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Checked units whose checksums disagreed on their first attempt: an
    /// FFT's signals (its tiles, in a stage whose first pass splits its
    /// butterflies over threads), a CGEMM's output rows of one mode.
    pub detected: u64,
    /// Of those, units whose repair agreed ([`FaultTolerance::Correct`]).
    pub corrected: u64,
    /// Faults injected (a flip that found its value).
    pub injected: u64,
}

impl Add for FaultCounts {
    type Output = FaultCounts;
    fn add(self, other: FaultCounts) -> FaultCounts {
        FaultCounts {
            detected: self.detected + other.detected,
            corrected: self.corrected + other.corrected,
            injected: self.injected + other.injected,
        }
    }
}

/// What was counted after `earlier` (counts only grow).
impl Sub for FaultCounts {
    type Output = FaultCounts;
    fn sub(self, earlier: FaultCounts) -> FaultCounts {
        FaultCounts {
            detected: self.detected - earlier.detected,
            corrected: self.corrected - earlier.corrected,
            injected: self.injected - earlier.injected,
        }
    }
}

/// Where a fault seeded by `seed` lands in an output of `elements` complex
/// values: the element, and whether in its imaginary part.
pub fn output_fault_site(seed: u64, elements: usize) -> (usize, bool) {
    let mut state = seed;
    let element = draw_below(&mut state, elements as u64) as usize;
    (element, draw_below(&mut state, 2) == 1)
}

/// A draw below `n` (at least 1) from `state` (splitmix64): how injected
/// faults are drawn from a seed, reproducibly.
pub fn draw_below(state: &mut u64, n: u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % n.max(1)
}

/// The fault record's header: detected, corrected, injected, the units
/// listed for repair; then the list.
pub(crate) const FAULT_HEADER: usize = 4;

/// Faulty units one checked launch lists for repair; beyond them a fault is
/// counted detected and stays uncorrected.
pub(crate) const REPAIR_CAPACITY: usize = 256;

/// A device buffer of `FAULT_HEADER + REPAIR_CAPACITY` u32s that checked
/// kernels count into (atomics) and their repair launches empty.
#[derive(Clone, Debug)]
pub struct FaultRecord {
    pub(crate) handle: Handle,
}

impl FaultRecord {
    /// Zero counts and an empty repair list.
    pub fn new<R: Runtime>(client: &ComputeClient<R>) -> Self {
        FaultRecord {
            handle: client.create_from_slice(u32::as_bytes(&[0u32; FAULT_HEADER + REPAIR_CAPACITY])),
        }
    }

    /// The counts so far (reads the device's counters: a sync).
    pub fn counts<R: Runtime>(&self, client: &ComputeClient<R>) -> FaultCounts {
        let bytes = client.read_one_unchecked(self.handle.clone());
        let counts = u32::from_bytes(&bytes);
        FaultCounts {
            detected: counts[0] as u64,
            corrected: counts[1] as u64,
            injected: counts[2] as u64,
        }
    }

    /// The record bound as a kernel's array of atomics.
    pub(crate) fn arg<R: Runtime>(&self) -> ArrayArg<R> {
        // SAFETY: the buffer holds exactly this many u32s.
        unsafe { ArrayArg::from_raw_parts(self.handle.clone(), FAULT_HEADER + REPAIR_CAPACITY) }
    }
}

/// Whether `x` is finite, by its exponent bits: shader compilers may assume
/// finite arithmetic and fold `x * 0 == 0` or a comparison with infinity.
#[cube]
pub(crate) fn is_finite<F: Float>(x: F) -> bool {
    (u32::reinterpret(x) & 0x7f80_0000u32) != 0x7f80_0000u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_tolerance_parses() {
        assert_eq!("detect".parse::<FaultTolerance>().unwrap(), FaultTolerance::Detect);
        assert!("sometimes".parse::<FaultTolerance>().is_err());
    }
}

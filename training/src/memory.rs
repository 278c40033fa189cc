//! Device memory over an epoch: the peaks of live tensors and of what the
//! pools hold, sampled around backward passes (CubeCL keeps no peak), and the
//! pages the balanced mode hands back between phases.

use burn::tensor::backend::Backend;
use fno_kernels::pools::MemoryMode;
use fno_ops::{DeviceMemory, SpectralConvBackend};

use crate::checkpoint::MemoryMetrics;

const MIB: f64 = (1u64 << 20) as f64;

/// The largest samples of an epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Peaks {
    most: Option<DeviceMemory>,
}

impl Peaks {
    /// Takes the device's figures now (nothing on backends without pools).
    pub fn sample<B: SpectralConvBackend>(&mut self, device: &B::Device) {
        if let Some(now) = B::device_memory(device) {
            self.take(now);
        }
    }

    fn take(&mut self, now: DeviceMemory) {
        self.most = Some(match self.most {
            None => now,
            Some(m) => DeviceMemory {
                in_use: m.in_use.max(now.in_use),
                reserved: m.reserved.max(now.reserved),
            },
        });
    }

    /// The epoch's metrics from its peaks and the figures at its end.
    pub fn metrics(mut self, end: Option<DeviceMemory>) -> Option<MemoryMetrics> {
        let end = end?;
        self.take(end);
        let peak = self.most.unwrap_or(end);
        Some(MemoryMetrics {
            in_use_mib: end.in_use as f64 / MIB,
            reserved_mib: end.reserved as f64 / MIB,
            peak_in_use_mib: Some(peak.in_use as f64 / MIB),
            peak_reserved_mib: Some(peak.reserved as f64 / MIB),
        })
    }
}

/// Hands pages no tensor holds back to the driver where `mode` asks for it
/// (between training and evaluation, whose batches differ).
pub(crate) fn release<B: Backend>(mode: MemoryMode, device: &B::Device) {
    if mode != MemoryMode::Fast {
        B::memory_cleanup(device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(in_use: u64, reserved: u64) -> DeviceMemory {
        DeviceMemory { in_use, reserved }
    }

    #[test]
    fn peaks_are_the_largest_of_each_figure_and_the_end_is_kept() {
        let mut peaks = Peaks::default();
        peaks.take(mem(3 << 20, 8 << 20));
        peaks.take(mem(5 << 20, 6 << 20));
        let m = peaks.metrics(Some(mem(1 << 20, 7 << 20))).unwrap();
        assert_eq!((m.in_use_mib, m.reserved_mib), (1.0, 7.0));
        assert_eq!((m.peak_in_use_mib, m.peak_reserved_mib), (Some(5.0), Some(8.0)));
        assert_eq!(Peaks::default().metrics(None), None);
        // No sample taken: the end is the peak.
        let m = Peaks::default().metrics(Some(mem(2 << 20, 4 << 20))).unwrap();
        assert_eq!((m.peak_in_use_mib, m.peak_reserved_mib), (Some(2.0), Some(4.0)));
    }
}

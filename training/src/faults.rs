//! What the checked kernels (fault tolerance; docs/abft.md) count over a
//! run, every replica's, and the per-epoch report of what checksums found.

use fno_ops::{FaultCounts, FaultTolerance, SpectralConvBackend};

use crate::run::TrainObserver;

/// What the checked kernels count over a run, read only where fault
/// tolerance is on (a read is a device sync).
pub(crate) struct Faults {
    checked: bool,
    /// This replica's counts when the run started.
    before: FaultCounts,
    /// Every replica's counts since the start, as last reported.
    reported: FaultCounts,
    /// The other replicas' counts at the last exchange.
    others: FaultCounts,
}

impl Faults {
    /// Counts from now on, for kernels checked as `tolerance` says.
    pub fn start<B: SpectralConvBackend>(tolerance: FaultTolerance, device: &B::Device) -> Self {
        let checked = tolerance != FaultTolerance::Off;
        let before = match checked {
            true => B::fault_counts(device),
            false => FaultCounts::default(),
        };
        Faults {
            checked,
            before,
            reported: FaultCounts::default(),
            others: FaultCounts::default(),
        }
    }

    /// This replica's counts since the start.
    pub fn own<B: SpectralConvBackend>(&self, device: &B::Device) -> FaultCounts {
        match self.checked {
            true => B::fault_counts(device) - self.before,
            false => FaultCounts::default(),
        }
    }

    /// Takes every replica's counts after `epoch` (`own` this one's) and
    /// reports what the epoch's checksums found.
    pub fn record(&mut self, all: FaultCounts, own: FaultCounts, epoch: usize, observer: &mut dyn TrainObserver) {
        self.others = all - own;
        if !self.checked {
            return;
        }
        if all.detected > self.reported.detected {
            observer.message(&format!(
                "epoch {epoch}: {} faults detected by checksums, {} corrected",
                all.detected - self.reported.detected,
                all.corrected - self.reported.corrected
            ));
        }
        self.reported = all;
    }

    /// The run's counts over every replica (`None` with fault tolerance off).
    pub fn total<B: SpectralConvBackend>(&self, device: &B::Device) -> Option<FaultCounts> {
        self.checked
            .then(|| B::fault_counts(device) - self.before + self.others)
    }
}

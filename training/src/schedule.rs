//! Learning-rate schedules stepped once per epoch, as PyTorch's `StepLR`,
//! `CosineAnnealingLR` and `ReduceLROnPlateau` (mode `min`, relative
//! threshold); the state serialises with checkpoints so a resumed run
//! continues the same sequence.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Schedule {
    Constant,
    /// `lr · gamma^⌊epoch / step_size⌋`.
    Step {
        step_size: usize,
        gamma: f64,
    },
    /// `eta_min + (lr − eta_min)(1 + cos(π · epoch / t_max)) / 2`.
    Cosine {
        t_max: usize,
        #[serde(default)]
        eta_min: f64,
    },
    /// Multiplies by `factor` when the validation metric has not improved by a
    /// relative `threshold` for more than `patience` epochs.
    Plateau {
        #[serde(default = "plateau_factor")]
        factor: f64,
        #[serde(default = "plateau_patience")]
        patience: usize,
        #[serde(default = "plateau_threshold")]
        threshold: f64,
        #[serde(default)]
        min_lr: f64,
    },
}

fn plateau_factor() -> f64 {
    0.1
}
fn plateau_patience() -> usize {
    10
}
fn plateau_threshold() -> f64 {
    1e-4
}

impl Schedule {
    /// Fails on parameters PyTorch would reject.
    pub fn validate(&self) -> Result<(), String> {
        let ok = match *self {
            Schedule::Constant => true,
            Schedule::Step { step_size, gamma } => step_size > 0 && gamma > 0.0,
            Schedule::Cosine { t_max, eta_min } => t_max > 0 && eta_min >= 0.0,
            Schedule::Plateau {
                factor,
                threshold,
                min_lr,
                ..
            } => factor > 0.0 && factor < 1.0 && threshold >= 0.0 && min_lr >= 0.0,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("invalid learning-rate schedule {self:?}"))
        }
    }
}

/// A schedule's state: the rate for the coming epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scheduler {
    pub schedule: Schedule,
    pub base_lr: f64,
    pub lr: f64,
    /// Epochs stepped so far.
    pub epoch: usize,
    /// Plateau: the best metric and the epochs since it improved.
    pub best: Option<f64>,
    pub bad_epochs: usize,
}

impl Scheduler {
    pub fn new(schedule: Schedule, base_lr: f64) -> Self {
        Scheduler {
            schedule,
            base_lr,
            lr: base_lr,
            epoch: 0,
            best: None,
            bad_epochs: 0,
        }
    }

    /// Ends an epoch whose validation metric was `metric` (used by `Plateau`).
    pub fn step(&mut self, metric: f64) {
        self.epoch += 1;
        let (base, epoch) = (self.base_lr, self.epoch as f64);
        self.lr = match self.schedule {
            Schedule::Constant => base,
            Schedule::Step { step_size, gamma } => base * gamma.powi((self.epoch / step_size) as i32),
            Schedule::Cosine { t_max, eta_min } => {
                eta_min + (base - eta_min) * (1.0 + (std::f64::consts::PI * epoch / t_max as f64).cos()) / 2.0
            }
            Schedule::Plateau {
                factor,
                patience,
                threshold,
                min_lr,
            } => {
                if self.best.is_none_or(|best| metric < best * (1.0 - threshold)) {
                    self.best = Some(metric);
                    self.bad_epochs = 0;
                } else {
                    self.bad_epochs += 1;
                }
                if self.bad_epochs > patience {
                    self.bad_epochs = 0;
                    (self.lr * factor).max(min_lr)
                } else {
                    self.lr
                }
            }
        };
    }
}

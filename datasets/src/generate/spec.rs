//! One description of a generated data set, shared by `fno data generate` and
//! training configurations: the PDE by name plus the options people change,
//! every other parameter at the generator's default.

use serde::{Deserialize, Serialize};

use super::{burgers, darcy, navier_stokes, BurgersConfig, DarcyConfig, NavierStokesConfig};
use crate::{DataError, PdeDataset};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pde {
    Darcy,
    Burgers,
    NavierStokes,
}

impl Pde {
    pub fn name(self) -> &'static str {
        match self {
            Pde::Darcy => "darcy",
            Pde::Burgers => "burgers",
            Pde::NavierStokes => "navier-stokes",
        }
    }
}

/// The largest data sets `fno data generate` and training configurations may
/// ask for, checked before any work.
pub mod limits {
    pub const SAMPLES: usize = 1 << 24;
    /// Points a side of the stored grid, at least.
    pub const MIN_RES: usize = 4;
    /// Points of one sample's solve grid (fine resolution to the PDE's dims).
    pub const SOLVE_POINTS: u128 = 1 << 26;
    /// Navier–Stokes output snapshots per sample.
    pub const SNAPSHOTS: usize = 10_000;
    /// Time steps of one sample's solve.
    pub const TIME_STEPS: f64 = 1e8;
    /// Values of the whole data set, inputs and outputs (8 GiB of f32).
    pub const STORED_VALUES: u128 = 1 << 31;
}

/// `n` samples of `pde` on `res` points per side from seed `seed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateSpec {
    pub pde: Pde,
    pub n: usize,
    pub res: usize,
    #[serde(default)]
    pub seed: u64,
    /// Points per side of the solve [default: Darcy at least 64 and 2·res
    /// with (fine − 1) a multiple of (res − 1); Burgers 8192; Navier–Stokes res].
    #[serde(default)]
    pub fine: Option<usize>,
    /// Burgers and Navier–Stokes only.
    #[serde(default)]
    pub viscosity: Option<f64>,
    #[serde(default)]
    pub time: Option<f64>,
    #[serde(default)]
    pub dt: Option<f64>,
    /// Navier–Stokes only: time between output snapshots [default 1].
    #[serde(default)]
    pub every: Option<f64>,
}

/// The finest-needed Darcy grid: at least 64 and twice `res` per side, on which
/// `res` nodes are a subsampling (16 → 76).
pub fn default_darcy_fine(res: usize) -> usize {
    let gaps = res.saturating_sub(1).max(1);
    let factor = 2.max(63usize.div_ceil(gaps));
    factor * gaps + 1
}

impl GenerateSpec {
    pub fn new(pde: Pde, n: usize, res: usize, seed: u64) -> Self {
        GenerateSpec {
            pde,
            n,
            res,
            seed,
            fine: None,
            viscosity: None,
            time: None,
            dt: None,
            every: None,
        }
    }

    /// Fails on options that do not apply to the PDE and on sizes beyond
    /// [`limits`], before anything is allocated or solved.
    pub fn check(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Invalid(m));
        let dims = if self.pde == Pde::Burgers { 1 } else { 2 };
        let fine = self.fine.unwrap_or(match self.pde {
            Pde::Darcy => default_darcy_fine(self.res),
            Pde::Burgers => BurgersConfig::default().fine_resolution,
            Pde::NavierStokes => self.res,
        });
        let points = |side: usize| (side as u128).pow(dims);
        if !(1..=limits::SAMPLES).contains(&self.n) {
            return bad(format!("n = {}: expected 1 to {} samples", self.n, limits::SAMPLES));
        }
        if self.res < limits::MIN_RES {
            return bad(format!(
                "res {}: at least {} points a side (fewer leave no modes to learn)",
                self.res,
                limits::MIN_RES
            ));
        }
        if points(fine) > limits::SOLVE_POINTS {
            return bad(format!(
                "res {} on a solve grid of {fine} per side: expected a positive res and at most {} solve points",
                self.res,
                limits::SOLVE_POINTS
            ));
        }
        let snapshots = self.snapshots();
        if snapshots.is_nan() || snapshots > limits::SNAPSHOTS as f64 {
            return bad(format!(
                "time / every = {snapshots}: at most {} snapshots",
                limits::SNAPSHOTS
            ));
        }
        if self.pde != Pde::Darcy {
            let (time, dt) = match self.pde {
                Pde::Burgers => (BurgersConfig::default().final_time, BurgersConfig::default().dt),
                _ => (
                    NavierStokesConfig::default().final_time,
                    NavierStokesConfig::default().dt,
                ),
            };
            let steps = self.time.unwrap_or(time) / self.dt.unwrap_or(dt);
            if steps.is_nan() || steps > limits::TIME_STEPS {
                return bad(format!(
                    "time / dt = {steps}: at most {} time steps a sample",
                    limits::TIME_STEPS
                ));
            }
        }
        let stored = self.stored_values();
        if stored > limits::STORED_VALUES {
            return bad(format!(
                "{} samples of {}^{dims} points: {stored} values, at most {}",
                self.n,
                self.res,
                limits::STORED_VALUES
            ));
        }
        let timed = [("viscosity", self.viscosity), ("time", self.time), ("dt", self.dt)];
        if self.pde == Pde::Darcy {
            if let Some((name, _)) = timed.iter().find(|(_, v)| v.is_some()) {
                return Err(DataError::Invalid(format!(
                    "{name} applies to burgers and navier-stokes, not darcy"
                )));
            }
        }
        if self.pde != Pde::NavierStokes && self.every.is_some() {
            return Err(DataError::Invalid("every applies to navier-stokes only".into()));
        }
        Ok(())
    }

    /// Navier–Stokes output snapshots per sample (time / every); 1 otherwise.
    fn snapshots(&self) -> f64 {
        match (self.pde, self.time, self.every) {
            (Pde::NavierStokes, time, every) => {
                let d = NavierStokesConfig::default();
                time.unwrap_or(d.final_time) / every.unwrap_or(d.snapshot_interval)
            }
            _ => 1.0,
        }
    }

    /// The values the data set holds, inputs and outputs (saturating: for a
    /// memory estimate before [`generate`](Self::generate) checks the limits).
    pub fn stored_values(&self) -> u128 {
        let dims = if self.pde == Pde::Burgers { 1 } else { 2 };
        let snapshots = self.snapshots().clamp(0.0, u64::MAX as f64) as u128;
        (self.n as u128)
            .saturating_mul(1 + snapshots)
            .saturating_mul((self.res as u128).saturating_pow(dims))
    }

    /// A short name for file names and labels, e.g. `darcy_16_n1000_seed0`.
    pub fn label(&self) -> String {
        format!("{}_{}_n{}_seed{}", self.pde.name(), self.res, self.n, self.seed)
    }

    /// Generates the data set, reporting `progress(done, total)`.
    pub fn generate(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<PdeDataset, DataError> {
        self.check()?;
        match self.pde {
            Pde::Darcy => darcy::generate(
                &DarcyConfig {
                    n: self.n,
                    resolution: self.res,
                    fine_resolution: self.fine.unwrap_or_else(|| default_darcy_fine(self.res)),
                    seed: self.seed,
                    ..DarcyConfig::default()
                },
                progress,
            ),
            Pde::Burgers => {
                let d = BurgersConfig::default();
                burgers::generate(
                    &BurgersConfig {
                        n: self.n,
                        resolution: self.res,
                        fine_resolution: self.fine.unwrap_or(d.fine_resolution),
                        seed: self.seed,
                        viscosity: self.viscosity.unwrap_or(d.viscosity),
                        final_time: self.time.unwrap_or(d.final_time),
                        dt: self.dt.unwrap_or(d.dt),
                        ..d
                    },
                    progress,
                )
            }
            Pde::NavierStokes => {
                let d = NavierStokesConfig::default();
                navier_stokes::generate(
                    &NavierStokesConfig {
                        n: self.n,
                        resolution: self.res,
                        fine_resolution: self.fine.unwrap_or(self.res),
                        seed: self.seed,
                        viscosity: self.viscosity.unwrap_or(d.viscosity),
                        final_time: self.time.unwrap_or(d.final_time),
                        snapshot_interval: self.every.unwrap_or(d.snapshot_interval),
                        dt: self.dt.unwrap_or(d.dt),
                        ..d
                    },
                    progress,
                )
            }
        }
    }
}

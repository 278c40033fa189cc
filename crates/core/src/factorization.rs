//! The forms of spectral weights: dense, or a tensorly-torch Tucker, CP or
//! tensor-train factorization (TFNO) of the `[Cin, Cout, *modes]` weight
//! (`[C, *modes]` when separable), with tensorly's ranks ([`crate::rank`]),
//! and the tensors that store them under tltorch's state-dict names.

use crate::rank::{cp_rank, tt_ranks, tucker_ranks, Rank};
use crate::spec::SpectralError;

/// How a spectral weight is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Factorization {
    Dense,
    Tucker,
    Cp,
    TensorTrain,
}

impl Factorization {
    /// neuraloperator's `factorization` argument (None and "dense" are dense).
    pub fn parse(name: Option<&str>) -> Option<Self> {
        match name.map(str::to_lowercase).as_deref() {
            None | Some("dense") => Some(Self::Dense),
            Some("tucker") => Some(Self::Tucker),
            Some("cp") => Some(Self::Cp),
            Some("tt") => Some(Self::TensorTrain),
            Some(_) => None,
        }
    }
}

/// The shape of a spectral weight and of the tensors that store it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightForm {
    pub factorization: Factorization,
    /// `[C, *modes]` per channel rather than `[Cin, Cout, *modes]`.
    pub separable: bool,
    /// The logical (complex) weight's shape: `[Cin, Cout, *modes]`, or
    /// `[C, *modes]` when separable.
    pub shape: Vec<usize>,
    /// Tucker: one rank per dim of `shape`; CP: `[R]`; tensor train: one more
    /// than `shape` has dims, 1 at both ends; dense: none.
    pub ranks: Vec<usize>,
}

impl WeightForm {
    /// The complex shapes of the stored tensors, named as tensorly-torch's
    /// state dicts name them (after `….weight.`), in that order.
    pub fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let factor = |d: usize, shape: Vec<usize>| (format!("factors.factor_{d}"), shape);
        let n = self.shape.len();
        let r = &self.ranks;
        match self.factorization {
            Factorization::Dense => vec![("tensor".into(), self.shape.clone())],
            Factorization::Tucker => std::iter::once(("core".into(), r.clone()))
                .chain((0..n).map(|d| factor(d, vec![self.shape[d], r[d]])))
                .collect(),
            Factorization::Cp => std::iter::once(("weights".into(), vec![r[0]]))
                .chain((0..n).map(|d| factor(d, vec![self.shape[d], r[0]])))
                .collect(),
            Factorization::TensorTrain => (0..n).map(|d| factor(d, vec![r[d], self.shape[d], r[d + 1]])).collect(),
        }
    }

    /// How a model stores a tensor of complex shape `shape`: `[shape₀, rest·2]`,
    /// (re, im) interleaved (long rows: CUDA pads each row of a tensor).
    pub fn storage_shape(shape: &[usize]) -> [usize; 2] {
        let rest: usize = shape[1..].iter().product();
        [shape[0], rest * 2]
    }

    /// Checks the ranks against the shape.
    pub fn validate(&self) -> Result<(), SpectralError> {
        let n = self.shape.len();
        let want = match self.factorization {
            Factorization::Dense => 0,
            Factorization::Tucker => n,
            Factorization::Cp => 1,
            Factorization::TensorTrain => n + 1,
        };
        let ends = self.factorization != Factorization::TensorTrain || (self.ranks[0] == 1 && self.ranks[n] == 1);
        if self.ranks.len() != want || self.ranks.contains(&0) || !ends || self.shape.contains(&0) {
            return Err(SpectralError::Invalid(format!(
                "{:?} ranks {:?} do not fit a weight of shape {:?}",
                self.factorization, self.ranks, self.shape
            )));
        }
        Ok(())
    }

    /// Complex values the stored tensors hold.
    pub fn parameter_count(&self) -> usize {
        self.tensors().iter().map(|(_, s)| s.iter().product::<usize>()).sum()
    }

    /// neuraloperator 2.0's form of a weight of complex shape `shape` under
    /// `factorization` and `rank`; `fixed_first` (its `fixed_rank_modes=True`)
    /// keeps the first dim at full rank. Or why the rank does not fit.
    pub fn of(
        factorization: Factorization,
        separable: bool,
        shape: Vec<usize>,
        rank: &Rank,
        fixed_first: bool,
    ) -> Result<Self, String> {
        let fixed: &[usize] = if fixed_first { &[0] } else { &[] };
        let ranks = match factorization {
            Factorization::Dense => vec![],
            Factorization::Tucker => tucker_ranks(&shape, rank, fixed)?,
            Factorization::Cp => vec![cp_rank(&shape, rank)?],
            Factorization::TensorTrain => tt_ranks(&shape, rank)?,
        };
        Ok(WeightForm {
            factorization,
            separable,
            shape,
            ranks,
        })
    }

    /// The state-dict key and stored shape (complex, trailing 2) of each tensor
    /// of this weight under `prefix` (`fno_blocks.convs.{i}.weight`).
    pub fn keys(&self, prefix: &str) -> Vec<(String, Vec<usize>)> {
        self.tensors()
            .into_iter()
            .map(|(name, shape)| (format!("{prefix}.{name}"), [&shape[..], &[2]].concat()))
            .collect()
    }
}

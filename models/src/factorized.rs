//! neuraloperator's spectral weights as checkpoints store them, read back as the
//! dense `[Cin, Cout, *modes]` complex tensor the spectral convolution takes.
//!
//! With `factorization` set, neuraloperator learns the weight as a
//! tensorly-torch factorized tensor (its forward contracts the input with the
//! factors or with their reconstruction; both equal the dense product):
//! - Tucker: `core` `[r_0, …, r_{N-1}]` and `factors.factor_d` `[s_d, r_d]`,
//!   `W = core ×_0 U_0 ⋯ ×_{N-1} U_{N-1}`;
//! - CP: `weights` `[R]` and `factors.factor_d` `[s_d, R]`,
//!   `W[i] = Σ_r w_r Π_d U_d[i_d, r]`;
//! - TT: `factors.factor_d` `[r_d, s_d, r_{d+1}]` with `r_0 = r_N = 1`,
//!   `W[i] = G_0[:, i_0, :] ⋯ G_{N-1}[:, i_{N-1}, :]`.
//!
//! All complex: native C64 (TFNO's tensors, tltorch's real-named classes with
//! `dtype=cfloat`) or F32 `[..., 2]` (`view_as_real`, its `Complex*` classes). The
//! ranks come from the file (the factors must agree with each other and with the
//! weight's shape). A `separable` weight `[C, *modes]` scales each channel by
//! itself: its dense form is diagonal in (Cin, Cout). Reconstruction runs once,
//! in f64, at load time; the model then holds the dense weight.

use std::collections::HashMap;

use num_complex::Complex64;

use crate::checkpoint::StoredTensor;
use crate::config::FnoConfig;

/// The stored form of each spectral weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Factorization {
    Dense,
    Tucker,
    Cp,
    TensorTrain,
}

impl Factorization {
    /// neuraloperator's `factorization` argument (None and "dense" are dense).
    pub(crate) fn parse(name: Option<&str>) -> Option<Self> {
        match name.map(str::to_lowercase).as_deref() {
            None | Some("dense") => Some(Self::Dense),
            Some("tucker") => Some(Self::Tucker),
            Some("cp") => Some(Self::Cp),
            Some("tt") => Some(Self::TensorTrain),
            Some(_) => None,
        }
    }
}

/// How one configuration stores its spectral weights.
#[derive(Clone, Debug)]
pub(crate) struct WeightFormat {
    factorization: Factorization,
    separable: bool,
    /// The stored (logical) weight's shape: `[C, C, *modes]`, or `[C, *modes]`
    /// when separable.
    logical: Vec<usize>,
}

/// A key the checkpoint must hold, with its shape when the configuration fixes
/// it (`None`: the factorization's rank decides, checked on reconstruction).
pub(crate) type ExpectedKey = (String, Option<Vec<usize>>);

fn with_complex(shape: &[usize]) -> Vec<usize> {
    [shape, &[2]].concat()
}

fn factor_key(prefix: &str, d: usize) -> String {
    format!("{prefix}.factors.factor_{d}")
}

impl WeightFormat {
    pub(crate) fn of(cfg: &FnoConfig) -> Self {
        let h = cfg.hidden_channels;
        let mut logical = if cfg.separable { vec![h] } else { vec![h, h] };
        logical.extend(cfg.weight_modes());
        WeightFormat {
            factorization: Factorization::parse(cfg.factorization.as_deref())
                .expect("validated configuration names a known factorization"),
            separable: cfg.separable,
            logical,
        }
    }

    /// The keys one spectral weight is stored under, `prefix` being
    /// `fno_blocks.convs.{i}.weight`.
    pub(crate) fn keys(&self, prefix: &str) -> Vec<ExpectedKey> {
        let order = self.logical.len();
        let factors = (0..order).map(|d| (factor_key(prefix, d), None));
        match self.factorization {
            Factorization::Dense => vec![(format!("{prefix}.tensor"), Some(with_complex(&self.logical)))],
            Factorization::Tucker => std::iter::once((format!("{prefix}.core"), None))
                .chain(factors)
                .collect(),
            Factorization::Cp => std::iter::once((format!("{prefix}.weights"), None))
                .chain(factors)
                .collect(),
            Factorization::TensorTrain => factors.collect(),
        }
    }

    /// The dense `[C, C, *modes, 2]` weight (f32, complex interleaved) from the
    /// tensors stored under `prefix`; an error names each mis-shaped key.
    pub(crate) fn dense(&self, prefix: &str, tensors: &HashMap<String, StoredTensor>) -> Result<Vec<f32>, String> {
        let get = |name: String| tensors.get(&name).map(|t| (name, t)).expect("matched keys");
        let order = self.logical.len();
        let factors = || -> Vec<(String, &StoredTensor)> { (0..order).map(|d| get(factor_key(prefix, d))).collect() };
        let logical = match self.factorization {
            Factorization::Dense => complex(get(format!("{prefix}.tensor")).1),
            Factorization::Tucker => {
                let (name, core) = get(format!("{prefix}.core"));
                let ranks = complex_shape(&name, core, order)?;
                let factors = factors();
                for (d, (name, f)) in factors.iter().enumerate() {
                    expect_shape(name, f, &[self.logical[d], ranks[d]])?;
                }
                tucker(complex(core), &ranks, &factors_of(&factors), &self.logical)
            }
            Factorization::Cp => {
                let (name, weights) = get(format!("{prefix}.weights"));
                let rank = complex_shape(&name, weights, 1)?[0];
                let factors = factors();
                for (d, (name, f)) in factors.iter().enumerate() {
                    expect_shape(name, f, &[self.logical[d], rank])?;
                }
                cp(&complex(weights), &factors_of(&factors), &self.logical)
            }
            Factorization::TensorTrain => {
                let factors = factors();
                let mut left = 1;
                for (d, (name, f)) in factors.iter().enumerate() {
                    let shape = complex_shape(name, f, 3)?;
                    let right = if d + 1 == order { 1 } else { shape[2] };
                    expect_shape(name, f, &[left, self.logical[d], right])?;
                    left = right;
                }
                tensor_train(&factors_of(&factors), &self.logical)
            }
        };
        let dense = if self.separable {
            diagonal(&logical, self.logical[0])
        } else {
            logical
        };
        Ok(dense.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect())
    }
}

fn complex(t: &StoredTensor) -> Vec<Complex64> {
    t.data
        .chunks_exact(2)
        .map(|p| Complex64::new(p[0] as f64, p[1] as f64))
        .collect()
}

fn factors_of(factors: &[(String, &StoredTensor)]) -> Vec<Vec<Complex64>> {
    factors.iter().map(|(_, t)| complex(t)).collect()
}

/// The complex shape of `t` (its stored shape less the trailing 2), which must have `rank` dims.
fn complex_shape(name: &str, t: &StoredTensor, rank: usize) -> Result<Vec<usize>, String> {
    match t.shape.split_last() {
        Some((2, dims)) if dims.len() == rank => Ok(dims.to_vec()),
        _ => Err(format!(
            "{name} has shape {:?}: expected {rank} dims and a trailing (re, im) pair",
            t.shape
        )),
    }
}

fn expect_shape(name: &str, t: &StoredTensor, want: &[usize]) -> Result<(), String> {
    if t.shape == with_complex(want) {
        Ok(())
    } else {
        Err(format!(
            "{name} has shape {:?}, the weight's shape and the other factors need {:?}",
            t.shape,
            with_complex(want)
        ))
    }
}

/// `t ×_d u`: mode `d` of `t` (shape `shape`, row-major) multiplied by `u`
/// (`[rows, shape[d]]`); returns the product, whose dim `d` has `rows` entries.
fn mode_product(t: &[Complex64], shape: &[usize], d: usize, u: &[Complex64], rows: usize) -> Vec<Complex64> {
    let (pre, n, post): (usize, usize, usize) =
        (shape[..d].iter().product(), shape[d], shape[d + 1..].iter().product());
    let mut out = vec![Complex64::default(); pre * rows * post];
    for a in 0..pre {
        for i in 0..rows {
            for j in 0..n {
                let f = u[i * n + j];
                let src = &t[(a * n + j) * post..][..post];
                let dst = &mut out[(a * rows + i) * post..][..post];
                for (o, s) in dst.iter_mut().zip(src) {
                    *o += f * s;
                }
            }
        }
    }
    out
}

fn tucker(core: Vec<Complex64>, ranks: &[usize], factors: &[Vec<Complex64>], shape: &[usize]) -> Vec<Complex64> {
    let mut current = ranks.to_vec();
    factors.iter().enumerate().fold(core, |t, (d, u)| {
        let out = mode_product(&t, &current, d, u, shape[d]);
        current[d] = shape[d];
        out
    })
}

fn cp(weights: &[Complex64], factors: &[Vec<Complex64>], shape: &[usize]) -> Vec<Complex64> {
    let rank = weights.len();
    let (last, leading) = shape.split_last().expect("a weight has dims");
    let leading_count: usize = leading.iter().product();
    let mut out = Vec::with_capacity(leading_count * last);
    let mut v = vec![Complex64::default(); rank];
    // Per leading index: v_r = w_r Π_d U_d[i_d, r]; then the last dim is U_last·v.
    for flat in 0..leading_count {
        v.copy_from_slice(weights);
        let mut rest = flat;
        for d in (0..leading.len()).rev() {
            let i = rest % leading[d];
            rest /= leading[d];
            for (vr, u) in v.iter_mut().zip(&factors[d][i * rank..][..rank]) {
                *vr *= u;
            }
        }
        let u_last = &factors[leading.len()];
        out.extend((0..*last).map(|i| {
            u_last[i * rank..][..rank]
                .iter()
                .zip(&v)
                .map(|(u, v)| u * v)
                .sum::<Complex64>()
        }));
    }
    out
}

fn tensor_train(factors: &[Vec<Complex64>], shape: &[usize]) -> Vec<Complex64> {
    // `t` is `[prefix, r]`: the product of the first factors, indexed by their
    // modes and the open rank.
    let mut t = vec![Complex64::new(1.0, 0.0)];
    let mut rank = 1;
    for (d, g) in factors.iter().enumerate() {
        let next = g.len() / (rank * shape[d]);
        let prefix = t.len() / rank;
        let mut out = vec![Complex64::default(); prefix * shape[d] * next];
        for p in 0..prefix {
            for r in 0..rank {
                let a = t[p * rank + r];
                let row = &g[r * shape[d] * next..][..shape[d] * next];
                for (o, gv) in out[p * shape[d] * next..][..shape[d] * next].iter_mut().zip(row) {
                    *o += a * gv;
                }
            }
        }
        t = out;
        rank = next;
    }
    t
}

/// `[C, *modes]` per-channel weights as the dense `[C, C, *modes]` diagonal.
fn diagonal(w: &[Complex64], channels: usize) -> Vec<Complex64> {
    let per = w.len() / channels;
    let mut out = vec![Complex64::default(); channels * channels * per];
    for c in 0..channels {
        out[(c * channels + c) * per..][..per].copy_from_slice(&w[c * per..][..per]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(re: f64, im: f64) -> Complex64 {
        Complex64::new(re, im)
    }

    fn values(n: usize, seed: u64) -> Vec<Complex64> {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        (0..n).map(|_| c(next(), next())).collect()
    }

    /// The three factorizations against their defining sums, written out for a
    /// `[2, 3, 4]` tensor.
    #[test]
    fn reconstructions_match_their_definitions() {
        let shape = [2, 3, 4];
        let at = |i: usize, j: usize, k: usize| (i * 3 + j) * 4 + k;

        let ranks = [2, 2, 3];
        let core = values(12, 1);
        let u: Vec<Vec<Complex64>> = (0..3).map(|d| values(shape[d] * ranks[d], 10 + d as u64)).collect();
        let got = tucker(core.clone(), &ranks, &u, &shape);
        let weights = values(5, 2);
        let v: Vec<Vec<Complex64>> = (0..3).map(|d| values(shape[d] * 5, 20 + d as u64)).collect();
        let got_cp = cp(&weights, &v, &shape);
        let tt_ranks = [1, 2, 3, 1];
        let g: Vec<Vec<Complex64>> = (0..3)
            .map(|d| values(tt_ranks[d] * shape[d] * tt_ranks[d + 1], 30 + d as u64))
            .collect();
        let got_tt = tensor_train(&g, &shape);

        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    let mut want = Complex64::default();
                    for a in 0..2 {
                        for b in 0..2 {
                            for e in 0..3 {
                                want += core[(a * 2 + b) * 3 + e] * u[0][i * 2 + a] * u[1][j * 2 + b] * u[2][k * 3 + e];
                            }
                        }
                    }
                    assert!((got[at(i, j, k)] - want).norm() < 1e-12, "tucker at {i},{j},{k}");

                    let want: Complex64 = (0..5)
                        .map(|r| weights[r] * v[0][i * 5 + r] * v[1][j * 5 + r] * v[2][k * 5 + r])
                        .sum();
                    assert!((got_cp[at(i, j, k)] - want).norm() < 1e-12, "cp at {i},{j},{k}");

                    let mut want = Complex64::default();
                    for a in 0..2 {
                        for b in 0..3 {
                            want += g[0][i * 2 + a] * g[1][(a * 3 + j) * 3 + b] * g[2][b * 4 + k];
                        }
                    }
                    assert!((got_tt[at(i, j, k)] - want).norm() < 1e-12, "tt at {i},{j},{k}");
                }
            }
        }
    }

    #[test]
    fn separable_weights_become_diagonal() {
        let w = values(2 * 3, 5);
        let d = diagonal(&w, 2);
        assert_eq!(&d[0..3], &w[0..3]);
        assert!(d[3..9].iter().all(|z| z.norm() == 0.0));
        assert_eq!(&d[9..12], &w[3..6]);
    }
}

//! The oracle: both types by direct summation in f64, `O(M·Π N)`.

use super::plan::{signed_mode, NufftDesc, NufftType};

/// Complex values as (re, im) pairs.
pub type C64 = (f64, f64);

/// The transform `desc` describes of `batch` vectors, by direct summation.
/// `points` is `[M, d]` row-major; `input` is `[batch, M]` (type 1) or
/// `[batch, N…]` in the plan's mode order (type 2); returns `[batch, N…]` or
/// `[batch, M]`.
pub fn nufft_direct(desc: &NufftDesc, points: &[f64], input: &[C64]) -> Vec<C64> {
    let d = desc.dims();
    let m = points.len() / d;
    let modes_total: usize = desc.modes.iter().product();
    // Each flat mode index's signed frequencies.
    let freqs: Vec<Vec<f64>> = (0..modes_total)
        .map(|flat| {
            let mut rest = flat;
            let mut k = vec![0.0; d];
            for dim in (0..d).rev() {
                let n = desc.modes[dim];
                k[dim] = signed_mode(rest % n, n, desc.mode_order) as f64;
                rest /= n;
            }
            k
        })
        .collect();
    let sign = desc.isign as f64;
    let phase = |j: usize, k: &[f64]| -> C64 {
        let t: f64 = (0..d).map(|dim| k[dim] * points[j * d + dim]).sum::<f64>() * sign;
        (t.cos(), t.sin())
    };
    let mul = |a: C64, b: C64| (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0);
    let mut out = Vec::new();
    for b in 0..desc.batch {
        match desc.kind {
            NufftType::One => {
                let c = &input[b * m..(b + 1) * m];
                out.extend(freqs.iter().map(|k| {
                    (0..m).fold((0.0, 0.0), |acc, j| {
                        let t = mul(c[j], phase(j, k));
                        (acc.0 + t.0, acc.1 + t.1)
                    })
                }));
            }
            NufftType::Two => {
                let f = &input[b * modes_total..(b + 1) * modes_total];
                out.extend((0..m).map(|j| {
                    freqs.iter().zip(f).fold((0.0, 0.0), |acc, (k, &v)| {
                        let t = mul(v, phase(j, k));
                        (acc.0 + t.0, acc.1 + t.1)
                    })
                }));
            }
        }
    }
    out
}

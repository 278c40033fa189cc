//! Complex arithmetic, reads of the twiddle and factor tables, and the
//! in-register DFTs (the butterflies) of the Stockham passes.

use cubecl::prelude::*;

use crate::fft::factor::{dft_split, DftSplit};

#[cube]
pub(super) fn complex_mul<F: Float>(ar: F, ai: F, br: F, bi: F) -> (F, F) {
    (ar * br - ai * bi, ar * bi + ai * br)
}

/// Multiplies by `-i` (forward) or `+i` (inverse): the radix-4 rotation.
#[cube]
fn rotate_quarter<F: Float>(re: F, im: F, #[comptime] inverse: bool) -> (F, F) {
    if inverse {
        (F::new(0.0) - im, re)
    } else {
        (im, F::new(0.0) - re)
    }
}

/// Radix-2 butterfly on registers `base` and `base + stride`.
#[cube]
fn butterfly2<F: Float>(re: &mut Array<F>, im: &mut Array<F>, i0: usize, i1: usize) {
    let (ar, ai) = (re[i0], im[i0]);
    let (br, bi) = (re[i1], im[i1]);
    re[i0] = ar + br;
    im[i0] = ai + bi;
    re[i1] = ar - br;
    im[i1] = ai - bi;
}

/// In-register DFT of the `r` values at `base + j*stride`, output in natural order
/// at the same places. Radices 2, 4 and 8 are decimation-in-time butterflies
/// with constant twiddles, odd ones pair `x_j` with `x_{r-j}`, the others are
/// composites of those.
#[cube]
pub(super) fn small_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
) {
    if comptime![r == 2] {
        butterfly2::<F>(re, im, base, base + stride);
    } else if comptime![r == 4] {
        let (i0, i1, i2, i3) = (base, base + stride, base + 2usize * stride, base + 3usize * stride);
        // Two radix-2 DFTs over even and odd samples, then combine with ∓i.
        butterfly2::<F>(re, im, i0, i2);
        butterfly2::<F>(re, im, i1, i3);
        let (r3, m3) = rotate_quarter::<F>(re[i3], im[i3], inverse);
        re[i3] = r3;
        im[i3] = m3;
        butterfly2::<F>(re, im, i0, i1);
        butterfly2::<F>(re, im, i2, i3);
        // Outputs sit at (0, 2, 1, 3): swap the middle pair into natural order.
        let (tr, ti) = (re[i1], im[i1]);
        re[i1] = re[i2];
        im[i1] = im[i2];
        re[i2] = tr;
        im[i2] = ti;
    } else if comptime![r == 8] {
        let h = comptime![core::f32::consts::FRAC_1_SQRT_2];
        // First radix-2 layer between j and j + 4.
        #[unroll]
        for j in 0..4usize {
            butterfly2::<F>(re, im, base + j * stride, base + (j + 4usize) * stride);
        }
        // Twiddles W8^j on the difference half (j = 1, 2, 3).
        let i5 = base + 5usize * stride;
        let i6 = base + 6usize * stride;
        let i7 = base + 7usize * stride;
        let (a5, b5) = (re[i5], im[i5]);
        let (a7, b7) = (re[i7], im[i7]);
        let (q6r, q6i) = rotate_quarter::<F>(re[i6], im[i6], inverse);
        re[i6] = q6r;
        im[i6] = q6i;
        if inverse {
            // W8^{-1} = (1 + i)/√2, W8^{-3} = (-1 + i)/√2
            re[i5] = (a5 - b5) * F::new(h);
            im[i5] = (a5 + b5) * F::new(h);
            re[i7] = (F::new(0.0) - a7 - b7) * F::new(h);
            im[i7] = (a7 - b7) * F::new(h);
        } else {
            // W8^1 = (1 - i)/√2, W8^3 = (-1 - i)/√2
            re[i5] = (a5 + b5) * F::new(h);
            im[i5] = (b5 - a5) * F::new(h);
            re[i7] = (b7 - a7) * F::new(h);
            im[i7] = (F::new(0.0) - a7 - b7) * F::new(h);
        }
        // Two radix-4 DFTs on (0, 1, 2, 3) and (4, 5, 6, 7) with stride 1 of j.
        small_dft::<F>(re, im, base, stride, 4usize, inverse);
        small_dft::<F>(re, im, base + 4usize * stride, stride, 4usize, inverse);
        // Result k of the first half is X[2k], of the second X[2k+1]: interleave.
        let mut tr = Array::<F>::new(8usize);
        let mut ti = Array::<F>::new(8usize);
        #[unroll]
        for j in 0..4usize {
            tr[2usize * j] = re[base + j * stride];
            ti[2usize * j] = im[base + j * stride];
            tr[2usize * j + 1usize] = re[base + (j + 4usize) * stride];
            ti[2usize * j + 1usize] = im[base + (j + 4usize) * stride];
        }
        #[unroll]
        for j in 0..8usize {
            re[base + j * stride] = tr[j];
            im[base + j * stride] = ti[j];
        }
    } else if comptime![dft_split(r).is_none()] {
        small_prime_dft::<F>(re, im, base, stride, r, inverse);
    } else {
        composite_dft::<F>(re, im, base, stride, comptime![dft_split(r).unwrap()], inverse);
    }
}

/// In-register DFT of length `a·b` as `b` DFTs of length `a`, then `a` of
/// length `b`, gathering and scattering by the split's index maps
/// ([`DftSplit::sample`], [`DftSplit::bin`]); Cooley–Tukey multiplies the
/// twiddles `W_ab^{n2·k1}` between the layers, Good–Thomas needs none. The
/// maps are comptime, so the gather and scatter only rename registers.
#[cube]
fn composite_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] split: DftSplit,
    #[comptime] inverse: bool,
) {
    let (a, b) = comptime![(split.first, split.second)];
    let r = comptime![a * b];
    // Layer one: column n2 of length a at t[n2·a + n1].
    let mut tr = Array::<F>::new(r);
    let mut ti = Array::<F>::new(r);
    #[unroll]
    for n2 in 0..b {
        #[unroll]
        for n1 in 0..a {
            let sample = comptime![split.sample(n1, n2)];
            tr[n2 * a + n1] = re[base + sample * stride];
            ti[n2 * a + n1] = im[base + sample * stride];
        }
        small_dft::<F>(&mut tr, &mut ti, n2 * a, 1usize, a, inverse);
    }
    if comptime![!split.good_thomas] {
        #[unroll]
        for n2 in 1..b {
            #[unroll]
            for k1 in 1..a {
                let at = n2 * a + k1;
                // Quarter turns (W^{r/4}, W^{r/2}, W^{3r/4}) are exact and cost no multiply.
                let quarter = comptime![if (4 * n2 * k1) % r == 0 { 4 * n2 * k1 / r } else { 0 }];
                let (wr, wi) = if comptime![quarter == 1] {
                    rotate_quarter::<F>(tr[at], ti[at], inverse)
                } else if comptime![quarter == 2] {
                    (F::new(0.0) - tr[at], F::new(0.0) - ti[at])
                } else if comptime![quarter == 3] {
                    rotate_quarter::<F>(tr[at], ti[at], !inverse)
                } else {
                    let angle = comptime![2.0 * core::f64::consts::PI * (n2 * k1) as f64 / r as f64];
                    let c = F::new(comptime![angle.cos() as f32]);
                    let s = F::new(comptime![(if inverse { angle.sin() } else { -angle.sin() }) as f32]);
                    complex_mul::<F>(tr[at], ti[at], c, s)
                };
                tr[at] = wr;
                ti[at] = wi;
            }
        }
    }
    // Layer two: row k1 of length b at t[k1 + a·n2], its output k2 at t[k1 + a·k2].
    #[unroll]
    for k1 in 0..a {
        small_dft::<F>(&mut tr, &mut ti, k1, a, b, inverse);
    }
    #[unroll]
    for k1 in 0..a {
        #[unroll]
        for k2 in 0..b {
            let bin = comptime![split.bin(k1, k2)];
            re[base + bin * stride] = tr[k1 + a * k2];
            im[base + bin * stride] = ti[k1 + a * k2];
        }
    }
}

/// DFT of prime length `r` by pairing inputs `j` and `r - j`:
/// `y_k = x_0 + Σ_j cos(2πjk/r)·(x_j + x_{r-j}) ∓ i·Σ_j sin(2πjk/r)·(x_j - x_{r-j})`
/// and `y_{r-k}` the same with the sign of the sine sum flipped.
#[cube]
pub(super) fn small_prime_dft<F: Float>(
    re: &mut Array<F>,
    im: &mut Array<F>,
    base: usize,
    stride: usize,
    #[comptime] r: usize,
    #[comptime] inverse: bool,
) {
    let half = comptime![r / 2];
    let mut sum_r = Array::<F>::new(half);
    let mut sum_i = Array::<F>::new(half);
    let mut diff_r = Array::<F>::new(half);
    let mut diff_i = Array::<F>::new(half);
    let (x0r, x0i) = (re[base], im[base]);
    let mut y0r = x0r;
    let mut y0i = x0i;
    #[unroll]
    for j in 0..half {
        let a = base + (j + 1) * stride;
        let b = base + (r - 1 - j) * stride;
        sum_r[j] = re[a] + re[b];
        sum_i[j] = im[a] + im[b];
        diff_r[j] = re[a] - re[b];
        diff_i[j] = im[a] - im[b];
        y0r += sum_r[j];
        y0i += sum_i[j];
    }
    re[base] = y0r;
    im[base] = y0i;
    #[unroll]
    for k in 0..half {
        let mut cr = x0r;
        let mut ci = x0i;
        let mut sr = F::new(0.0);
        let mut si = F::new(0.0);
        #[unroll]
        for j in 0..half {
            let angle = comptime![2.0 * core::f64::consts::PI * (((j + 1) * (k + 1)) % r) as f64 / r as f64];
            let c = F::new(comptime![angle.cos() as f32]);
            let s = F::new(comptime![angle.sin() as f32]);
            cr += c * sum_r[j];
            ci += c * sum_i[j];
            sr += s * diff_r[j];
            si += s * diff_i[j];
        }
        // Forward: y_k = C - i·S, y_{r-k} = C + i·S; inverse swaps them.
        let (lo, hi) = if inverse {
            (r - 1 - k, k + 1)
        } else {
            (k + 1, r - 1 - k)
        };
        re[base + lo * stride] = cr + si;
        im[base + lo * stride] = ci - sr;
        re[base + hi * stride] = cr - si;
        im[base + hi * stride] = ci + sr;
    }
}

/// Reads the complex twiddle `exp(∓2πi·e/len)` from a table of `len` entries.
#[cube]
pub(super) fn table_twiddle<F: Float>(table: &Array<F>, e: usize, #[comptime] inverse: bool) -> (F, F) {
    let (wr, wi) = table_value::<F>(table, e);
    if inverse {
        (wr, F::new(0.0) - wi)
    } else {
        (wr, wi)
    }
}

/// Reads complex entry `e` of a table of precomputed factors.
#[cube]
pub(super) fn table_value<F: Float>(table: &Array<F>, e: usize) -> (F, F) {
    (table[2 * e], table[2 * e + 1])
}

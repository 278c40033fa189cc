//! The standard normal's CDF and density in f32, branch-free so that loops
//! over slices vectorise (libm's `erff` branches per value). `erf` is the
//! rational approximation Eigen and XLA use for f32, `exp` Cephes' polynomial
//! after a power-of-two reduction.

const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// erf(x) within a few units in the last place (|x| ≥ 4 gives ±1).
/// Runs `f` built for the widest vector instructions this CPU has (AVX2 and
/// FMA on x86-64 where present, checked at run time): the element loops
/// below otherwise build for the baseline's 128-bit SSE2. No fast-math, so
/// the values are the same either way.
#[inline(always)]
pub(crate) fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}

#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    for a in [
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_6e-5,
        -7.349_906_3e-4,
        -2.954_600_2e-3,
        -1.609_603_3e-2,
    ] {
        p = p * x2 + a;
    }
    let mut q = -1.456_607_2e-5f32;
    for b in [-2.133_740_6e-4, -1.682_827e-3, -7.373_329e-3, -1.426_474e-2] {
        q = q * x2 + b;
    }
    x * p / q
}

/// e^x for x in [-87, 0] (the callers' range), within 2 units in the last place.
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    // Round x·log2(e) to the nearest integer n by the 1.5·2²³ trick (no call
    // to roundf): t's low mantissa bits then hold n, so 2ⁿ's exponent field is
    // built from them by integer lanes (an `as i32` would not vectorise).
    const ROUND: f32 = 12_582_912.0;
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    for c in [1.398_2e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
        p = p * r + c;
    }
    let two_n = f32::from_bits(t.to_bits().wrapping_add(127) << 23);
    (p * r * r + r + 1.0) * two_n
}

/// Φ(x), the standard normal's CDF.
#[inline(always)]
pub(crate) fn cdf(x: f32) -> f32 {
    0.5 * (1.0 + erf(x * FRAC_1_SQRT_2))
}

/// d/dx [x·Φ(x)] = Φ(x) + x·φ(x), exact GELU's derivative. Beyond |x| = 10
/// it is 0 or 1 in f32, so x is clamped there (keeping exp's argument ≥ −50).
#[inline(always)]
pub(crate) fn gelu_derivative(x: f32) -> f32 {
    let x = x.clamp(-10.0, 10.0);
    cdf(x) + x * FRAC_1_SQRT_2PI * exp_nonpositive(-0.5 * x * x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 1/1024 over [-12, 12], and the extremes: erf against libm's
    /// f64 erf, exp against f64 exp, the derivative against its f64 formula.
    #[test]
    fn erf_exp_and_the_gelu_derivative_match_f64() {
        let xs = (-12 * 1024..=12 * 1024)
            .map(|i| i as f32 / 1024.0)
            .chain([f32::MAX, f32::MIN, 1e-30, -1e-30, 0.0]);
        let (mut erf_err, mut exp_err, mut der_err) = (0.0f64, 0.0f64, 0.0f64);
        for x in xs {
            let xd = x as f64;
            erf_err = erf_err.max((erf(x) as f64 - libm::erf(xd)).abs());
            let t = -0.5 * xd.clamp(-12.0, 12.0).powi(2);
            let e = exp_nonpositive(t as f32) as f64;
            exp_err = exp_err.max((e - (t as f32 as f64).exp()).abs() / (t as f32 as f64).exp());
            let exact = 0.5 * (1.0 + libm::erf(xd / 2f64.sqrt()))
                + xd * (-0.5 * xd * xd).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let exact = if exact.is_nan() {
                if xd > 0.0 {
                    1.0
                } else {
                    0.0
                }
            } else {
                exact
            };
            der_err = der_err.max((gelu_derivative(x) as f64 - exact).abs());
        }
        println!("max errors: erf {erf_err:e}, exp (relative) {exp_err:e}, GELU derivative {der_err:e}");
        assert!(erf_err < 5e-7, "erf off by {erf_err:e}");
        assert!(exp_err < 5e-7, "exp off by {exp_err:e}");
        assert!(der_err < 1e-6, "GELU's derivative off by {der_err:e}");
    }
}

//! Reproducible test and benchmark data, shared by the workspace's tests and
//! benchmarks so that every crate draws its inputs the same way; scratch
//! folders; error measures; and (feature `oracles`) the kernels' CPU oracles.

#[cfg(feature = "oracles")]
pub mod oracle;

/// `len` values uniform in [-1, 1) from an xorshift64 stream seeded by `seed`.
pub fn uniform(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// [`uniform`] in f32.
pub fn uniform_f32(len: usize, seed: u64) -> Vec<f32> {
    uniform(len, seed).into_iter().map(|v| v as f32).collect()
}

/// `len` values drawn from N(0, 1) (Box–Muller on [`uniform`]'s stream).
pub fn normal_f32(len: usize, seed: u64) -> Vec<f32> {
    let u = uniform(len + len % 2, seed);
    u.chunks_exact(2)
        .flat_map(|p| {
            // (0, 1] for the logarithm, [0, 1) for the angle.
            let (a, b) = (1.0 - (p[0] + 1.0) / 2.0, (p[1] + 1.0) / 2.0);
            let r = (-2.0 * a.ln()).sqrt();
            let t = std::f64::consts::TAU * b;
            [(r * t.cos()) as f32, (r * t.sin()) as f32]
        })
        .take(len)
        .collect()
}

/// A seed that differs between runs (tests draw fresh inputs; failures print
/// it), or the one `FNO_TEST_SEED` holds, to rerun a failure.
pub fn fresh_seed() -> u64 {
    if let Some(seed) = std::env::var("FNO_TEST_SEED").ok().and_then(|s| s.parse().ok()) {
        return seed;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// `‖got − want‖ / ‖want‖`.
pub fn relative_l2(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "lengths differ");
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(1e-300)).sqrt()
}

/// [`relative_l2`] of f32 data, accumulated in f64.
pub fn relative_l2_f32(got: &[f32], want: &[f32]) -> f64 {
    let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    relative_l2(&wide(got), &wide(want))
}

/// The largest [`relative_l2_f32`] of `signals` equal slices of `got` and
/// `want` (each signal's, or image's, deviation); infinite where one is NaN.
pub fn worst_signal_deviation(got: &[f32], want: &[f32], signals: usize) -> f64 {
    let len = want.len() / signals.max(1);
    got.chunks(len.max(1))
        .zip(want.chunks(len.max(1)))
        .map(|(g, w)| relative_l2_f32(g, w))
        .fold(
            0.0,
            |worst: f64, d| if d.is_nan() { f64::INFINITY } else { worst.max(d) },
        )
}

/// Path `name` in the folder `fno-test-FOLDER-PID` of the system's temporary
/// directory (created): a test's files, apart from other tests' and runs'.
pub fn scratch_file(folder: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fno-test-{folder}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("cannot create a scratch folder");
    dir.join(name)
}

/// An empty folder `fno-test-NAME-PID` in the system's temporary directory,
/// emptied where an earlier test of this process left one.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fno-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("cannot create a scratch folder");
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worst of the signals' deviations, each relative to its own norm.
    #[test]
    fn worst_signal_deviation_takes_each_signal_on_its_own() {
        let want = [3.0, 4.0, 30.0, 40.0];
        assert_eq!(worst_signal_deviation(&want, &want, 2), 0.0);
        // 0.5 off a norm of 5, and 0.5 off a norm of 50; as one signal, √0.5 off √2525.
        let got = [3.0, 4.5, 30.0, 40.5];
        assert!((worst_signal_deviation(&got, &want, 2) - 0.1).abs() < 1e-9);
        assert!((worst_signal_deviation(&got, &want, 1) - (0.5f64 / 2525.0).sqrt()).abs() < 1e-9);
        assert_eq!(
            worst_signal_deviation(&[3.0, f32::NAN, 30.0, 40.0], &want, 2),
            f64::INFINITY
        );
    }
}

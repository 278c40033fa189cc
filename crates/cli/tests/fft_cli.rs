//! `fno fft` end to end: numpy.fft semantics checked against a naive DFT written
//! here (independent of rustfft and of the plan), on the CPU and wgpu backends,
//! and the error contract (one line, exit code 2, nothing written).

use std::path::Path;
use std::process::Command;

use fno_datasets::npy::{self, DType, NpyArray};
use fno_testing::scratch_file;
use fno_testing::uniform_f32;

fn fno(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno"))
        .arg("fft")
        .args(args)
        .output()
        .unwrap()
}

type C = (f64, f64);

/// Naive DFT along `axis` of a complex array (sign -1 forward, +1 inverse, unscaled).
fn dft_axis(data: &[C], shape: &[usize], axis: usize, sign: f64) -> Vec<C> {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut out = vec![(0.0, 0.0); data.len()];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..n {
                let mut acc = (0.0, 0.0);
                for t in 0..n {
                    let (re, im) = data[(o * n + t) * inner + i];
                    let ph = sign * 2.0 * std::f64::consts::PI * ((k * t) % n) as f64 / n as f64;
                    acc.0 += re * ph.cos() - im * ph.sin();
                    acc.1 += re * ph.sin() + im * ph.cos();
                }
                out[(o * n + k) * inner + i] = acc;
            }
        }
    }
    out
}

/// Keeps indices `keep` of `axis`.
fn select(data: &[C], shape: &[usize], axis: usize, keep: &[usize]) -> (Vec<C>, Vec<usize>) {
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut out = Vec::with_capacity(outer * keep.len() * inner);
    for o in 0..outer {
        for &k in keep {
            for i in 0..inner {
                out.push(data[(o * n + k) * inner + i]);
            }
        }
    }
    let mut s = shape.to_vec();
    s[axis] = keep.len();
    (out, s)
}

fn centred(m: usize, n: usize) -> Vec<usize> {
    (0..m - m / 2).chain(n - m / 2..n).collect()
}

fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let num: f64 = got.iter().zip(want).map(|(g, w)| (*g as f64 - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den).sqrt()
}

fn run_ok(args: &[&str]) {
    let out = fno(args);
    assert!(
        out.status.success(),
        "fno fft {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn rfftn_with_modes_and_irfftn_with_padding_match_naive_dft() {
    let shape = [2usize, 16, 32];
    let x = uniform_f32(shape.iter().product(), 7);
    let input = scratch_file("fft-cli", "x.npy");
    npy::write(&input, &NpyArray::new(shape.to_vec(), DType::F32, x.clone())).unwrap();

    // Expected: full 2D DFT, then the centred window of 6 rows and the first 5 bins.
    let xc: Vec<C> = x.iter().map(|&v| (v as f64, 0.0)).collect();
    let f = dft_axis(&dft_axis(&xc, &shape, 2, -1.0), &shape, 1, -1.0);
    let (f, s) = select(&f, &shape, 2, &(0..5).collect::<Vec<_>>());
    let (spec, spec_shape) = select(&f, &s, 1, &centred(6, 16));
    let want: Vec<f64> = spec.iter().flat_map(|c| [c.0, c.1]).collect();

    for backend in ["cpu", "wgpu"] {
        let out = scratch_file("fft-cli", &format!("spec-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&input),
            "--output",
            path(&out),
            "--real",
            "--axes=-2,-1",
            "--modes",
            "6,5",
            "--backend",
            backend,
        ]);
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, spec_shape);
        assert_eq!(got.dtype, DType::C64);
        let e = rel_err(&got.data, &want);
        assert!(e < 1e-5, "{backend}: rfftn error {e}");

        // Inverse with zero-padding back to 16 x 32 (backward norm: 1/(16·32)).
        let back = scratch_file("fft-cli", &format!("back-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&out),
            "--output",
            path(&back),
            "--real",
            "--inverse",
            "--axes=-2,-1",
            "--modes",
            "6,5",
            "--n",
            "16,32",
            "--backend",
            backend,
        ]);
        // Naive: place the modes in a 16 x 32 spectrum, mirror the bins c > 0 of the
        // last axis as conj(X[-r][-c]), inverse DFT, keep the real part (which is
        // what irfftn's dropping of imaginary parts at bin 0 amounts to).
        let rows = centred(6, 16);
        let mut full = vec![(0.0, 0.0); 2 * 16 * 32];
        for b in 0..2 {
            for (ri, &r) in rows.iter().enumerate() {
                for c in 0..5 {
                    let v = spec[(b * 6 + ri) * 5 + c];
                    full[(b * 16 + r) * 32 + c] = v;
                    if c > 0 {
                        full[(b * 16 + (16 - r) % 16) * 32 + (32 - c)] = (v.0, -v.1);
                    }
                }
            }
        }
        let t = dft_axis(&dft_axis(&full, &[2, 16, 32], 1, 1.0), &[2, 16, 32], 2, 1.0);
        let want_back: Vec<f64> = t.iter().map(|c| c.0 / 512.0).collect();
        let got = npy::read(&back).unwrap();
        assert_eq!(got.shape, vec![2, 16, 32]);
        assert_eq!(got.dtype, DType::F32);
        let e = rel_err(&got.data, &want_back);
        assert!(e < 1e-5, "{backend}: irfftn error {e}");
    }
}

#[test]
fn complex_fft_axes_norm_and_length() {
    let shape = [3usize, 8, 4];
    let x = uniform_f32(2 * shape.iter().product::<usize>(), 11);
    let input = scratch_file("fft-cli", "c.npy");
    npy::write(&input, &NpyArray::new(shape.to_vec(), DType::C64, x.clone())).unwrap();
    let xc: Vec<C> = x.chunks(2).map(|c| (c[0] as f64, c[1] as f64)).collect();
    // ifft over axis 1 (given negatively), ortho norm.
    let f = dft_axis(&xc, &shape, 1, 1.0);
    let want: Vec<f64> = f.iter().flat_map(|c| [c.0 / 8f64.sqrt(), c.1 / 8f64.sqrt()]).collect();
    // Forward with numpy's n: crop axis -1 from 4 to 2.
    let (cropped, cs) = select(&xc, &shape, 2, &[0, 1]);
    let g = dft_axis(&cropped, &cs, 2, -1.0);
    let want_crop: Vec<f64> = g.iter().flat_map(|c| [c.0, c.1]).collect();
    for backend in ["cpu", "wgpu"] {
        let out = scratch_file("fft-cli", &format!("ifft-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&input),
            "--output",
            path(&out),
            "--inverse",
            "--axes",
            "-2",
            "--norm",
            "ortho",
            "--backend",
            backend,
        ]);
        let e = rel_err(&npy::read(&out).unwrap().data, &want);
        assert!(e < 1e-5, "{backend}: ifft error {e}");
        let out = scratch_file("fft-cli", &format!("crop-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&input),
            "--output",
            path(&out),
            "--n",
            "2",
            "--backend",
            backend,
        ]);
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, vec![3, 8, 2]);
        let e = rel_err(&got.data, &want_crop);
        assert!(e < 1e-5, "{backend}: cropped fft error {e}");
    }
}

/// `--precision f16`: float16 in and out, complex values as float16 pairs on
/// a last axis of 2; `--precision bf16`: float32 files holding bfloat16
/// values. Each within issue 48's bound of the naive DFT of the rounded
/// input, on the CPU and wgpu, and the forward-inverse round trip in f16.
#[test]
fn half_precision_transforms_read_and_write_their_files() {
    let shape = [4usize, 12, 20];
    let x = fno_testing::normal_f32(shape.iter().product(), 5);
    let x16: Vec<f32> = x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
    let xb: Vec<f32> = x.iter().map(|&v| half::bf16::from_f32(v).to_f32()).collect();
    let input16 = scratch_file("fft-cli", "x16.npy");
    npy::write(&input16, &NpyArray::new(shape.to_vec(), DType::F16, x16.clone())).unwrap();
    let input32 = scratch_file("fft-cli", "x32.npy");
    npy::write(&input32, &NpyArray::new(shape.to_vec(), DType::F32, x.clone())).unwrap();
    let rfft2 = |x: &[f32]| {
        let xc: Vec<C> = x.iter().map(|&v| (v as f64, 0.0)).collect();
        let f = dft_axis(&dft_axis(&xc, &shape, 2, -1.0), &shape, 1, -1.0);
        let (f, _) = select(&f, &shape, 2, &(0..11).collect::<Vec<_>>());
        f.iter().flat_map(|c| [c.0, c.1]).collect::<Vec<f64>>()
    };
    for backend in ["cpu", "wgpu"] {
        let spec = scratch_file("fft-cli", &format!("spec16-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&input16),
            "--output",
            path(&spec),
            "--real",
            "--axes=-2,-1",
            "--precision",
            "f16",
            "--backend",
            backend,
        ]);
        let got = npy::read(&spec).unwrap();
        assert_eq!((got.shape.clone(), got.dtype), (vec![4, 12, 11, 2], DType::F16));
        let e = rel_err(&got.data, &rfft2(&x16));
        assert!(e < 1e-3, "{backend}: f16 rfft2 error {e}");

        // The float16 pairs read back as the complex spectrum they hold.
        let back = scratch_file("fft-cli", &format!("back16-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&spec),
            "--output",
            path(&back),
            "--real",
            "--inverse",
            "--axes=-2,-1",
            "--n",
            "12,20",
            "--precision",
            "f16",
            "--backend",
            backend,
        ]);
        let got = npy::read(&back).unwrap();
        assert_eq!((got.shape.clone(), got.dtype), (shape.to_vec(), DType::F16));
        let want: Vec<f64> = x16.iter().map(|&v| v as f64).collect();
        let e = rel_err(&got.data, &want);
        assert!(e < 2e-3, "{backend}: f16 round trip error {e}");

        // bf16: float32 files, the input rounded on load, the output rounded.
        let spec = scratch_file("fft-cli", &format!("specb-{backend}.npy"));
        run_ok(&[
            "--input",
            path(&input32),
            "--output",
            path(&spec),
            "--real",
            "--axes=-2,-1",
            "--precision",
            "bf16",
            "--backend",
            backend,
        ]);
        let got = npy::read(&spec).unwrap();
        assert_eq!((got.shape.clone(), got.dtype), (vec![4, 12, 11], DType::C64));
        assert!(
            got.data.iter().all(|&v| half::bf16::from_f32(v).to_f32() == v),
            "{backend}: not bf16 values"
        );
        let e = rel_err(&got.data, &rfft2(&xb));
        assert!(e < 1e-2, "{backend}: bf16 rfft2 error {e}");
    }
    // A float16 input of a complex transform must hold pairs.
    let out = fno(&[
        "--input",
        path(&input16),
        "--output",
        path(&scratch_file("fft-cli", "never.npy")),
        "--precision",
        "f16",
        "--backend",
        "cpu",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("(re, im) pairs on a last axis of length 2"), "{err}");
    assert!(!scratch_file("fft-cli", "never.npy").exists());
}

#[test]
fn bad_input_is_one_error_line_exit_2_and_no_output() {
    let good = scratch_file("fft-cli", "good.npy");
    npy::write(&good, &NpyArray::new(vec![4, 8], DType::F32, uniform_f32(32, 3))).unwrap();
    let complex = scratch_file("fft-cli", "complex.npy");
    npy::write(&complex, &NpyArray::new(vec![4, 8], DType::C64, uniform_f32(64, 5))).unwrap();
    let corrupt = scratch_file("fft-cli", "corrupt.npy");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&corrupt, &bytes[..bytes.len() - 3]).unwrap();
    // Unicode strings (4 bytes each, as float32): a dtype no transform takes.
    let text_file = scratch_file("fft-cli", "text.npy");
    let mut b = bytes.clone();
    let at = b.windows(3).position(|w| w == b"<f4").unwrap();
    b[at..at + 3].copy_from_slice(b"<U1");
    std::fs::write(&text_file, &b).unwrap();

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--input", "/nonexistent/x.npy"], "No such file"),
        (vec!["--input", path(&corrupt)], "not a valid .npy"),
        (vec!["--input", path(&text_file)], "'<U1' is not supported"),
        (vec!["--input", path(&good), "--axes", "2"], "axis 2 is out of range"),
        (vec!["--input", path(&good), "--axes=-3"], "axis -3 is out of range"),
        (vec!["--input", path(&good), "--modes", "9"], "exceed"),
        (vec!["--input", path(&good), "--real", "--modes", "6"], "exceed"),
        (vec!["--input", path(&complex), "--real"], "needs float32 input"),
        (
            vec!["--input", path(&good), "--modes", "2,2"],
            "2 modes given for 1 axes",
        ),
        (
            vec!["--input", path(&complex), "--inject-fault", "3"],
            "needs --fault-tolerance",
        ),
        (
            vec!["--input", path(&complex), "--fault-tolerance", "detect"],
            "the cpu backend has none",
        ),
    ];
    for (args, expected) in cases {
        let out_path = scratch_file("fft-cli", "must-not-exist.npy");
        let _ = std::fs::remove_file(&out_path);
        let mut all = args.clone();
        all.extend(["--output", path(&out_path)]);
        if !args.contains(&"--backend") {
            all.extend(["--backend", "cpu"]);
        }
        let out = fno(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: expected one line, got {stderr}"
        );
        assert!(stderr.contains(expected), "{args:?}: '{stderr}' lacks '{expected}'");
        assert!(!out_path.exists(), "{args:?}: output written despite the error");
    }
    // Enum flags are refused by clap, which lists the accepted values.
    for (flag, value, listed) in [
        ("--norm", "sideways", "backward, forward, ortho"),
        ("--backend", "tpu", "auto, cuda, wgpu, cpu"),
    ] {
        let out = fno(&["--input", path(&good), "--output", "y.npy", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{value}'")) && stderr.contains(listed),
            "{stderr}"
        );
    }
}

/// `--fault-tolerance correct` with injected faults (wgpu): stderr reports
/// the fault, its detection and correction, and the output matches the
/// unchecked transform's; `detect` reports without correcting.
#[test]
fn injected_faults_are_reported_and_corrected() {
    let x = scratch_file("fft-cli", "faults_x.npy");
    npy::write(&x, &NpyArray::new(vec![16, 256], DType::C64, uniform_f32(16 * 512, 11))).unwrap();
    let plain = scratch_file("fft-cli", "faults_plain.npy");
    run_ok(&["--input", path(&x), "--output", path(&plain), "--backend", "wgpu"]);
    let want = npy::read(&plain).unwrap().data;
    let mut corrected = 0;
    for seed in 0..12u64 {
        let seed = seed.to_string();
        let y = scratch_file("fft-cli", "faults_y.npy");
        let common = [
            "--input",
            path(&x),
            "--output",
            path(&y),
            "--backend",
            "wgpu",
            "--inject-fault",
            &seed,
        ];
        let out = fno(&[&common[..], &["--fault-tolerance", "correct"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "seed {seed}: {stderr}");
        assert!(stderr.contains("fault: bit"), "seed {seed}: {stderr}");
        let got = npy::read(&y).unwrap().data;
        if stderr.contains("1 detected, 1 corrected") {
            corrected += 1;
            let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
            assert!(rel_err(&got, &want64) < 1e-6, "seed {seed}: corrected output differs");
        } else {
            // Undetected: a flip below the tolerance, harmless.
            assert!(stderr.contains("0 detected"), "seed {seed}: {stderr}");
            let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
            assert!(
                rel_err(&got, &want64) < 1e-5,
                "seed {seed}: undetected fault changed the output"
            );
        }
    }
    assert!(corrected >= 3, "only {corrected} of 12 random faults were detected");
}

#[test]
fn demo_runs_and_matches_the_oracle() {
    for backend in ["cpu", "wgpu"] {
        let out = Command::new(env!("CARGO_BIN_EXE_fno"))
            .args(["demo", "--backend", backend, "--size", "64", "--modes", "12"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err: f64 = stdout
            .split("relative L2 error ")
            .nth(1)
            .and_then(|s| s.split(';').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no error figure in: {stdout}"));
        assert!(err < 1e-5, "{backend}: demo error {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fno"))
        .args(["demo", "--size", "48"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn integer_input_is_transformed_with_a_warning_of_rounding() {
    let (x, y) = (
        scratch_file("fft-cli", "ints.npy"),
        scratch_file("fft-cli", "ints_fft.npy"),
    );
    let ints: Vec<u8> = [1i64, 2, 3, 5001].iter().flat_map(|v| v.to_le_bytes()).collect();
    crate::write_raw_npy(&x, "<i8", &[4], &ints);
    for (precision, name, exact) in [("f16", "float16", "2048"), ("f32", "float32", "16777216")] {
        let out = fno(&[
            "--input",
            path(&x),
            "--output",
            path(&y),
            "--precision",
            precision,
            "--backend",
            "cpu",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{precision}: {stderr}");
        let want = format!(
            "warning: {}: int64 values transformed as {name}: integers beyond ±{exact} are rounded",
            x.display()
        );
        assert_eq!(stderr.trim(), want, "{precision}");
        // Frequency 0 of [1, 2, 3, 5001]: the sum, 5007 in f32; in float16 5001
        // reads as 5000 (a spacing of 4) and the sum 5006 is stored as 5008.
        let dc = npy::read(&y).unwrap().data[0];
        assert_eq!(dc, if precision == "f16" { 5008.0 } else { 5007.0 }, "{precision}");
    }
    // Floats say nothing.
    let values: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
    npy::write(&x, &NpyArray::new(vec![4], DType::F32, values)).unwrap();
    let out = fno(&[
        "--input",
        path(&x),
        "--output",
        path(&y),
        "--precision",
        "f16",
        "--backend",
        "cpu",
    ]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

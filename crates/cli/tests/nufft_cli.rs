//! `fno nufft` end to end: both types on the CPU and wgpu backends against
//! the direct-summation oracle, batched and unbatched shapes, a non-default
//! sign, and the error contract (one line, exit code 2, nothing written).

use std::path::Path;
use std::process::Command;

use fno_datasets::npy::{self, DType, NpyArray};
use fno_kernels::nufft::{nufft_direct, NufftDesc, NufftType};
use fno_testing::scratch_file;
use fno_testing::{relative_l2, uniform_f32};

fn fno(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno"))
        .arg("nufft")
        .args(args)
        .output()
        .unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn pairs(data: &[f32]) -> Vec<(f64, f64)> {
    data.chunks(2).map(|c| (c[0] as f64, c[1] as f64)).collect()
}

fn flat(values: &[(f64, f64)]) -> Vec<f64> {
    values.iter().flat_map(|&(re, im)| [re, im]).collect()
}

fn wide(values: &[f32]) -> Vec<f64> {
    values.iter().map(|&v| v as f64).collect()
}

#[test]
fn both_types_match_the_oracle_on_cpu_and_wgpu() {
    let (m, modes) = (300, [12usize, 10]);
    let points = scratch_file("nufft-cli", "points.npy");
    let x: Vec<f32> = uniform_f32(m * 2, 11).iter().map(|v| v * 3.0).collect();
    npy::write(&points, &NpyArray::new(vec![m, 2], DType::F32, x.clone())).unwrap();
    let x64 = wide(&x);
    // Type 1 of two vectors ([2, M] values).
    let c = uniform_f32(2 * m * 2, 12);
    let values1 = scratch_file("nufft-cli", "values1.npy");
    npy::write(&values1, &NpyArray::new(vec![2, m], DType::C64, c.clone())).unwrap();
    let desc1 = NufftDesc::new(NufftType::One, &modes, 1e-5).batch(2);
    let want1 = flat(&nufft_direct(&desc1, &x64, &pairs(&c)));
    // Type 2 of one vector ([N1, N2] modes), sign +1.
    let f = uniform_f32(modes[0] * modes[1] * 2, 13);
    let values2 = scratch_file("nufft-cli", "values2.npy");
    npy::write(&values2, &NpyArray::new(modes.to_vec(), DType::C64, f.clone())).unwrap();
    let desc2 = NufftDesc::new(NufftType::Two, &modes, 1e-4).isign(1);
    let want2 = flat(&nufft_direct(&desc2, &x64, &pairs(&f)));
    for backend in ["cpu", "wgpu"] {
        let out1 = scratch_file("nufft-cli", &format!("modes-{backend}.npy"));
        let run = fno(&[
            "--type",
            "1",
            "--points",
            path(&points),
            "--values",
            path(&values1),
            "--modes",
            "12,10",
            "--eps",
            "1e-5",
            "--output",
            path(&out1),
            "--backend",
            backend,
        ]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let got = npy::read(&out1).unwrap();
        assert_eq!((got.shape.clone(), got.dtype), (vec![2, 12, 10], DType::C64));
        let e = relative_l2(&wide(&got.data), &want1);
        assert!(e < 3e-5, "{backend}: type 1 error {e:e}");

        let out2 = scratch_file("nufft-cli", &format!("points-{backend}.npy"));
        let run = fno(&[
            "--type",
            "2",
            "--points",
            path(&points),
            "--values",
            path(&values2),
            "--modes",
            "12,10",
            "--eps",
            "1e-4",
            "--isign",
            "1",
            "--output",
            path(&out2),
            "--backend",
            backend,
        ]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let got = npy::read(&out2).unwrap();
        assert_eq!((got.shape.clone(), got.dtype), (vec![m], DType::C64));
        let e = relative_l2(&wide(&got.data), &want2);
        assert!(e < 3e-4, "{backend}: type 2 error {e:e}");
    }
}

#[test]
fn bad_requests_are_one_error_line_exit_2_and_no_output() {
    let points = scratch_file("nufft-cli", "p.npy");
    npy::write(&points, &NpyArray::new(vec![20, 2], DType::F32, uniform_f32(40, 1))).unwrap();
    let points_1d = scratch_file("nufft-cli", "p1.npy");
    npy::write(&points_1d, &NpyArray::new(vec![20], DType::F32, uniform_f32(20, 1))).unwrap();
    let values = scratch_file("nufft-cli", "v.npy");
    npy::write(&values, &NpyArray::new(vec![20], DType::C64, uniform_f32(40, 2))).unwrap();
    let modes = scratch_file("nufft-cli", "f.npy");
    npy::write(&modes, &NpyArray::new(vec![8, 6], DType::C64, uniform_f32(96, 3))).unwrap();
    let mut bad_points = uniform_f32(40, 1);
    bad_points[7] = f32::NAN;
    let nan_points = scratch_file("nufft-cli", "nan.npy");
    npy::write(&nan_points, &NpyArray::new(vec![20, 2], DType::F32, bad_points)).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8",
            ],
            "expected [M, 1]",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&modes),
                "--modes",
                "8,6",
            ],
            "values of shape [8, 6]",
        ),
        (
            vec![
                "--type",
                "2",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8,6",
            ],
            "values of shape [20]",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8,x",
            ],
            "'x' is not a valid number",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8,6",
                "--eps",
                "1e-9",
            ],
            "tolerance",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8,6",
                "--isign",
                "2",
            ],
            "isign 2",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&points),
                "--values",
                path(&values),
                "--modes",
                "8,6,4,2",
            ],
            "expected [M, 4]",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                path(&nan_points),
                "--values",
                path(&values),
                "--modes",
                "8,6",
            ],
            "non-finite",
        ),
        (
            vec![
                "--type",
                "2",
                "--points",
                path(&points_1d),
                "--values",
                path(&modes),
                "--modes",
                "8,6",
            ],
            "expected [M, 2]",
        ),
        (
            vec![
                "--type",
                "1",
                "--points",
                "/nonexistent.npy",
                "--values",
                path(&values),
                "--modes",
                "8",
            ],
            "No such file",
        ),
    ];
    // Modes whose fine grid overflows (once a hang, once a capacity panic) or
    // would not fit (once an abort): refused before anything is allocated.
    let values_1d = scratch_file("nufft-cli", "v1.npy");
    npy::write(&values_1d, &NpyArray::new(vec![20], DType::C64, uniform_f32(40, 2))).unwrap();
    let huge = ["18446744073709551615", "4611686018427387904", "10000000000"];
    let cases = cases.into_iter().chain(huge.iter().map(|&n| {
        let args = [
            "--type",
            "1",
            "--points",
            path(&points_1d),
            "--values",
            path(&values_1d),
        ];
        let mut args = args.to_vec();
        args.extend(["--modes", n]);
        (args, "GB on the CPU")
    }));
    for (args, expected) in cases {
        let out_path = scratch_file("nufft-cli", "must-not-exist.npy");
        let _ = std::fs::remove_file(&out_path);
        let mut all = args.clone();
        all.extend(["--output", path(&out_path), "--backend", "cpu"]);
        let out = fno(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: '{stderr}' lacks '{expected}'");
        assert!(!out_path.exists(), "{args:?}: output written despite the error");
    }
}

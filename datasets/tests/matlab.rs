//! MATLAB files: a compressed v5 file written by SciPy (`fixtures/fno_v5.mat`:
//! `coeff` = 0.5·arange(60) and `sol` = arange(60) − 7 as C-order [3, 5, 4]
//! arrays, in double and single) and a v7.3 (HDF5) file written by h5py the
//! way MATLAB lays arrays out (`fixtures/fno_v73.mat`: dims reversed), both
//! read back in C order.

use fno_datasets::{load, read_tensors, LoadOptions};

#[test]
fn v5_files_read_in_c_order_and_load_as_coeff_to_sol() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fno_v5.mat");
    let (tensors, _) = read_tensors(&path).unwrap();
    let coeff = &tensors["coeff"];
    assert_eq!(
        (coeff.dtype.as_str(), coeff.array.shape.clone()),
        ("double", vec![3, 5, 4])
    );
    assert!(coeff.array.data.iter().enumerate().all(|(i, &v)| v == 0.5 * i as f32));
    assert_eq!(tensors["sol"].dtype, "single");
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(d.outputs.shape, vec![3, 1, 5, 4]);
    assert!(d.outputs.data.iter().enumerate().all(|(i, &v)| v == i as f32 - 7.0));
    let junk = std::env::temp_dir().join(format!("fno_junk_{}.mat", std::process::id()));
    std::fs::write(&junk, b"MATLAB 5.0 MAT-file but cut short").unwrap();
    let e = load(&junk, &LoadOptions::default()).unwrap_err().to_string();
    assert!(e.contains("fno_junk") && e.contains("MATLAB"), "{e}");
}

#[cfg(feature = "hdf5")]
#[test]
fn v73_files_are_hdf5_with_matlab_dims() {
    // Written by h5py (fixtures/make_hdf5.py) behind MATLAB's 512-byte header:
    // MATLAB's a(n, x) = 10n + x of a [2, 3] double array, stored as HDF5
    // [3, 2] in C order, and u = -a.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fno_v73.mat");
    let matlab = |n: usize, x: usize| (10 * n + x) as f32;
    let want: Vec<f32> = (0..2).flat_map(|n| (0..3).map(move |x| matlab(n, x))).collect();
    let (tensors, _) = read_tensors(&path).unwrap();
    assert_eq!(
        (tensors["a"].dtype.as_str(), tensors["a"].array.shape.clone()),
        ("float64", vec![2, 3])
    );
    assert_eq!(tensors["a"].array.data, want);
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(
        (d.inputs.shape.clone(), d.outputs.shape.clone()),
        (vec![2, 1, 3], vec![2, 1, 3])
    );
    assert_eq!(d.inputs.data, want);
    assert_eq!(d.outputs.data, want.iter().map(|v| -v).collect::<Vec<_>>());
}

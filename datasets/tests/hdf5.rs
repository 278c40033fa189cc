//! HDF5 files in PDEBench's layouts, written by h5py (libhdf5) into
//! `fixtures/` by `fixtures/make_hdf5.py` (1D `tensor` [N, T, X] chunked with
//! gzip, 2D Darcy `nu` + `tensor`, per-seed groups of `data` [T, X, Y, C] in
//! libhdf5's latest format, a file as libhdf5 wrote ours, looping and deep
//! groups), our own round trip, and corrupt copies; values checked exactly
//! against the formulas the script wrote.

use std::path::{Path, PathBuf};

use fno_datasets::{load, read_tensors, save, Array, LoadOptions, PdeDataset};
use fno_testing::scratch_file;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The values of `shape` in C order, from a function of the index.
fn grid(shape: &[usize], f: impl Fn(&[usize]) -> f32) -> Vec<f32> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut flat| {
            let mut index = vec![0; shape.len()];
            for (i, &d) in shape.iter().enumerate().rev() {
                index[i] = flat % d;
                flat /= d;
            }
            f(&index)
        })
        .collect()
}

#[test]
fn pdebench_trajectories_pick_time_steps_samples_and_strides() {
    // tensor [4, 5, 16], chunked [1, 2, 16], gzip + shuffle.
    let path = fixture("pdebench_1d.h5");
    let at = |s: usize, step: usize, i: usize| s as f32 * 1000.0 + step as f32 * 50.0 + i as f32 * 0.25;
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(
        (d.inputs.shape.clone(), d.outputs.shape.clone()),
        (vec![4, 1, 16], vec![4, 1, 16])
    );
    assert_eq!(d.inputs.data, grid(&[4, 1, 16], |i| at(i[0], 0, i[2])));
    assert_eq!(d.outputs.data, grid(&[4, 1, 16], |i| at(i[0], 4, i[2])));
    let part = load(
        &path,
        &LoadOptions {
            samples: Some(1..3),
            time: Some((1, 3)),
            stride: 2,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(part.inputs.shape, vec![2, 1, 8]);
    assert_eq!(part.inputs.data, grid(&[2, 1, 8], |i| at(1 + i[0], 1, 2 * i[2])));
    assert_eq!(part.outputs.data, grid(&[2, 1, 8], |i| at(1 + i[0], 3, 2 * i[2])));
    let e = load(
        &path,
        &LoadOptions {
            time: Some((0, 5)),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pdebench_1d.h5") && e.contains("time step 5"), "{e}");
    let e = load(
        &path,
        &LoadOptions {
            samples: Some(2..5),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pdebench_1d.h5") && e.contains("out of the 4"), "{e}");
    let (tensors, metadata) = read_tensors(&path).unwrap();
    assert_eq!(
        tensors.keys().collect::<Vec<_>>(),
        ["t-coordinate", "tensor", "x-coordinate"]
    );
    let tensor = &tensors["tensor"];
    assert_eq!(
        (tensor.dtype.as_str(), tensor.array.shape.clone()),
        ("float32", vec![4, 5, 16])
    );
    assert_eq!(tensor.array.data, grid(&[4, 5, 16], |i| at(i[0], i[1], i[2])));
    assert_eq!(tensors["t-coordinate"].array.data, grid(&[6], |i| i[0] as f32));
    assert!(metadata.is_empty());
}

#[test]
fn pdebench_darcy_and_per_seed_groups() {
    // nu [3, 8, 8] float64 and tensor [3, 1, 8, 8] float32 = nu / 2 - 1.
    let path = fixture("pdebench_darcy.h5");
    let nu = |n: usize, i: usize, j: usize| (n * 100 + i * 8 + j) as f32;
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(
        (d.inputs.shape.clone(), d.outputs.shape.clone()),
        (vec![3, 1, 8, 8], vec![3, 1, 8, 8])
    );
    assert_eq!(d.inputs.data, grid(&[3, 1, 8, 8], |i| nu(i[0], i[2], i[3])));
    assert_eq!(
        d.outputs.data,
        grid(&[3, 1, 8, 8], |i| nu(i[0], i[2], i[3]) / 2.0 - 1.0)
    );
    let part = load(
        &path,
        &LoadOptions {
            samples: Some(2..3),
            stride: 4,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(part.inputs.shape, vec![1, 1, 2, 2]);
    assert_eq!(
        part.inputs.data,
        vec![nu(2, 0, 0), nu(2, 0, 4), nu(2, 4, 0), nu(2, 4, 4)]
    );
    let (tensors, _) = read_tensors(&path).unwrap();
    assert_eq!(
        (tensors["nu"].dtype.as_str(), tensors["tensor"].dtype.as_str()),
        ("float64", "float32")
    );
    assert_eq!(tensors["x-coordinate"].array.shape, vec![8]);

    // libver='latest': 0000..0002/data [3, 4, 5, 2] and 0000/grid/{x,y,t}.
    let path = fixture("pdebench_seeds.h5");
    let (t, nx, ny, c) = (3, 4, 5, 2);
    let want = |seed: usize, step: usize, i: usize, j: usize, ch: usize| {
        (seed * 1000 + ((step * nx + i) * ny + j) * c + ch) as f32
    };
    let d = load(
        &path,
        &LoadOptions {
            samples: Some(1..3),
            ..Default::default()
        },
    )
    .unwrap();
    // Sample k is seed 1 + k, channels first: [k, ch, i, j] = data[t, i, j, ch].
    assert_eq!(d.inputs.shape, vec![2, 2, 4, 5]);
    assert_eq!(
        d.inputs.data,
        grid(&[2, 2, 4, 5], |i| want(1 + i[0], 0, i[2], i[3], i[1]))
    );
    assert_eq!(
        d.outputs.data,
        grid(&[2, 2, 4, 5], |i| want(1 + i[0], t - 1, i[2], i[3], i[1]))
    );
    let d = load(
        &path,
        &LoadOptions {
            time: Some((1, 1)),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(d.inputs.shape, vec![3, 2, 4, 5]);
    assert_eq!(d.inputs.data, d.outputs.data);
    assert_eq!(d.inputs.data, grid(&[3, 2, 4, 5], |i| want(i[0], 1, i[2], i[3], i[1])));
    let (tensors, _) = read_tensors(&path).unwrap();
    assert_eq!(tensors.len(), 12);
    assert_eq!(
        tensors["0002/data"].array.data,
        grid(&[t, nx, ny, c], |i| want(2, i[0], i[1], i[2], i[3]))
    );
    assert_eq!(tensors["0001/grid/y"].array.data, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
}

#[test]
fn our_files_round_trip_and_unknown_layouts_are_named() {
    let x = Array::new(vec![3, 2, 4], (0..24).map(|i| i as f32 * 0.5 - 3.0).collect()).unwrap();
    let y = Array::new(vec![3, 1, 4], (0..12).map(|i| i as f32 * 1e-3).collect()).unwrap();
    let mut d = PdeDataset::new(x, y).unwrap();
    d.metadata.insert("pde".into(), "darcy".into());
    d.metadata.insert("note".into(), "écrit \"quoted\"".into());
    let path = scratch_file("hdf5", "ours.h5");
    std::fs::write(&path, b"an older file, replaced").unwrap();
    save(&path, &d).unwrap();
    let back = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!((&back.inputs, &back.outputs), (&d.inputs, &d.outputs));
    assert_eq!(back.metadata["pde"], "darcy");
    assert_eq!(back.metadata["note"], "écrit \"quoted\"");
    assert_eq!(back.metadata["layout"], "samples,channels,grid");
    let (tensors, metadata) = read_tensors(&path).unwrap();
    assert_eq!(tensors.keys().collect::<Vec<_>>(), ["x", "y"]);
    assert_eq!(
        (tensors["x"].dtype.as_str(), &tensors["x"].array),
        ("float32", &d.inputs)
    );
    assert_eq!(metadata["pde"], "darcy");
    let part = load(
        &path,
        &LoadOptions {
            samples: Some(1..3),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(part.inputs.data, d.inputs.data[8..]);
    // Written atomically: nothing but the file is left beside it.
    let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("ours"))
        .collect();
    assert_eq!(left, ["ours.h5"]);

    // Ours as libhdf5 wrote them (a scalar variable-length string attribute).
    let old = load(fixture("ours_libhdf5.h5"), &LoadOptions::default()).unwrap();
    assert_eq!(old.inputs.shape, vec![2, 2, 3]);
    assert_eq!(
        old.inputs.data,
        grid(&[2, 2, 3], |i| (i[0] * 100 + i[1] * 10 + i[2]) as f32)
    );
    assert_eq!(old.outputs.data, grid(&[2, 1, 3], |i| -((i[0] * 100 + i[2]) as f32)));
    assert_eq!(
        (old.metadata["pde"].as_str(), old.metadata["note"].as_str()),
        ("darcy", "écrit")
    );

    // An HDF5 file (the v7.3 `.mat` fixture) with datasets `a` and `u` only.
    let other = scratch_file("hdf5", "other.h5");
    std::fs::copy(fixture("fno_v73.mat"), &other).unwrap();
    let e = load(&other, &LoadOptions::default()).unwrap_err().to_string();
    assert!(e.contains("other.h5") && e.contains("[\"a\", \"u\"]"), "{e}");
    let named = LoadOptions {
        input_key: Some("a".into()),
        output_key: Some("missing".into()),
        ..Default::default()
    };
    let e = load(&other, &named).unwrap_err().to_string();
    assert!(e.contains("other.h5") && e.contains("no dataset 'missing'"), "{e}");
    std::fs::write(scratch_file("hdf5", "junk.h5"), b"junk").unwrap();
    let e = load(scratch_file("hdf5", "junk.h5"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("junk.h5") && e.contains("HDF5"), "{e}");
}

/// A group linked into itself (hard and soft links) is read once, and
/// nesting deeper than the limit is an error, not a stack overflow.
#[test]
fn group_walks_are_bounded() {
    let (tensors, _) = read_tensors(fixture("cycle.h5")).unwrap();
    assert_eq!(tensors.keys().collect::<Vec<_>>(), ["a/v"]);
    assert_eq!(tensors["a/v"].array.data, [1.0, 2.0]);
    let e = read_tensors(fixture("deep.h5")).unwrap_err().to_string();
    assert!(e.contains("deep.h5") && e.contains("deeper than 16"), "{e}");
}

/// Truncated copies of every fixture, and copies with single bytes changed,
/// give an error that names the file (or, for a change in the data, values),
/// never a panic, a hang or a huge allocation (a changed dim can declare
/// gigabytes of fill values: the file-size bound refuses them).
#[test]
fn corrupt_copies_fail_cleanly() {
    let names = [
        "pdebench_1d.h5",
        "pdebench_darcy.h5",
        "pdebench_seeds.h5",
        "ours_libhdf5.h5",
        "fno_v73.mat",
    ];
    let path = scratch_file("hdf5", "corrupt.h5");
    // Whether `load` and `read_tensors` failed on `bytes`.
    let try_both = |bytes: &[u8]| -> (bool, bool) {
        std::fs::write(&path, bytes).unwrap();
        let loaded = load(&path, &LoadOptions::default());
        let read = read_tensors(&path);
        for e in [loaded.as_ref().err(), read.as_ref().err()].into_iter().flatten() {
            assert!(e.to_string().contains("corrupt.h5"), "{e}");
        }
        (loaded.is_err(), read.is_err())
    };
    for name in names {
        let bytes = std::fs::read(fixture(name)).unwrap();
        for len in [0, 8, 100, 600, bytes.len() / 2] {
            let (loaded, read) = try_both(&bytes[..len]);
            // Half of ours holds its datasets whole: only the metadata is lost.
            assert!(
                loaded && (read || name == "ours_libhdf5.h5"),
                "{name} cut to {len} bytes"
            );
        }
        // Every byte was tried with both changes when this test was written;
        // a stride keeps it short.
        for at in (0..bytes.len()).step_by(7) {
            for change in [0x5a, 0xff] {
                let mut bad = bytes.clone();
                bad[at] ^= change;
                try_both(&bad);
            }
        }
    }
}

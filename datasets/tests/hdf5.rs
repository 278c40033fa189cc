//! HDF5 files in PDEBench's layouts (written here with the hdf5 crate: 1D
//! `tensor` [N, T, X], 2D Darcy `nu` + `tensor`, per-seed groups of
//! `data` [T, X, Y, C]) and our own round trip, with sample ranges, time steps
//! and strides, against values computed from what was written.

use fno_datasets::{load, read_tensors, save, Array, LoadOptions, PdeDataset};
use hdf5_metno::File;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fno_hdf5_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.5).collect()
}

#[test]
fn pdebench_trajectories_pick_time_steps_samples_and_strides() {
    let path = scratch("burgers.h5");
    let (n, t, x) = (4, 5, 16);
    let f = File::create(&path).unwrap();
    f.new_dataset::<f32>()
        .shape([n, t, x])
        .create("tensor")
        .unwrap()
        .write_raw(&values(n * t * x))
        .unwrap();
    f.new_dataset::<f32>()
        .shape([x])
        .create("x-coordinate")
        .unwrap()
        .write_raw(&values(x))
        .unwrap();
    drop(f);
    let at = |s: usize, step: usize, i: usize| ((s * t + step) * x + i) as f32 * 0.5;
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(d.inputs.shape, vec![4, 1, 16]);
    assert_eq!(d.inputs.data[16 + 3], at(1, 0, 3));
    assert_eq!(d.outputs.data[16 + 3], at(1, 4, 3));
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
    assert_eq!(part.inputs.data[8 + 2], at(2, 1, 4));
    assert_eq!(part.outputs.data[2], at(1, 3, 4));
    let e = load(
        &path,
        &LoadOptions {
            time: Some((0, 5)),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("burgers.h5") && e.contains("time step 5"), "{e}");
    let (tensors, _) = read_tensors(&path).unwrap();
    assert_eq!(tensors["tensor"].array.shape, vec![4, 5, 16]);
}

#[test]
fn pdebench_darcy_and_per_seed_groups() {
    let path = scratch("darcy.h5");
    let f = File::create(&path).unwrap();
    let nu: Vec<f64> = (0..3 * 64).map(|i| i as f64).collect();
    f.new_dataset::<f64>()
        .shape([3, 8, 8])
        .create("nu")
        .unwrap()
        .write_raw(&nu)
        .unwrap();
    f.new_dataset::<f32>()
        .shape([3, 1, 8, 8])
        .create("tensor")
        .unwrap()
        .write_raw(&values(192))
        .unwrap();
    drop(f);
    let d = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(
        (d.inputs.shape.clone(), d.outputs.shape.clone()),
        (vec![3, 1, 8, 8], vec![3, 1, 8, 8])
    );
    assert_eq!(d.inputs.data[100], 100.0);

    let path = scratch("reaction.h5");
    let f = File::create(&path).unwrap();
    let (t, nx, ny, c) = (3, 4, 5, 2);
    for seed in 0..3 {
        let g = f.create_group(&format!("{seed:04}")).unwrap();
        let data: Vec<f32> = (0..t * nx * ny * c).map(|i| (seed * 1000 + i) as f32).collect();
        g.new_dataset::<f32>()
            .shape([t, nx, ny, c])
            .create("data")
            .unwrap()
            .write_raw(&data)
            .unwrap();
    }
    drop(f);
    let d = load(
        &path,
        &LoadOptions {
            samples: Some(1..3),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(d.inputs.shape, vec![2, 2, 4, 5]);
    // Sample 0 is seed 1; channel 1 at (i, j) = data[t, i, j, 1].
    let want = |seed: usize, step: usize, i: usize, j: usize, ch: usize| {
        (seed * 1000 + ((step * nx + i) * ny + j) * c + ch) as f32
    };
    assert_eq!(d.inputs.data[20 + 2 * 5 + 3], want(1, 0, 2, 3, 1));
    assert_eq!(d.outputs.data[40 + 7], want(2, 2, 1, 2, 0));
}

#[test]
fn our_files_round_trip_and_unknown_layouts_are_named() {
    let x = Array::new(vec![3, 2, 4], values(24)).unwrap();
    let y = Array::new(vec![3, 1, 4], values(12)).unwrap();
    let mut d = PdeDataset::new(x, y).unwrap();
    d.metadata.insert("pde".into(), "darcy".into());
    let path = scratch("ours.h5");
    save(&path, &d).unwrap();
    let back = load(&path, &LoadOptions::default()).unwrap();
    assert_eq!((&back.inputs, &back.outputs), (&d.inputs, &d.outputs));
    assert_eq!(back.metadata["pde"], "darcy");

    let other = scratch("other.h5");
    let f = File::create(&other).unwrap();
    f.new_dataset::<f32>()
        .shape([2, 3])
        .create("velocity")
        .unwrap()
        .write_raw(&values(6))
        .unwrap();
    drop(f);
    let e = load(&other, &LoadOptions::default()).unwrap_err().to_string();
    assert!(e.contains("other.h5") && e.contains("velocity"), "{e}");
    std::fs::write(scratch("junk.h5"), b"junk").unwrap();
    let e = load(scratch("junk.h5"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("junk.h5") && e.contains("HDF5"), "{e}");
}

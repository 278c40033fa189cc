//! neuraloperator's Darcy `.pt` files from ../shared (torch zip + pickle, bool x
//! and float y as Fortran-ordered strided views), read against the values
//! PyTorch itself reads, checked through invariants of the data (x is binary; y
//! vanishes on the grid's first row and column and is smooth), which a reading
//! that ignored the strides would break.

use fno_datasets::torch::read_tensors;

fn shared(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/neuralop")
        .join(name)
}

#[test]
fn darcy_files_read_with_their_strides() {
    for (name, n) in [("darcy_test_16.pt", 50), ("darcy_train_16.pt", 1000)] {
        let tensors = read_tensors(shared(name)).unwrap();
        let (x, y) = (&tensors["x"], &tensors["y"]);
        assert_eq!((x.dtype.as_str(), y.dtype.as_str()), ("bool", "float32"), "{name}");
        assert_eq!(x.array.shape, vec![n, 16, 16], "{name}");
        assert_eq!(y.array.shape, vec![n, 16, 16], "{name}");
        assert!(
            x.array.data.iter().all(|&v| v == 0.0 || v == 1.0),
            "{name}: x is binary"
        );
        // The 16² grid keeps the solve's x = 0 and y = 0 boundary (u = 0 there)
        // and u is smooth inside: only a reading with the right strides sees
        // both in every sample (a C-order reading mixes samples into noise).
        let (mut edge_sum, mut total_sum) = (0.0, 0.0);
        for s in 0..n {
            let u = &y.array.data[s * 256..][..256];
            let at = |i: usize, j: usize| u[16 * i + j];
            edge_sum += (0..16).map(|k| at(0, k).abs() + at(k, 0).abs()).sum::<f32>() / 32.0;
            total_sum += u.iter().map(|v| v.abs()).sum::<f32>() / 256.0;
            let jumps: f32 = (0..16)
                .flat_map(|i| (1..16).map(move |j| (i, j)))
                .map(|(i, j)| (at(i, j) - at(i, j - 1)).abs())
                .sum();
            let mass: f32 = u.iter().map(|v| v.abs()).sum();
            assert!(jumps < 0.5 * mass, "{name} sample {s}: not smooth ({})", jumps / mass);
        }
        assert!(
            edge_sum < 0.1 * total_sum,
            "{name}: boundary mean {edge_sum} vs field mean {total_sum}"
        );
    }
}

#[test]
fn corrupt_and_missing_files_are_named_errors() {
    let dir = std::env::temp_dir().join(format!("fno_pt_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(shared("darcy_test_16.pt")).unwrap();
    let truncated = dir.join("truncated.pt");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = read_tensors(&truncated).unwrap_err().to_string();
    assert!(e.contains("truncated.pt"), "{e}");
    let garbage = dir.join("garbage.pt");
    std::fs::write(&garbage, b"not a zip at all").unwrap();
    let e = read_tensors(&garbage).unwrap_err().to_string();
    assert!(e.contains("garbage.pt") && e.contains("zip"), "{e}");
    let e = read_tensors(dir.join("missing.pt")).unwrap_err().to_string();
    assert!(e.contains("missing.pt"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Dataset files in every format we read: round trips through our writers
//! (.safetensors, .npz incl. metadata), on-demand sample reads, NumPy dtypes
//! other than f32, compressed .npz, neuraloperator's .pt through `load` with
//! sample ranges and strides, and the errors that name file and key.

use std::io::Write;

use fno_datasets::safetensors_file::SafetensorsSamples;
use fno_datasets::{load, read_tensors, save, Array, LoadOptions, PdeDataset};
use fno_testing::scratch_file;

fn dataset() -> PdeDataset {
    let x = Array::new(vec![5, 2, 6, 4], (0..240).map(|v| (v as f32).sin()).collect()).unwrap();
    let y = Array::new(vec![5, 1, 6, 4], (0..120).map(|v| (v as f32 * 0.3).cos()).collect()).unwrap();
    let mut d = PdeDataset::new(x, y).unwrap();
    d.metadata.insert("pde".into(), "test".into());
    d
}

#[test]
fn our_files_round_trip_with_metadata_ranges_and_strides() {
    let d = dataset();
    for ext in ["safetensors", "npz"] {
        let path = scratch_file("formats", &format!("round.{ext}"));
        save(&path, &d).unwrap();
        let back = load(&path, &LoadOptions::default()).unwrap();
        assert_eq!((&back.inputs, &back.outputs), (&d.inputs, &d.outputs), "{ext}");
        assert_eq!(back.metadata["pde"], "test", "{ext}");
        let part = load(
            &path,
            &LoadOptions {
                samples: Some(1..4),
                stride: 2,
                ..Default::default()
            },
        )
        .unwrap();
        let want = d.select(1..4, 2).unwrap();
        assert_eq!((&part.inputs, &part.outputs), (&want.inputs, &want.outputs), "{ext}");
    }
}

#[test]
fn safetensors_samples_are_read_on_demand() {
    let d = dataset();
    let path = scratch_file("formats", "lazy.safetensors");
    save(&path, &d).unwrap();
    let samples = SafetensorsSamples::open(&path).unwrap();
    assert_eq!(samples.len(), 5);
    assert_eq!(samples.sample_shapes(), (&[2, 6, 4][..], &[1, 6, 4][..]));
    for i in [4, 0, 2] {
        let (x, y) = samples.get(i).unwrap();
        assert_eq!((x.as_slice(), y.as_slice()), d.sample(i));
    }
    assert!(samples.get(5).is_err());
}

/// A .npy file of `<f8` values, written byte by byte.
fn npy_f64(shape: &[usize], values: &[f64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({},), }}",
        dims.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    for v in values {
        out.extend(v.to_le_bytes());
    }
    out
}

#[test]
fn numpy_files_of_other_dtypes_and_compressed_archives() {
    let values: Vec<f64> = (0..24).map(|v| v as f64 * 0.25 - 1.0).collect();
    let npy = scratch_file("formats", "a.npy");
    std::fs::write(&npy, npy_f64(&[2, 3, 4], &values)).unwrap();
    let (tensors, _) = read_tensors(&npy).unwrap();
    assert_eq!(tensors["a"].dtype, "float64");
    assert_eq!(tensors["a"].array.shape, vec![2, 3, 4]);
    assert!(tensors["a"]
        .array
        .data
        .iter()
        .zip(&values)
        .all(|(a, b)| *a as f64 == *b));

    // np.savez_compressed: deflated entries; [N, *grid] arrays without channels.
    let npz = scratch_file("formats", "compressed.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&npz).unwrap());
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for name in ["a", "u"] {
        zip.start_file(format!("{name}.npy"), deflated).unwrap();
        zip.write_all(&npy_f64(&[2, 3, 4], &values)).unwrap();
    }
    zip.finish().unwrap();
    let d = load(&npz, &LoadOptions::default()).unwrap();
    assert_eq!(d.inputs.shape, vec![2, 1, 3, 4]);
    assert_eq!(d.outputs.data, d.inputs.data);
}

#[test]
fn neuraloperator_pt_through_load() {
    let pt = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/neuralop/darcy_test_16.pt");
    let full = load(&pt, &LoadOptions::default()).unwrap();
    assert_eq!(
        (full.inputs.shape.clone(), full.outputs.shape.clone()),
        (vec![50, 1, 16, 16], vec![50, 1, 16, 16])
    );
    let part = load(
        &pt,
        &LoadOptions {
            samples: Some(10..20),
            stride: 2,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(part.inputs.shape, vec![10, 1, 8, 8]);
    assert_eq!(part.outputs.data, full.select(10..20, 2).unwrap().outputs.data);
}

#[test]
fn bad_files_and_keys_are_named() {
    let d = dataset();
    let path = scratch_file("formats", "bad.safetensors");
    save(&path, &d).unwrap();
    let e = load(
        &path,
        &LoadOptions {
            input_key: Some("coeff".into()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("bad.safetensors") && e.contains("coeff") && e.contains("x, y"),
        "{e}"
    );
    let bytes = std::fs::read(&path).unwrap();
    let cut = scratch_file("formats", "cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).unwrap();
    let e = load(&cut, &LoadOptions::default()).unwrap_err().to_string();
    assert!(e.contains("cut.safetensors") && e.contains("truncated"), "{e}");
    let e = load(scratch_file("formats", "x.csv"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.csv") && e.contains("format"), "{e}");
    let e = load(
        &path,
        &LoadOptions {
            samples: Some(3..9),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("bad.safetensors") && e.contains("3..9"), "{e}");
}

#[test]
fn our_safetensors_read_back_through_the_safetensors_crate() {
    let d = dataset();
    let path = scratch_file("formats", "crate.safetensors");
    save(&path, &d).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    for (name, a) in [("x", &d.inputs), ("y", &d.outputs)] {
        let t = st.tensor(name).unwrap();
        assert_eq!((t.dtype(), t.shape()), (safetensors::Dtype::F32, &a.shape[..]));
        let values: Vec<f32> = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(values, a.data, "{name}");
    }
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["pde"], "test");
    assert_eq!(metadata["layout"], "samples,channels,grid");
}

#[test]
fn damaged_safetensors_are_errors_naming_the_file() {
    let d = dataset();
    let path = scratch_file("formats", "whole.safetensors");
    save(&path, &d).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let cut = scratch_file("formats", "truncated.safetensors");
    // Every length short of the whole: inside the length, the header, the data.
    for len in [0, 5, 8, 20, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let e = read_tensors(&cut).unwrap_err().to_string();
        assert!(e.contains("truncated.safetensors"), "{len}: {e}");
        assert!(SafetensorsSamples::open(&cut).is_err(), "{len}");
    }
    // A header whose dtype we do not know, and one whose offsets do not fit its shape.
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    for (from, to, says) in [("\"F32\"", "\"Q32\"", "Q32"), ("[5,2,6,4]", "[5,2,6,5]", "header")] {
        assert!(header.contains(from), "{header}");
        let mut damaged = bytes.clone();
        damaged[8..8 + header_len].copy_from_slice(header.replacen(from, to, 1).as_bytes());
        std::fs::write(&cut, &damaged).unwrap();
        let e = read_tensors(&cut).unwrap_err().to_string();
        assert!(e.contains("truncated.safetensors") && e.contains(says), "{e}");
    }
}

#[test]
fn npy_files_written_by_npyz_read_as_f32_in_c_order() {
    use fno_datasets::npy;
    use npyz::WriterBuilder;
    // float64 (numpy's default), big-endian, Fortran order: element (i, j) of
    // a 2x3 array is 10 i + j + 0.5, stored column by column.
    let fortran: Vec<f64> = (0..3)
        .flat_map(|j| (0..2).map(move |i| 10.0 * i as f64 + j as f64 + 0.5))
        .collect();
    let mut bytes = Vec::new();
    let mut w = npyz::WriteOptions::<f64>::new()
        .dtype(npyz::DType::new_scalar(">f8".parse().unwrap()))
        .order(npyz::Order::Fortran)
        .shape(&[2, 3])
        .writer(&mut bytes)
        .begin_nd()
        .unwrap();
    w.extend(fortran.iter().copied()).unwrap();
    w.finish().unwrap();
    let path = scratch_file("formats", "f64_fortran.npy");
    std::fs::write(&path, &bytes).unwrap();
    let want = vec![0.5f32, 1.5, 2.5, 10.5, 11.5, 12.5];
    let a = npy::read(&path).unwrap();
    assert_eq!((a.dtype, &a.shape, &a.data), (npy::DType::F32, &vec![2, 3], &want));
    let (tensors, _) = read_tensors(&path).unwrap();
    let t = &tensors["f64_fortran"];
    assert_eq!(
        (t.dtype.as_str(), &t.array.shape, &t.array.data),
        ("float64", &vec![2, 3], &want)
    );

    // What npy::write writes, npyz reads.
    let ours = scratch_file("formats", "ours.npy");
    npy::write(&ours, &npy::NpyArray::new(vec![2, 3], npy::DType::F32, want.clone())).unwrap();
    let ours = std::fs::read(&ours).unwrap();
    let file = npyz::NpyFile::new(&ours[..]).unwrap();
    assert_eq!(file.shape(), &[2, 3]);
    assert_eq!(file.into_vec::<f32>().unwrap(), want);
}

#[test]
fn damaged_npy_files_are_errors_naming_the_file() {
    use fno_datasets::npy;
    let path = scratch_file("formats", "whole.npy");
    npy::write(&path, &npy::NpyArray::new(vec![4, 4], npy::DType::F32, vec![1.0; 16])).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let cut = scratch_file("formats", "truncated.npy");
    for len in [0, 6, 9, 40, 127, 128, bytes.len() - 1] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let e = npy::read(&cut).unwrap_err().to_string();
        assert!(e.contains("truncated.npy"), "{len}: {e}");
        let e = read_tensors(&cut).unwrap_err().to_string();
        assert!(e.contains("truncated.npy"), "{len}: {e}");
    }
    // A header claiming far more than the file holds (or than fits in memory):
    // an error, before anything of that size is allocated.
    let data_start = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    for shape in [
        "(100000000000, 100000)",
        "(18446744073709551615, 3)",
        "(4294967296, 4294967296, 2)",
    ] {
        let mut text = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + text.len() + 1) % 64 != 0 {
            text.push(' ');
        }
        text.push('\n');
        let mut huge = b"\x93NUMPY\x01\x00".to_vec();
        huge.extend((text.len() as u16).to_le_bytes());
        huge.extend(text.as_bytes());
        huge.extend(&bytes[data_start..]);
        let big = scratch_file("formats", "huge.npy");
        std::fs::write(&big, &huge).unwrap();
        let e = npy::read(&big).unwrap_err().to_string();
        assert!(
            e.contains("huge.npy") && e.contains(shape.trim_matches(['(', ')']).split(',').next().unwrap()),
            "{e}"
        );
        assert!(read_tensors(&big).is_err());
    }
}

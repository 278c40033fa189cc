//! Hostile files, built here, that once crashed the loaders (found by mutation
//! fuzzing): each is now a one-line error naming the file and what is at
//! fault, and the legitimate files they were made from still load exactly.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use fno_datasets::read_tensors;
use fno_testing::scratch_dir;

/// Checks that reading `path` fails with one line naming the file and holding
/// every one of `parts`.
fn error_of(path: &Path, parts: &[&str]) {
    let e = read_tensors(path).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()) && !e.contains('\n'), "{e}");
    for part in parts {
        assert!(e.contains(part), "{part:?} not in: {e}");
    }
}

/// What a file may expand to: 512 times its size, at least 64 MiB (the bombs
/// here expand 1000-fold).
fn budget(path: &Path) -> u64 {
    let len = std::fs::metadata(path).unwrap().len();
    assert!(len < 300_000, "{len}");
    (512 * len).max(64 << 20)
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// A zlib stream of `n` zero bytes, compressed about 1000 to 1.
fn zeros_zlib(n: usize) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..n >> 20 {
        z.write_all(&chunk).unwrap();
    }
    z.finish().unwrap()
}

/// A v5 element: its tag (type, length) and data, little-endian.
fn element(kind: u32, data: &[u8]) -> Vec<u8> {
    [&kind.to_le_bytes()[..], &(data.len() as u32).to_le_bytes(), data].concat()
}

/// The fixture's header and its two arrays (`coeff`, `sol`) as uncompressed
/// matrix elements (tag and data, unpadded).
fn v5_fixture() -> (Vec<u8>, Vec<Vec<u8>>) {
    let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fno_v5.mat")).unwrap();
    let mut arrays = Vec::new();
    let mut at = 128;
    while at < bytes.len() {
        let n = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let mut inflated = Vec::new();
        flate2::read::ZlibDecoder::new(&bytes[at + 8..at + 8 + n])
            .read_to_end(&mut inflated)
            .unwrap();
        arrays.push(inflated);
        at += 8 + n;
    }
    (bytes[..128].to_vec(), arrays)
}

#[test]
fn hostile_mat_files_are_named_errors() {
    let dir = scratch_dir("hostile-mat");
    let (header, arrays) = v5_fixture();
    assert_eq!(arrays.len(), 2);
    // The arrays uncompressed (each padded to 8 bytes) read as the fixture does.
    let plain = dir.join("plain.mat");
    let mut bytes = header.clone();
    for a in &arrays {
        bytes.extend(a);
        bytes.resize(bytes.len().next_multiple_of(8), 0);
    }
    std::fs::write(&plain, &bytes).unwrap();
    let (tensors, _) = read_tensors(&plain).unwrap();
    assert_eq!(tensors["coeff"].array.shape, vec![3, 5, 4]);
    assert!(tensors["coeff"]
        .array
        .data
        .iter()
        .enumerate()
        .all(|(i, &v)| v == 0.5 * i as f32));
    assert!(tensors["sol"]
        .array
        .data
        .iter()
        .enumerate()
        .all(|(i, &v)| v == i as f32 - 7.0));

    // coeff's dims [3, 5, 4] made [-3, -5, 4]: the same product, which matfile
    // checked, so that the reordering once indexed out of range.
    let mut coeff = arrays[0].clone();
    assert_eq!(coeff[32..44], [3i32, 5, 4].map(i32::to_le_bytes).concat());
    coeff[32..40].copy_from_slice(&[-3i32, -5].map(i32::to_le_bytes).concat());
    let negative = dir.join("negative_dim.mat");
    std::fs::write(
        &negative,
        [
            &header[..],
            &element(15, &zlib(&coeff)),
            &element(15, &zlib(&arrays[1])),
        ]
        .concat(),
    )
    .unwrap();
    error_of(
        &negative,
        &["element at byte 128", "coeff: invalid dimensions [-3, -5, 4]"],
    );

    // A corrupt zlib stream: the first deflate block's type made the reserved
    // 0b11. matfile printed a debug line on it; it is now never given
    // compressed data (mat_file::numeric_arrays inflates it), so no call
    // path of reading a .mat file reaches code that prints.
    let mut corrupt = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fno_v5.mat")).unwrap();
    assert_eq!(corrupt[136..139], [0x78, 0x9c, 0x5d]);
    corrupt[138] |= 0b110;
    let corrupt_path = dir.join("corrupt_zlib.mat");
    std::fs::write(&corrupt_path, &corrupt).unwrap();
    error_of(
        &corrupt_path,
        &["element at byte 128: compressed data: corrupt deflate stream"],
    );

    // A compressed element that inflates to 256 MiB from a 260 kB file.
    let bomb = dir.join("bomb.mat");
    std::fs::write(&bomb, [&header[..], &element(15, &zeros_zlib(256 << 20))].concat()).unwrap();
    error_of(
        &bomb,
        &[&format!("compressed data: expands to over {} bytes", budget(&bomb))],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Pickle opcodes (protocol 2), written by hand.
mod pickle {
    pub fn int(v: u64) -> Vec<u8> {
        [&[0x8a, 8][..], &v.to_le_bytes()].concat()
    }

    pub fn text(s: &str) -> Vec<u8> {
        [&[b'X'][..], &(s.len() as u32).to_le_bytes(), s.as_bytes()].concat()
    }

    pub fn global(module: &str, class: &str) -> Vec<u8> {
        format!("c{module}\n{class}\n").into_bytes()
    }

    /// MARK, the items, TUPLE.
    pub fn tuple(items: &[Vec<u8>]) -> Vec<u8> {
        [&[b'('][..], &items.concat(), b"t"].concat()
    }

    /// `{"x": tensor}` where tensor is a FloatStorage view, as torch.save writes it.
    pub fn float_tensor(storage_len: u64, shape: &[u64], strides: &[u64]) -> Vec<u8> {
        let storage = tuple(&[
            text("storage"),
            global("torch", "FloatStorage"),
            text("0"),
            text("cpu"),
            int(storage_len),
        ]);
        let args = tuple(&[
            [storage, b"Q".to_vec()].concat(),
            int(0),
            tuple(&shape.iter().map(|&n| int(n)).collect::<Vec<_>>()),
            tuple(&strides.iter().map(|&n| int(n)).collect::<Vec<_>>()),
            vec![0x89],
            [global("collections", "OrderedDict"), b")R".to_vec()].concat(),
        ]);
        let tensor = [global("torch._utils", "_rebuild_tensor_v2"), args, b"R".to_vec()].concat();
        [&b"\x80\x02}("[..], &text("x"), &tensor, b"u."].concat()
    }
}

/// A torch.save zip: `pickle` and a storage `0` of `floats`.
fn pt_file(path: PathBuf, pickle: &[u8], floats: &[f32]) -> PathBuf {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("archive/data.pkl", stored).unwrap();
    zip.write_all(pickle).unwrap();
    zip.start_file("archive/data/0", stored).unwrap();
    zip.write_all(&floats.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>())
        .unwrap();
    zip.finish().unwrap();
    path
}

#[test]
fn hostile_pt_files_are_named_errors() {
    let dir = scratch_dir("hostile-pt");
    let floats = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    // The pickle writer is right: a Fortran-ordered [2, 3] view reads in C order.
    let good = pt_file(dir.join("good.pt"), &pickle::float_tensor(6, &[2, 3], &[1, 2]), &floats);
    let x = &fno_datasets::torch::read_tensors(&good).unwrap()["x"];
    assert_eq!(
        (x.array.shape.clone(), x.array.data.clone()),
        (vec![2, 3], vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0])
    );

    // Lists (APPEND) and tuples (TUPLE1) nested 100000 deep, which candle
    // builds in a loop but drops (and clones, formats) recursively: a stack
    // overflow. The scan stops at depth 65.
    let deep_lists = [&b"\x80\x02"[..], &[b']'; 100_000], &[b'a'; 99_999], b"."].concat();
    let deep_tuples = [&b"\x80\x02)"[..], &[0x85; 100_000], b"."].concat();
    for (name, p) in [("deep_lists.pt", deep_lists), ("deep_tuples.pt", deep_tuples)] {
        error_of(
            &pt_file(dir.join(name), &p, &floats),
            &["archive/data.pkl: objects nested over 64 deep at byte"],
        );
    }
    // A memoised 1 MiB string copied 300 times: candle would clone each.
    let laughs = [
        &b"\x80\x02]"[..],
        &pickle::text(&"a".repeat(1 << 20)),
        b"q\x01a",
        &b"h\x01a".repeat(300),
        b".",
    ]
    .concat();
    error_of(
        &pt_file(dir.join("laughs.pt"), &laughs, &floats),
        &["objects over 268435456 bytes"],
    );
    let unknown = pt_file(dir.join("unknown.pt"), b"\x80\x02I1\n.", &floats);
    error_of(&unknown, &["unsupported opcode 0x49 at byte 2 of the pickle"]);

    // Views claiming 2^63 - 1 elements, and a shape whose product overflows.
    let huge = (1u64 << 63) - 1;
    for (name, storage_len, shape, strides, fault) in [
        (
            "huge_storage.pt",
            huge,
            vec![huge],
            vec![1],
            "too few for its 9223372036854775807 float32 elements",
        ),
        (
            "huge_view.pt",
            6,
            vec![huge],
            vec![1],
            "reaches beyond its 6-element storage",
        ),
        (
            "huge_broadcast.pt",
            6,
            vec![huge],
            vec![0],
            "expands to over 67108864 bytes",
        ),
        (
            "overflowing_shape.pt",
            6,
            vec![1 << 32, 1 << 32],
            vec![0, 0],
            "has too many elements",
        ),
    ] {
        let path = pt_file(
            dir.join(name),
            &pickle::float_tensor(storage_len, &shape, &strides),
            &floats,
        );
        error_of(&path, &["x: ", fault]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn npz_zip_bombs_are_named_errors() {
    // An entry inflating to 256 MiB from a 260 kB file: the read stops past
    // the file's budget, whatever size the zip declares.
    let dir = scratch_dir("hostile-npz");
    let path = dir.join("bomb.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("x.npy", deflated).unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..256 {
        zip.write_all(&chunk).unwrap();
    }
    zip.finish().unwrap();
    error_of(&path, &[&format!("x.npy: expands to over {} bytes", budget(&path))]);
    std::fs::remove_dir_all(&dir).unwrap();
}

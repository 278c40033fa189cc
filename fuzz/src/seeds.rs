//! Valid inputs of every format, built in code (or read from the repository's
//! fixtures where present): the starting points of the mutations.

use std::path::{Path, PathBuf};

use burn::backend::NdArray;
use fno_datasets::{Array, PdeDataset};
use fno_models::{Fno, FnoConfig};
use fno_training::TrainConfig;
use serde_json::{json, Value};

use crate::mutate::{npy_file, zip_archive, zip_entries};

/// The workspace root (for fixtures and configurations).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A scratch directory for this process, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("fno-fuzz-{}-{n}-{label}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("creating a scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 97) as f32 * scale - 1.0).collect()
}

/// `[n, cin, *grid]` and `[n, cout, *grid]` of deterministic values.
pub fn dataset(n: usize, cin: usize, cout: usize, grid: &[usize]) -> PdeDataset {
    let g: usize = grid.iter().product();
    let shape = |c| [&[n, c][..], grid].concat();
    let x = Array::new(shape(cin), ramp(n * cin * g, 0.02)).expect("consistent shape");
    let y = Array::new(shape(cout), ramp(n * cout * g, 0.03)).expect("consistent shape");
    PdeDataset::new(x, y).expect("paired")
}

/// The bytes `fno_datasets::save` writes for `data` with extension `ext`.
pub fn saved(ext: &str, data: &PdeDataset) -> Vec<u8> {
    let dir = Scratch::new(&format!("save-{ext}"));
    let path = dir.0.join(format!("data.{ext}"));
    fno_datasets::save(&path, data).unwrap_or_else(|e| panic!("saving a .{ext} seed: {e}"));
    std::fs::read(&path).expect("reading the saved seed")
}

/// A `.npy` file written by hand: `descr`, order, shape, and raw data.
pub fn npy(descr: &str, fortran: bool, shape: &[usize], body: &[u8], version: u8) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if fortran { "True" } else { "False" };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {tuple}, }}");
    let prefix = if version == 1 { 10 } else { 12 };
    while (prefix + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    npy_file(version, header.as_bytes(), body)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect()
}

pub fn npy_seeds() -> Vec<Vec<u8>> {
    let v = ramp(2 * 3 * 4, 0.1);
    let bools: Vec<u8> = (0..12).map(|i| (i % 3 == 0) as u8).collect();
    let ints: Vec<u8> = (0..6i64).flat_map(|i| (i - 2).to_le_bytes()).collect();
    let big: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
    let halves: Vec<u8> = (0..8u16).flat_map(|i| (0x3c00 + i * 64).to_le_bytes()).collect();
    vec![
        npy("<f4", false, &[2, 3, 4], &f32_bytes(&v), 1),
        npy("<f4", true, &[2, 3, 4], &f32_bytes(&v), 1),
        npy("<f8", false, &[4, 6], &f64_bytes(&v), 1),
        npy("<f8", true, &[2, 3, 4], &f64_bytes(&v), 2),
        npy(">f4", false, &[24], &big, 1),
        npy("|b1", true, &[3, 4], &bools, 1),
        npy("<i8", false, &[2, 3], &ints, 1),
        npy("<f2", false, &[2, 2, 2], &halves, 1),
        npy("<f4", false, &[0, 3], &[], 1),
        npy("<f4", false, &[], &f32_bytes(&v[..1]), 1),
    ]
}

pub fn npz_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![saved("npz", &dataset(3, 1, 1, &[6, 5]))];
    let (x, y) = (ramp(3 * 16, 0.1), ramp(3 * 16, 0.2));
    let entries = vec![
        ("x.npy".to_string(), npy("<f4", false, &[3, 4, 4], &f32_bytes(&x), 1)),
        ("y.npy".to_string(), npy("<f8", true, &[3, 4, 4], &f64_bytes(&y), 1)),
    ];
    seeds.push(zip_archive(&entries, false));
    seeds.push(zip_archive(&entries, true));
    seeds
}

pub fn safetensors_seeds() -> Vec<Vec<u8>> {
    use safetensors::tensor::{Dtype, TensorView};
    let mut seeds = vec![
        saved("safetensors", &dataset(4, 1, 1, &[8, 8])),
        saved("safetensors", &dataset(2, 2, 1, &[10])),
    ];
    // Others' files: no layout metadata, other dtypes.
    let x = f64_bytes(&ramp(3 * 5 * 4, 0.1));
    let y: Vec<u8> = (0..60u16).flat_map(|i| (0x3c00 + i).to_le_bytes()).collect();
    let tensors = [
        ("x", TensorView::new(Dtype::F64, vec![3, 5, 4], &x).expect("sized")),
        ("y", TensorView::new(Dtype::F16, vec![3, 5, 4], &y).expect("sized")),
    ];
    seeds.push(safetensors::serialize(tensors, None).expect("serialising"));
    seeds
}

/// One tensor of a hand-written torch pickle.
struct PtTensor<'a> {
    name: &'a str,
    class: &'a str,
    key: &'a str,
    storage_len: u32,
    offset: u8,
    shape: &'a [u8],
    strides: &'a [u8],
}

fn unicode(p: &mut Vec<u8>, s: &str) {
    p.push(b'X');
    p.extend_from_slice(&(s.len() as u32).to_le_bytes());
    p.extend_from_slice(s.as_bytes());
}

/// `torch.save`'s pickle of a dict of `_rebuild_tensor_v2` tensors (protocol 2).
fn torch_pickle(tensors: &[PtTensor]) -> Vec<u8> {
    let mut p = b"\x80\x02}(".to_vec();
    let small_tuple = |p: &mut Vec<u8>, v: &[u8]| {
        p.push(b'(');
        for &d in v {
            p.extend_from_slice(&[b'K', d]);
        }
        p.push(b't');
    };
    for t in tensors {
        unicode(&mut p, t.name);
        p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
        unicode(&mut p, "storage");
        p.extend_from_slice(format!("ctorch\n{}\n", t.class).as_bytes());
        unicode(&mut p, t.key);
        unicode(&mut p, "cpu");
        p.push(b'J');
        p.extend_from_slice(&t.storage_len.to_le_bytes());
        p.extend_from_slice(b"tQK");
        p.push(t.offset);
        small_tuple(&mut p, t.shape);
        small_tuple(&mut p, t.strides);
        p.extend_from_slice(b"\x89ccollections\nOrderedDict\n)RtR");
    }
    p.extend_from_slice(b"u.");
    p
}

/// A small `.pt` file written by hand: `x` float32 C-ordered, `y` float64 as a
/// Fortran-ordered view with an offset, `mask` bool.
pub fn handmade_pt() -> Vec<u8> {
    let pickle = torch_pickle(&[
        PtTensor {
            name: "x",
            class: "FloatStorage",
            key: "0",
            storage_len: 48,
            offset: 0,
            shape: &[3, 4, 4],
            strides: &[16, 4, 1],
        },
        PtTensor {
            name: "y",
            class: "DoubleStorage",
            key: "1",
            storage_len: 50,
            offset: 2,
            shape: &[3, 4, 4],
            strides: &[1, 3, 12],
        },
        PtTensor {
            name: "mask",
            class: "BoolStorage",
            key: "2",
            storage_len: 16,
            offset: 0,
            shape: &[4, 4],
            strides: &[4, 1],
        },
    ]);
    let entries = vec![
        ("archive/data.pkl".to_string(), pickle),
        ("archive/byteorder".to_string(), b"little".to_vec()),
        ("archive/data/0".to_string(), f32_bytes(&ramp(48, 0.1))),
        ("archive/data/1".to_string(), f64_bytes(&ramp(50, 0.1))),
        ("archive/data/2".to_string(), (0..16).map(|i| (i % 2) as u8).collect()),
        ("archive/version".to_string(), b"3\n".to_vec()),
    ];
    zip_archive(&entries, false)
}

pub fn pt_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![handmade_pt()];
    let shared = workspace().join("../shared/data/neuralop/darcy_test_16.pt");
    if let Ok(bytes) = std::fs::read(shared) {
        // The first 4 samples of neuraloperator's file would need re-pickling;
        // the whole file (65 kB) is small enough.
        seeds.push(bytes);
    }
    // The same archive with its storages deflated (torch stores them).
    if let Some(entries) = zip_entries(&seeds[0]) {
        seeds.push(zip_archive(&entries, true));
    }
    seeds
}

pub fn mat_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![include_bytes!("../../datasets/tests/fixtures/fno_v5.mat").to_vec()];
    seeds.extend(fixtures("mat"));
    if fno_datasets::HDF5 {
        // MATLAB v7.3: an HDF5 file behind a 512-byte user block.
        let mut v73 = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: fno-fuzz HDF5 schema 1.00 .".to_vec();
        v73.resize(512, b' ');
        let h5 = saved("h5", &dataset(2, 1, 1, &[4, 3]));
        if h5.get(..8) == Some(b"\x89HDF\r\n\x1a\n") {
            v73.extend_from_slice(&h5);
            seeds.push(v73);
        }
    }
    seeds
}

/// Files with this extension under datasets/tests/fixtures (as they appear).
fn fixtures(ext: &str) -> Vec<Vec<u8>> {
    let dir = workspace().join("datasets/tests/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .filter(|p| p.metadata().is_ok_and(|m| m.len() <= 1 << 20))
        .collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

pub fn h5_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![
        saved("h5", &dataset(3, 1, 1, &[6, 5])),
        saved("h5", &dataset(2, 2, 1, &[7])),
    ];
    seeds.extend(fixtures("h5"));
    seeds
}

/// The small models the checkpoint, configuration and inference targets use.
pub fn small_config(dims: usize) -> FnoConfig {
    let modes = [4, 3, 2];
    let mut cfg = FnoConfig::new(&modes[..dims], 1 + (dims == 1) as usize, 1, 6);
    cfg.n_layers = 2;
    cfg
}

/// The configurations of models/tests/fixtures (neuraloperator's exports).
fn fixture_models() -> Vec<(String, Vec<u8>)> {
    let dir = workspace().join("models/tests/fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| {
            let config = std::fs::read_to_string(d.join("config.json")).ok()?;
            let weights = std::fs::read(d.join("model.safetensors")).ok()?;
            Some((config, weights))
        })
        .filter(|(_, w)| w.len() <= 1 << 20)
        .collect()
}

pub fn config_seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = (1..=3).map(|d| small_config(d).to_json().into_bytes()).collect();
    let extra = [
        json!({"n_modes": [8, 8], "in_channels": 3, "out_channels": 2, "hidden_channels": 8, "n_layers": 3,
               "norm": "group_norm", "domain_padding": 0.25, "fno_skip": "soft-gating",
               "channel_mlp_skip": "identity", "preactivation": true}),
        json!({"n_modes": [5], "in_channels": 1, "out_channels": 1, "hidden_channels": 4,
               "factorization": "tucker", "rank": 0.5, "positional_embedding": null,
               "domain_padding": [0.5], "stabilizer": "tanh"}),
        json!({"n_modes": [4, 4, 4], "in_channels": 1, "out_channels": 1, "hidden_channels": 4,
               "factorization": "cp", "separable": true, "use_channel_mlp": false}),
    ];
    seeds.extend(extra.iter().map(|v| serde_json::to_vec_pretty(v).expect("json")));
    seeds.extend(fixture_models().into_iter().map(|(c, _)| c.into_bytes()));
    seeds
}

pub fn toml_seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![TrainConfig::darcy_default().to_toml().into_bytes()];
    let mut paths: Vec<PathBuf> = std::fs::read_dir(workspace().join("configs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    seeds.extend(paths.iter().filter_map(|p| std::fs::read(p).ok()));
    seeds
}

/// A safetensors file with its header's `__metadata__` entry `key` set to
/// `value` (or removed).
pub fn with_metadata(bytes: &[u8], key: &str, value: Option<&str>) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + n]).expect("a safetensors header");
    let meta = header
        .as_object_mut()
        .expect("an object")
        .entry("__metadata__")
        .or_insert_with(|| json!({}));
    match value {
        Some(v) => meta[key] = json!(v),
        None => {
            meta.as_object_mut().map(|m| m.remove(key));
        }
    }
    let mut text = serde_json::to_vec(&header).expect("json");
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + n..]);
    out
}

/// neuraloperator's `save_checkpoint` and Trainer files (models/tests/fixtures/torch)
/// and our small models written in that format.
pub fn torch_checkpoint_seeds() -> Vec<Vec<u8>> {
    let dir = workspace().join("models/tests/fixtures/torch");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|case| std::fs::read_dir(case.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pt" || e == "pkl"))
        .collect();
    paths.sort();
    let mut seeds: Vec<Vec<u8>> = paths.iter().filter_map(|p| std::fs::read(p).ok()).collect();
    let dev = Default::default();
    for d in 1..=3 {
        let model = Fno::<NdArray>::new(&small_config(d), &dev).expect("a valid configuration");
        let (state_dict, metadata) =
            fno_models::neuralop_files::write_checkpoint(&model.state_dict(), model.config(), "model")
                .expect("a model writes");
        seeds.extend([state_dict, metadata]);
    }
    seeds
}

pub fn checkpoint_seeds() -> Vec<Vec<u8>> {
    let dev = Default::default();
    let mut seeds: Vec<Vec<u8>> = (1..=3)
        .map(|d| {
            Fno::<NdArray>::new(&small_config(d), &dev)
                .expect("a valid configuration")
                .save_safetensors()
        })
        .collect();
    // neuraloperator's exports (factorized, separable, normalised …) with
    // their configuration in the metadata, as our own checkpoints carry it.
    for (config, weights) in fixture_models() {
        seeds.push(with_metadata(&weights, "config", Some(&config)));
    }
    // Our 2-D checkpoint whose configuration no longer matches its tensors.
    let base = seeds[1].clone();
    let cfg: Value = serde_json::from_str(&small_config(2).to_json()).expect("json");
    let edits: [(&str, Value); 14] = [
        ("n_layers", json!(3)),
        ("n_layers", json!(0)),
        ("hidden_channels", json!(12)),
        ("n_modes", json!([4, 3, 2])),
        ("n_modes", json!([])),
        ("n_modes", json!([0, 0])),
        ("n_modes", json!([65536, 65536])),
        ("in_channels", json!(0)),
        ("out_channels", json!(1_000_000_000u64)),
        ("factorization", json!("tucker")),
        ("separable", json!(true)),
        ("norm", json!("group_norm")),
        ("positional_embedding", json!(null)),
        ("domain_padding", json!(1e300)),
    ];
    for (key, value) in edits {
        let mut c = cfg.clone();
        c[key] = value;
        seeds.push(with_metadata(&base, "config", Some(&c.to_string())));
    }
    seeds.push(with_metadata(&base, "config", None));
    seeds.push(with_metadata(&base, "config", Some("{\"n_modes\": [4, 3]")));
    seeds
}

/// The inference target's inputs: a header (model dims, then shape rank, the
/// shape as u32s, the batch size as u32) and f32 values.
pub fn infer_input(dims: u8, shape: &[u32], batch: u32, values: usize) -> Vec<u8> {
    let mut out = vec![dims, shape.len() as u8];
    for d in shape {
        out.extend_from_slice(&d.to_le_bytes());
    }
    out.extend_from_slice(&batch.to_le_bytes());
    out.extend_from_slice(&f32_bytes(&ramp(values, 0.05)));
    out
}

pub fn infer_seeds() -> Vec<Vec<u8>> {
    vec![
        infer_input(2, &[2, 1, 8, 8], 1, 128),
        infer_input(2, &[3, 1, 5, 7], 2, 105),
        infer_input(1, &[2, 2, 16], 4, 64),
        infer_input(3, &[1, 1, 4, 4, 4], 1, 64),
    ]
}

//! neuraloperator's FNO checkpoint ../shared/fixtures/neuralop/fno2d_small
//! reproduces PyTorch's output on every path: the reference spectral path on
//! ndarray and Candle (CPU) and the kernel path on wgpu (lavapipe in CI), from
//! both safetensors variants (native C64 and F32 [..., 2] complex weights);
//! our own checkpoints round-trip; bad checkpoints fail naming their keys.

// Burn's Candle backend is one of the required CPU paths; burn 0.21 marks it deprecated.
#![allow(deprecated)]

use burn::backend::{Candle, NdArray};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_models::checkpoint::SafeTensorsFile;
use fno_models::{BlockPrecision, Fno, FnoConfig, ModelError};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_testing::relative_l2_f32 as rel_l2;

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/neuralop/fno2d_small")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    let path = fixture(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn config() -> FnoConfig {
    FnoConfig::from_json(&String::from_utf8(read("config.json")).unwrap()).unwrap()
}

fn npy(name: &str) -> (Vec<usize>, Vec<f32>) {
    let a = fno_datasets::npy::read(fixture(name)).unwrap();
    (a.shape, a.data)
}

fn run<B: SpectralConvBackend>(model: &Fno<B>, shape: &[usize], x: &[f32]) -> Vec<f32> {
    let device = Default::default();
    let x = Tensor::<B, 4>::from_data(TensorData::new(x.to_vec(), shape.to_vec()), &device);
    let y = model.forward(x).unwrap();
    y.into_data().convert::<f32>().to_vec::<f32>().unwrap()
}

fn check_fixture<B: SpectralConvBackend>(backend: &str, imp: SpectralImpl) {
    let (xs, x) = npy("x.npy");
    let (_, want) = npy("y.npy");
    let device = B::Device::default();
    for file in ["model.safetensors", "model_real.safetensors"] {
        let model = Fno::<B>::load_checkpoint(&read(file), Some(&config()), &device)
            .unwrap()
            .with_spectral_impl(imp);
        let e = rel_l2(&run(&model, &xs, &x), &want);
        println!("{backend} {imp:?} {file}: relative L2 error {e:.2e}");
        assert!(e <= 1e-5, "{backend} {imp:?} {file}: {e:e}");
    }
}

#[test]
fn fixture_reproduces_pytorch_on_ndarray_reference() {
    check_fixture::<NdArray>("ndarray", SpectralImpl::Reference);
}

#[test]
fn fixture_reproduces_pytorch_on_candle_reference() {
    check_fixture::<Candle>("candle", SpectralImpl::Reference);
}

#[test]
fn fixture_reproduces_pytorch_on_the_kernel_paths() {
    check_fixture::<Wgpu>("wgpu", SpectralImpl::Unfused);
    check_fixture::<Wgpu>("wgpu", SpectralImpl::Fused);
}

/// neuraloperator's `fno_block_precision` "mixed" and "half": half-precision
/// spectra ("half": every activation an f16 tensor on the kernel path, the
/// blocks' inputs and outputs rounded to f16 on the reference path) keep the
/// fixture's output within f16's reach of PyTorch's f32 one, off it by more
/// than f32 round-off; the kernel path agrees with the reference path; a
/// configuration naming the precision gives the model it.
#[test]
fn fixture_runs_in_half_precision_blocks() {
    let (xs, x) = npy("x.npy");
    let (_, want) = npy("y.npy");
    let bytes = read("model.safetensors");
    for precision in [BlockPrecision::Mixed, BlockPrecision::Half] {
        let mut cfg = config();
        cfg.fno_block_precision = precision;
        let reference = Fno::<NdArray>::load_checkpoint(&bytes, Some(&cfg), &Default::default()).unwrap();
        assert_eq!(reference.block_precision(), precision);
        let kernels = Fno::<Wgpu>::load_checkpoint(&bytes, Some(&config()), &Default::default())
            .unwrap()
            .with_spectral_impl(SpectralImpl::Unfused)
            .with_block_precision(precision);
        let (r, k) = (run(&reference, &xs, &x), run(&kernels, &xs, &x));
        let full = run(&kernels.clone().with_block_precision(BlockPrecision::F32), &xs, &x);
        let (er, ek, ekr) = (rel_l2(&r, &want), rel_l2(&k, &want), rel_l2(&k, &r));
        let rounding = rel_l2(&k, &full);
        println!(
            "{precision}: reference {er:.2e}, kernels {ek:.2e} off PyTorch's f32; kernels {ekr:.2e} off the \
             reference, {rounding:.2e} off their f32 output"
        );
        for e in [er, ek, ekr] {
            assert!(e < 1e-3, "{precision}: {e:e}");
        }
        // Our f32 paths agree to about 1e-7 (fixture_reproduces_pytorch_*);
        // f16 activations round every layer's output.
        let least = if precision == BlockPrecision::Half { 1e-4 } else { 1e-6 };
        assert!(
            rounding > least,
            "{precision}: {rounding:e}: not what {precision} rounds"
        );
    }
}

/// Discretisation invariance: other grids than the 16² of training, odd and
/// non-square included, agree between the kernel and reference paths.
#[test]
fn other_resolutions_agree_across_paths() {
    let bytes = read("model.safetensors");
    let cfg = config();
    let reference = Fno::<NdArray>::load_checkpoint(&bytes, Some(&cfg), &Default::default()).unwrap();
    let kernels = Fno::<Wgpu>::load_checkpoint(&bytes, Some(&cfg), &Default::default()).unwrap();
    for grid in [[32usize, 32], [21, 30], [9, 12]] {
        let shape = [2, 1, grid[0], grid[1]];
        let x = fno_testing::uniform_f32(shape.iter().product(), 5 + grid[0] as u64);
        let r = run(&reference, &shape, &x);
        assert!(r.iter().all(|v| v.is_finite()));
        for imp in [SpectralImpl::Unfused, SpectralImpl::Fused] {
            let k = run(&kernels.clone().with_spectral_impl(imp), &shape, &x);
            let e = rel_l2(&k, &r);
            assert!(e <= 1e-5, "{grid:?}: {imp:?} vs reference {e:e}");
        }
    }
}

#[test]
fn own_checkpoints_round_trip_with_their_configuration() {
    let device = Default::default();
    let model = Fno::<NdArray>::load_checkpoint(&read("model.safetensors"), Some(&config()), &device).unwrap();
    let saved = model.save_safetensors();
    // No configuration passed: it comes from the file's metadata.
    let again = Fno::<NdArray>::load_checkpoint(&saved, None, &device).unwrap();
    assert_eq!(again.config(), model.config());
    let (xs, x) = npy("x.npy");
    assert_eq!(run(&again, &xs, &x), run(&model, &xs, &x));
    // Our files keep neuraloperator's names and shapes: the same tensors as the export.
    let ours = SafeTensorsFile::parse(&saved).unwrap();
    let theirs = SafeTensorsFile::parse(&read("model_real.safetensors")).unwrap();
    assert_eq!(ours.tensors, theirs.tensors);
}

/// A fresh model of every supported kind saves and loads back, runs, and its
/// configuration survives: 1D/3D, odd modes, every skip, both norms, padding.
#[test]
fn every_configuration_kind_round_trips_and_runs() {
    let device = Default::default();
    let configs = [
        r#"{"n_modes": [7], "in_channels": 2, "out_channels": 3, "hidden_channels": 6, "n_layers": 2,
            "fno_skip": "identity", "channel_mlp_skip": "linear", "norm": "group_norm", "domain_padding": 0.25}"#,
        r#"{"n_modes": [5, 4, 3], "in_channels": 1, "out_channels": 1, "hidden_channels": 4, "n_layers": 2,
            "fno_skip": "soft-gating", "channel_mlp_skip": null, "norm": "instance_norm", "positional_embedding": null,
            "lifting_channel_ratio": 0, "stabilizer": "tanh"}"#,
        r#"{"n_modes": [6, 5], "in_channels": 3, "out_channels": 2, "hidden_channels": 5, "n_layers": 3,
            "fno_skip": null, "use_channel_mlp": false, "channel_mlp_expansion": 0.3, "domain_padding": [0.1, 0.2]}"#,
    ];
    for json in configs {
        let cfg = FnoConfig::from_json(json).unwrap();
        let model = Fno::<NdArray>::new(&cfg, &device).unwrap();
        let again = Fno::<NdArray>::load_checkpoint(&model.save_safetensors(), None, &device).unwrap();
        assert_eq!(again.config(), &cfg);
        let mut shape = vec![2, cfg.in_channels];
        shape.extend([11, 9, 7].iter().take(cfg.dims()));
        let x = fno_testing::uniform_f32(shape.iter().product(), 3);
        let device = Default::default();
        let y = |m: &Fno<NdArray>| -> Vec<f32> {
            let out = match cfg.dims() {
                1 => m
                    .forward(Tensor::<NdArray, 3>::from_data(
                        TensorData::new(x.clone(), shape.clone()),
                        &device,
                    ))
                    .map(|t| t.into_data()),
                2 => m
                    .forward(Tensor::<NdArray, 4>::from_data(
                        TensorData::new(x.clone(), shape.clone()),
                        &device,
                    ))
                    .map(|t| t.into_data()),
                _ => m
                    .forward(Tensor::<NdArray, 5>::from_data(
                        TensorData::new(x.clone(), shape.clone()),
                        &device,
                    ))
                    .map(|t| t.into_data()),
            };
            out.unwrap().to_vec::<f32>().unwrap()
        };
        let (a, b) = (y(&model), y(&again));
        assert_eq!(a, b, "{json}");
        assert_eq!(a.len(), 2 * cfg.out_channels * shape[2..].iter().product::<usize>());
        assert!(a.iter().all(|v| v.is_finite()), "{json}");
    }
}

fn load_error(file: &SafeTensorsFile) -> String {
    match Fno::<NdArray>::load_checkpoint(&file.to_bytes(), Some(&config()), &Default::default()) {
        Err(ModelError::Checkpoint(m)) => m,
        other => panic!("expected a checkpoint error, got {other:?}"),
    }
}

#[test]
fn mismatched_checkpoints_name_every_bad_key() {
    let good = SafeTensorsFile::parse(&read("model_real.safetensors")).unwrap();
    let mut bad = good.clone();
    bad.tensors.remove("fno_blocks.convs.2.bias");
    bad.tensors.insert(
        "fno_blocks.extra.weight".into(),
        bad.tensors["lifting.fcs.1.bias"].clone(),
    );
    let lifting = bad.tensors.get_mut("lifting.fcs.0.weight").unwrap();
    lifting.shape = vec![32, 1, 3];
    let m = load_error(&bad);
    for key in [
        "fno_blocks.convs.2.bias",
        "fno_blocks.extra.weight",
        "lifting.fcs.0.weight",
    ] {
        assert!(m.contains(key), "{m}");
    }
    // A configuration that does not fit the weights is named the same way.
    let wrong = FnoConfig {
        n_modes: vec![8, 6],
        ..config()
    };
    let err = Fno::<NdArray>::load_checkpoint(&read("model.safetensors"), Some(&wrong), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("fno_blocks.convs.0.weight.tensor"), "{err}");
    // Truncated and non-safetensors files are errors, not panics.
    let bytes = read("model.safetensors");
    for cut in [0, 7, 100, bytes.len() - 1] {
        assert!(Fno::<NdArray>::load_checkpoint(&bytes[..cut], Some(&config()), &Default::default()).is_err());
    }
    // The fixture's own file carries its configuration in the metadata, with a note.
    assert!(good.metadata.contains_key("config"));
}

#[test]
fn wrong_inputs_are_errors() {
    let model =
        Fno::<NdArray>::load_checkpoint(&read("model.safetensors"), Some(&config()), &Default::default()).unwrap();
    let device = Default::default();
    let two_channels = Tensor::<NdArray, 4>::zeros([1, 2, 16, 16], &device);
    assert!(matches!(model.forward(two_channels), Err(ModelError::Input(_))));
    let one_d = Tensor::<NdArray, 3>::zeros([1, 1, 16], &device);
    assert!(matches!(model.forward(one_d), Err(ModelError::Input(_))));
    // Empty grids and batches are named, not passed to the kernels.
    for shape in [[4, 1, 16, 0], [4, 1, 0, 0], [0, 1, 16, 16]] {
        let empty = Tensor::<NdArray, 4>::zeros(shape, &device);
        let err = model.forward(empty).unwrap_err().to_string();
        assert!(err.contains("non-empty"), "{shape:?}: {err}");
        let err = fno_models::infer(&model, &[], &shape, 2, &device, |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("non-empty"), "{shape:?}: {err}");
    }
    // More samples than a launch grid's axis holds.
    let many = Tensor::<NdArray, 4>::zeros([65_536, 1, 1, 1], &device);
    let err = model.forward(many).unwrap_err().to_string();
    assert!(err.contains("the batch exceeds 65535"), "{err}");
    // One activation past 2^32 - 1 values: 65,536 lifting channels over a
    // 256 × (256 + 2) grid (the last dim with its spectrum's two more).
    let wide = FnoConfig {
        lifting_channel_ratio: 1024.0,
        ..FnoConfig::new(&[4, 4], 1, 1, 64)
    };
    let wide = Fno::<NdArray>::new(&wide, &device).unwrap();
    let err = wide
        .forward(Tensor::<NdArray, 4>::zeros([1, 1, 256, 256], &device))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("over 65536 channels") && err.contains("exceeds 4294967295"),
        "{err}"
    );
    // A shape whose product wraps to 0 does not pass for an empty input.
    let err = fno_models::infer(&model, &[], &[1 << 16; 4], 1, &device, |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("0 values for shape"), "{err}");
}

/// A configuration in a checkpoint's metadata is checked, and the file's
/// tensors against it, before the model is allocated: sizes that would
/// allocate terabytes are errors.
#[test]
fn oversized_configurations_in_checkpoints_are_refused_before_allocation() {
    let model =
        Fno::<NdArray>::load_checkpoint(&read("model.safetensors"), Some(&config()), &Default::default()).unwrap();
    let mut file = SafeTensorsFile::parse(&model.save_safetensors()).unwrap();
    let json = file.metadata["config"].clone();
    for (from, to, named) in [
        ("\"hidden_channels\":16", "\"hidden_channels\":30000", "parameters"),
        ("\"n_layers\":4", "\"n_layers\":1000", "does not match"),
        ("\"in_channels\":1", "\"in_channels\":4294967296", "in_channels"),
    ] {
        assert!(json.contains(from), "{json}");
        file.metadata.insert("config".into(), json.replace(from, to));
        let err = Fno::<NdArray>::load_checkpoint(&file.to_bytes(), None, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(named), "{to}: {err}");
    }
}

#[test]
fn our_checkpoints_read_back_through_the_safetensors_crate() {
    let model =
        Fno::<NdArray>::load_checkpoint(&read("model.safetensors"), Some(&config()), &Default::default()).unwrap();
    let saved = model.save_safetensors();
    let (_, header) = safetensors::SafeTensors::read_metadata(&saved).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["format"], "fno-models");
    let saved_config = FnoConfig::from_json(&metadata["config"]).unwrap();
    assert_eq!(saved_config.n_modes, config().n_modes);
    let st = safetensors::SafeTensors::deserialize(&saved).unwrap();
    let ours = SafeTensorsFile::parse(&saved).unwrap();
    assert_eq!(st.len(), ours.tensors.len());
    for (name, t) in &ours.tensors {
        let view = st.tensor(name).unwrap();
        // Spectral weights are native C64 (PyTorch's complex64), the rest F32.
        let (dtype, shape) = if name.contains("convs") && name.ends_with(".weight.tensor") {
            (safetensors::Dtype::C64, &t.shape[..t.shape.len() - 1])
        } else {
            (safetensors::Dtype::F32, &t.shape[..])
        };
        assert_eq!((view.dtype(), view.shape()), (dtype, shape), "{name}");
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(values, t.data, "{name}");
    }
    // The native C64 export reads as the F32 [..., 2] one: the same pairs.
    let c64 = SafeTensorsFile::parse(&read("model.safetensors")).unwrap();
    let real = SafeTensorsFile::parse(&read("model_real.safetensors")).unwrap();
    assert_eq!(c64.tensors, real.tensors);
    // A tensor whose values do not fill its shape is named, not written.
    let mut bad = ours.clone();
    bad.tensors.get_mut("projection.fcs.1.bias").unwrap().data.push(0.0);
    let e = bad.try_to_bytes().unwrap_err().to_string();
    assert!(e.contains("projection.fcs.1.bias"), "{e}");
}

#[test]
fn truncated_checkpoints_are_clean_errors() {
    let bytes = read("model.safetensors");
    for cut in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        match SafeTensorsFile::parse(&bytes[..cut]) {
            Err(ModelError::Checkpoint(m)) => assert!(
                m.contains("truncated") || m.contains("not a safetensors file"),
                "{cut}: {m}"
            ),
            other => panic!("{cut}: expected a checkpoint error, got {other:?}"),
        }
    }
    // An unknown dtype in the header is named.
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    let mut damaged = bytes.clone();
    damaged[8..8 + header_len].copy_from_slice(header.replacen("\"F32\"", "\"Q32\"", 1).as_bytes());
    let e = SafeTensorsFile::parse(&damaged).unwrap_err().to_string();
    assert!(e.contains("Q32"), "{e}");
}

/// A fresh model's spectral weights are drawn as neuraloperator draws them:
/// complex normal with std `sqrt(2 / (2·hidden))`, so each part has that over √2.
#[test]
fn fresh_spectral_weights_have_neuraloperators_spread() {
    let cfg = FnoConfig::from_json(
        r#"{"n_modes": [8, 8], "in_channels": 1, "out_channels": 1, "hidden_channels": 32, "n_layers": 1}"#,
    )
    .unwrap();
    let model = Fno::<NdArray>::new(&cfg, &Default::default()).unwrap();
    let w: Vec<f32> = model.blocks[0].spectral_weights[0].val().into_data().to_vec().unwrap();
    let mean = w.iter().map(|&v| v as f64).sum::<f64>() / w.len() as f64;
    let std = (w.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
    let want = (2.0f64 / 64.0).sqrt() / std::f64::consts::SQRT_2;
    assert!(
        (std / want - 1.0).abs() < 0.03,
        "part std {std}, want {want} ({} values)",
        w.len()
    );
}

//! neuraloperator 2.0 FNOs of every kind this crate implements, exported with
//! PyTorch outputs by tests/fixtures/gen_fno_fixtures.py (committed beside it):
//! 1D/2D/3D, odd modes, non-power-of-two and non-square grids, each skip type,
//! instance and group norm, domain padding, pre-activation, a one-layer
//! lifting, no grid embedding, no channel MLP, the tanh stabiliser, native C64
//! weights, Tucker/CP/TT-factorized and separable spectral weights. The
//! `ours_*` cases go the other way: TFNO checkpoints written by `fno train`,
//! loaded into neuraloperator by tests/fixtures/load_ours_in_neuralop.py
//! (its state dict taking every tensor as it is), which wrote their outputs.
//! Each reproduces PyTorch on the reference path (ndarray, f64 and f32) and on
//! the kernel path (wgpu; lavapipe in CI).

use burn::backend::NdArray;
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_models::{infer, Fno};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_testing::relative_l2_f32;

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;

const CASES: [&str; 12] = [
    "fno1d_odd_modes_identity_linear_groupnorm_padded",
    "fno2d_softgating_instancenorm_nogrid_c64",
    "fno3d_no_channel_mlp_tanh",
    "fno2d_preactivation_padded_single_lifting",
    "fno2d_tucker",
    "fno1d_cp",
    "fno3d_tt_reconstructed",
    "fno2d_separable",
    "ours_tfno_tucker",
    "ours_tfno_cp",
    "ours_tfno_tt",
    "ours_separable_cp",
];

fn dir(case: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
}

pub(crate) fn error_vs_pytorch<B: SpectralConvBackend>(case: &str, imp: SpectralImpl) -> f64 {
    let d = dir(case);
    let bytes = std::fs::read(d.join("model.safetensors")).unwrap();
    let x = fno_datasets::npy::read(d.join("x.npy")).unwrap();
    let y = fno_datasets::npy::read(d.join("y.npy")).unwrap();
    let device = B::Device::default();
    // The configuration comes from the file's metadata; config.json is the same text.
    let model = Fno::<B>::load_checkpoint(&bytes, None, &device)
        .unwrap_or_else(|e| panic!("{case}: {e}"))
        .with_spectral_impl(imp);
    let got = infer(&model, &x.data, &x.shape, 2, &device, |_, _| {}).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert_eq!(got.len(), y.data.len(), "{case}");
    relative_l2_f32(&got, &y.data)
}

#[test]
fn every_configuration_reproduces_pytorch_on_every_path() {
    for case in CASES {
        let paths = [
            (
                "ndarray f64 reference",
                error_vs_pytorch::<NdArray<f64>>(case, SpectralImpl::Reference),
            ),
            (
                "ndarray f32 reference",
                error_vs_pytorch::<NdArray>(case, SpectralImpl::Reference),
            ),
            ("wgpu unfused", error_vs_pytorch::<Wgpu>(case, SpectralImpl::Unfused)),
            ("wgpu fused", error_vs_pytorch::<Wgpu>(case, SpectralImpl::Fused)),
        ];
        for (path, e) in paths {
            println!("{case}, {path}: relative L2 error {e:.2e}");
            assert!(e <= 1e-5, "{case}, {path}: {e:e}");
        }
    }
}

/// A factorized checkpoint saves as the same factors under the same names
/// (native C64, the configuration kept), which reload to the same outputs; a
/// factor that disagrees with the configuration's ranks is named.
#[test]
fn factorized_weights_save_as_factors_and_bad_factors_are_named() {
    use fno_models::checkpoint::SafeTensorsFile;
    let device = Default::default();
    for case in ["fno2d_tucker", "fno1d_cp", "fno3d_tt_reconstructed", "fno2d_separable"] {
        let d = dir(case);
        let bytes = std::fs::read(d.join("model.safetensors")).unwrap();
        let x = fno_datasets::npy::read(d.join("x.npy")).unwrap();
        let model = Fno::<NdArray<f64>>::load_checkpoint(&bytes, None, &device).unwrap();
        let saved = model.save_safetensors();
        let (original, file) = (
            SafeTensorsFile::parse(&bytes).unwrap(),
            SafeTensorsFile::parse(&saved).unwrap(),
        );
        let spectral: Vec<&String> = original
            .tensors
            .keys()
            .filter(|k| k.contains("convs.0.weight"))
            .collect();
        assert!(!spectral.is_empty(), "{case}");
        for name in spectral {
            assert_eq!(file.tensors[name], original.tensors[name], "{case}: {name}");
            assert!(file.complex.contains(name), "{case}: {name} is not C64");
        }
        assert_eq!(file.metadata["config"], model.config().to_json(), "{case}");
        let reloaded = Fno::<NdArray<f64>>::load_checkpoint(&saved, None, &device).unwrap();
        let run = |m: &Fno<NdArray<f64>>| infer(m, &x.data, &x.shape, 2, &device, |_, _| {}).unwrap();
        assert_eq!(run(&model), run(&reloaded), "{case}");
    }

    let bytes = std::fs::read(dir("fno2d_tucker").join("model.safetensors")).unwrap();
    let mut file = SafeTensorsFile::parse(&bytes).unwrap();
    let factor = file
        .tensors
        .get_mut("fno_blocks.convs.1.weight.factors.factor_2")
        .unwrap();
    // One rank fewer than the core has along that dim.
    factor.shape[1] -= 1;
    factor.data.truncate(factor.shape.iter().product());
    let err = Fno::<NdArray<f64>>::load_checkpoint(&file.to_bytes(), None, &device).unwrap_err();
    assert!(
        err.to_string().contains("fno_blocks.convs.1.weight.factors.factor_2"),
        "{err}"
    );
}

/// Half-precision blocks with factorized weights: neuraloperator's "mixed"
/// and "half" on the kernel path's chain (spectra in f16, the factors'
/// contractions in f32) stay within f16's reach of PyTorch's f32 output and
/// of the reference path at the same precision.
#[test]
fn factorized_weights_run_in_half_precision_blocks() {
    use fno_models::BlockPrecision;
    let d = dir("ours_tfno_tucker");
    let bytes = std::fs::read(d.join("model.safetensors")).unwrap();
    let x = fno_datasets::npy::read(d.join("x.npy")).unwrap();
    let want = fno_datasets::npy::read(d.join("y.npy")).unwrap().data;
    for precision in [BlockPrecision::Mixed, BlockPrecision::Half] {
        let run = |y: Vec<f32>| (relative_l2_f32(&y, &want), y);
        let reference = Fno::<NdArray>::load_checkpoint(&bytes, None, &Default::default())
            .unwrap()
            .with_block_precision(precision);
        let kernels = Fno::<Wgpu>::load_checkpoint(&bytes, None, &Default::default())
            .unwrap()
            .with_spectral_impl(SpectralImpl::Unfused)
            .with_block_precision(precision);
        let (er, r) = run(infer(&reference, &x.data, &x.shape, 2, &Default::default(), |_, _| {}).unwrap());
        let (ek, k) = run(infer(&kernels, &x.data, &x.shape, 2, &Default::default(), |_, _| {}).unwrap());
        let between = relative_l2_f32(&k, &r);
        println!(
            "{precision}: reference {er:.2e}, kernels {ek:.2e} off PyTorch; kernels {between:.2e} off the reference"
        );
        for e in [er, ek, between] {
            assert!(e < 1e-3, "{precision}: {e:e}");
        }
    }
}

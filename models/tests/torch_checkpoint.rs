//! neuraloperator's own checkpoint files (fixtures/torch, made by
//! gen_torch_checkpoints.py with neuraloperator 2.0 and
//! gen_main_branch_checkpoint.py with its main branch): each state dict loads
//! with no configuration given (its `_metadata` entry holds the init kwargs)
//! and reproduces PyTorch's CPU output; the `NAME_metadata.pkl` beside it
//! gives the same configuration.

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use fno_models::neuralop_files::{read_metadata, write_checkpoint};
use fno_models::Fno;
use fno_ops::{InverseShift, SpectralImpl};
use fno_testing::relative_l2_f32 as rel_l2;

fn dir(case: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/torch")
        .join(case)
}

fn read(case: &str, name: &str) -> Vec<u8> {
    let path = dir(case).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The model's output on the case's x.npy, and y.npy.
fn outputs<const D: usize>(case: &str, model: &Fno<NdArray>) -> (Vec<f32>, Vec<f32>) {
    let x = fno_datasets::npy::read(dir(case).join("x.npy")).unwrap();
    let want = fno_datasets::npy::read(dir(case).join("y.npy")).unwrap();
    let x = Tensor::<NdArray, D>::from_data(TensorData::new(x.data, x.shape), &Default::default());
    let y = model.forward(x).unwrap().into_data().convert::<f32>();
    (y.to_vec::<f32>().unwrap(), want.data)
}

fn check<const D: usize>(case: &str, name: &str) {
    let state_dict = read(case, &format!("{name}_state_dict.pt"));
    let model = Fno::<NdArray>::load_checkpoint(&state_dict, None, &Default::default())
        .unwrap_or_else(|e| panic!("{case}: {e}"))
        .with_spectral_impl(SpectralImpl::Reference);
    let metadata = read_metadata(&read(case, &format!("{name}_metadata.pkl"))).unwrap();
    assert_eq!(&metadata, model.config(), "{case}: the metadata file's configuration");
    let (got, want) = outputs::<D>(case, &model);
    let e = rel_l2(&got, &want);
    println!("{case}: relative L2 error {e:.2e} against PyTorch");
    assert!(e <= 1e-5, "{case}: {e:e}");
}

#[test]
fn neuralop_state_dicts_reproduce_pytorch_without_a_configuration() {
    // save_checkpoint of a dense 2-D FNO (complex64 weights).
    check::<4>("dense2d", "darcy_fno");
    // A Trainer's best model, 1-D with domain padding.
    check::<3>("trainer1d", "best_model");
    // A Tucker TFNO on an odd grid (its core stored as float32 [..., 2]).
    check::<4>("tucker2d_odd", "tfno");
    // A 3-D CP TFNO stored in float64 and complex128.
    check::<5>("cp3d_double", "cp3d");
    // neuraloperator main's, on a grid odd in its first dim, with group norm.
    check::<4>("main2d_odd", "main_fno");
}

/// Loaded on an autodiff backend (fine-tuning), the parameters are tracked
/// leaves and the model computes what it does on the plain backend.
#[test]
fn state_dicts_load_on_autodiff_backends() {
    type Ad = burn::backend::Autodiff<NdArray>;
    let bytes = read("tucker2d_odd", "tfno_state_dict.pt");
    let model = Fno::<Ad>::load_checkpoint(&bytes, None, &Default::default())
        .unwrap()
        .with_spectral_impl(SpectralImpl::Reference);
    let x = fno_datasets::npy::read(dir("tucker2d_odd").join("x.npy")).unwrap();
    let want = fno_datasets::npy::read(dir("tucker2d_odd").join("y.npy")).unwrap();
    let x = Tensor::<Ad, 4>::from_data(TensorData::new(x.data, x.shape), &Default::default());
    let y = model.forward(x).unwrap();
    let grads = y.clone().sum().backward();
    let got = y.into_data().convert::<f32>().to_vec::<f32>().unwrap();
    assert!(rel_l2(&got, &want.data) <= 1e-5);
    let w = model.blocks[0].spectral_weights[0].val();
    assert!(w.grad(&grads).is_some(), "the spectral weights are tracked");
}

#[test]
fn files_that_are_not_fno_state_dicts_are_named_errors() {
    // A Trainer's optimizer state and a metadata file are torch.save files, but no state dicts.
    for (case, file) in [("trainer1d", "optimizer.pt"), ("dense2d", "darcy_fno_metadata.pkl")] {
        let e = Fno::<NdArray>::load_checkpoint(&read(case, file), None, &Default::default()).unwrap_err();
        assert!(e.to_string().contains("no tensors at its top level"), "{file}: {e}");
    }
    // A truncated state dict.
    let mut bytes = read("dense2d", "darcy_fno_state_dict.pt");
    bytes.truncate(bytes.len() / 2);
    let e = Fno::<NdArray>::load_checkpoint(&bytes, None, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("zip"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1, "{e}");
}

/// Written in neuraloperator's format (`write_checkpoint`), each model reads
/// back with the same configuration and the same outputs. With
/// `FNO_WRITE_NEURALOP=DIR` the files are kept there, for neuraloperator's
/// `FNO.from_checkpoint` (fixtures/load_torch_export_in_neuralop.py).
#[test]
fn written_neuralop_checkpoints_read_back_equal() {
    let keep = std::env::var("FNO_WRITE_NEURALOP").ok();
    for (case, name) in [
        ("dense2d", "darcy_fno"),
        ("tucker2d_odd", "tfno"),
        ("main2d_odd", "main_fno"),
    ] {
        let device = Default::default();
        let model = Fno::<NdArray>::load_checkpoint(&read(case, &format!("{name}_state_dict.pt")), None, &device)
            .unwrap()
            .with_spectral_impl(SpectralImpl::Reference);
        let (state_dict, metadata) = write_checkpoint(&model.state_dict(), model.config(), "ours").unwrap();
        assert_eq!(&read_metadata(&metadata).unwrap(), model.config(), "{case}");
        let back = Fno::<NdArray>::load_checkpoint(&state_dict, None, &device)
            .unwrap()
            .with_spectral_impl(SpectralImpl::Reference);
        let ((a, _), (b, want)) = (outputs::<4>(case, &model), outputs::<4>(case, &back));
        assert_eq!(a, b, "{case}: the same model");
        assert!(rel_l2(&b, &want) <= 1e-5, "{case}");
        if let Some(dir) = &keep {
            let dir = std::path::Path::new(dir).join(case);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("ours_state_dict.pt"), &state_dict).unwrap();
            std::fs::write(dir.join("ours_metadata.pkl"), &metadata).unwrap();
            std::fs::copy(self::dir(case).join("x.npy"), dir.join("x.npy")).unwrap();
            std::fs::copy(self::dir(case).join("y.npy"), dir.join("y.npy")).unwrap();
        }
    }
}

/// A state dict of neuraloperator's main branch (fixtures/torch/main2d_odd,
/// gen_main_branch_checkpoint.py) is read with main's inverse shift, which its
/// kwargs (`enforce_hermitian_symmetry` among them) say; a configuration's
/// `inverse_shift` overrides it, and on a grid odd in a non-last dim the other
/// shift is far off. Written back, a 2.0.0 model's kwargs hold none of main's.
#[test]
fn main_branch_files_are_read_with_mains_shift_and_a_configuration_picks_the_other() {
    let device = Default::default();
    let with_shift = |case: &str, name: &str, shift: Option<&str>| {
        let bytes = read(case, &format!("{name}_state_dict.pt"));
        let mut config = Fno::<NdArray>::load_checkpoint(&bytes, None, &device)
            .unwrap()
            .config()
            .clone();
        if let Some(shift) = shift {
            config.inverse_shift = Some(shift.into());
        }
        let model = Fno::<NdArray>::load_checkpoint(&bytes, Some(&config), &device)
            .unwrap()
            .with_spectral_impl(SpectralImpl::Reference);
        let (got, want) = outputs::<4>(case, &model);
        (model.config().inverse_shift(), rel_l2(&got, &want))
    };
    let (shift, e) = with_shift("main2d_odd", "main_fno", None);
    assert_eq!(shift, InverseShift::Ifftshift);
    assert!(e <= 1e-5, "main's file with main's shift: {e:e}");
    let (_, e) = with_shift("main2d_odd", "main_fno", Some("fftshift"));
    assert!(
        e > 1e-2,
        "main's file read as 2.0.0 is as good ({e:e}): the fixture does not tell them apart"
    );
    let (shift, e) = with_shift("tucker2d_odd", "tfno", None);
    assert_eq!(shift, InverseShift::Fftshift);
    assert!(e <= 1e-5, "2.0.0's file: {e:e}");
    let (_, e) = with_shift("tucker2d_odd", "tfno", Some("ifftshift"));
    assert!(e > 1e-2, "2.0.0's file read as main is as good ({e:e})");

    let model = Fno::<NdArray>::load_checkpoint(&read("tucker2d_odd", "tfno_state_dict.pt"), None, &device).unwrap();
    let (_, metadata) = write_checkpoint(&model.state_dict(), model.config(), "ours").unwrap();
    assert!(!read_metadata(&metadata).unwrap().has_main_arguments());
}

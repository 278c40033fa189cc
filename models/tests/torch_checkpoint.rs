//! neuraloperator's own checkpoint files (fixtures/torch, made by
//! gen_torch_checkpoints.py with neuraloperator 2.0): each state dict loads
//! with no configuration given (its `_metadata` entry holds the init kwargs)
//! and reproduces PyTorch's CPU output; the `NAME_metadata.pkl` beside it
//! gives the same configuration.

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use fno_kernels::testing::relative_l2_f32 as rel_l2;
use fno_models::neuralop_files::{read_metadata, write_checkpoint};
use fno_models::Fno;
use fno_ops::SpectralImpl;

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
    for (case, name) in [("dense2d", "darcy_fno"), ("tucker2d_odd", "tfno")] {
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

/// A state dict whose init kwargs come from neuraloperator's main branch
/// (`norm_groups` among them) is refused by name without a configuration,
/// and loads with one (which overrides the file's kwargs).
#[test]
fn main_branch_kwargs_are_named_and_a_configuration_overrides_them() {
    use fno_formats::torch::{read_bytes, Value};
    let bytes = read("dense2d", "darcy_fno_state_dict.pt");
    let config = Fno::<NdArray>::load_checkpoint(&bytes, None, &Default::default())
        .unwrap()
        .config()
        .clone();
    let Value::Dict(mut entries) = read_bytes(&bytes).unwrap() else {
        unreachable!()
    };
    // One `_metadata` item, as Python writes a dict (torch's own, the
    // module versions, is the OrderedDict's attribute, not an item).
    let kwargs_of =
        |v: &Value| matches!(v, Value::Dict(d) if d.iter().any(|(k, _)| k == &Value::Str("n_modes".into())));
    entries.retain(|(k, v)| k != &Value::Str("_metadata".into()) || kwargs_of(v));
    for (k, v) in entries.iter_mut() {
        if let (Value::Str(k), Value::Dict(kwargs)) = (k, v) {
            if k == "_metadata" && kwargs.iter().any(|(k, _)| k == &Value::Str("n_modes".into())) {
                kwargs.push((Value::Str("norm_groups".into()), Value::Int(1)));
            }
        }
    }
    let main = fno_formats::torch_write::write("main_state_dict", &Value::Dict(entries)).unwrap();
    let e = Fno::<NdArray>::load_checkpoint(&main, None, &Default::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("init kwarg norm_groups: a model of neuraloperator's main branch"),
        "{e}"
    );
    let model = Fno::<NdArray>::load_checkpoint(&main, Some(&config), &Default::default())
        .unwrap()
        .with_spectral_impl(SpectralImpl::Reference);
    let (got, want) = outputs::<4>("dense2d", &model);
    assert!(rel_l2(&got, &want) <= 1e-5);
}

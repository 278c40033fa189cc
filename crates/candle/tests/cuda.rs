//! Candle's CUDA device (`--features cuda`, a GPU; ignored without one): the
//! spectral convolution and its gradients against the CPU path, and the
//! model fixtures against PyTorch's outputs.

use candle_core::{DType, Device, Tensor, Var};
use fno_candle::transform::{retained_spectrum, spectrum_to_grid};
use fno_kernels::fft::Norm;
use fno_models::FnoConfig;
use fno_ops::{FaultTolerance, InverseShift, SpectralConvSpec};
use fno_testing::{fresh_seed, relative_l2_f32, uniform_f32};

/// Output and gradients (x, weight and, `with_bias`, the bias) of
/// `Σ g·conv(x)` on `device`.
fn run(device: &Device, case: &Case, spec: &SpectralConvSpec, seed: u64) -> Vec<Vec<f32>> {
    let values = |shape: &[usize], seed: u64| uniform_f32(shape.iter().product(), seed);
    let var = |shape: &[usize], seed: u64| Var::from_vec(values(shape, seed), shape, device).unwrap();
    let (xv, wv, bv) = (var(&case.x, seed), var(&case.w, seed + 1), var(&[case.w[1]], seed + 2));
    let bias = case.with_bias.then(|| bv.as_tensor());
    let y = fno_candle::spectral_conv(xv.as_tensor(), wv.as_tensor(), bias, spec).unwrap();
    let g = Tensor::from_vec(values(y.dims(), seed + 3), y.dims(), device).unwrap();
    let grads = (&y * &g).unwrap().sum_all().unwrap().backward().unwrap();
    let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let mut out = vec![flat(&y), flat(grads.get(&xv).unwrap()), flat(grads.get(&wv).unwrap())];
    if case.with_bias {
        out.push(flat(grads.get(&bv).unwrap()));
    }
    out
}

struct Case {
    x: Vec<usize>,
    w: Vec<usize>,
    with_bias: bool,
}

fn case(x: &[usize], w: &[usize], with_bias: bool) -> Case {
    Case {
        x: x.to_vec(),
        w: w.to_vec(),
        with_bias,
    }
}

/// The kernel path on Candle's CUDA device against Candle's CPU path, which
/// the tests in spectral.rs hold to Burn's reference path.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_matches_the_cpu_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let gpu = Device::new_cuda(0).unwrap();
    let checked = SpectralConvSpec::new(&[9]).fault_tolerance(FaultTolerance::Correct);
    for (case, spec) in [
        (case(&[4, 3, 64], &[3, 5, 9, 2], true), SpectralConvSpec::new(&[9])),
        (case(&[4, 3, 64], &[3, 5, 9, 2], false), checked),
        (
            case(&[2, 3, 30, 17], &[3, 4, 8, 5, 2], true),
            SpectralConvSpec::new(&[8, 5]).norm(Norm::Ortho),
        ),
        // A grid holding fewer modes than the weight crops it.
        (
            case(&[2, 3, 12, 10], &[3, 4, 8, 8, 2], false),
            SpectralConvSpec::new(&[8, 8]),
        ),
        (
            case(&[2, 3, 16, 16], &[3, 4, 6, 5, 2], true),
            SpectralConvSpec::new(&[6, 5]).output_size(&[16, 24]),
        ),
        (
            case(&[1, 2, 8, 6, 10], &[2, 3, 4, 3, 3, 2], true),
            SpectralConvSpec::new(&[4, 3, 3]),
        ),
        (
            case(&[2, 3, 16, 16], &[3, 4, 2], true),
            SpectralConvSpec::new(&[6, 4]).shared_weights(),
        ),
    ] {
        let on_cpu_spec = spec.clone().fault_tolerance(FaultTolerance::Off);
        let on_gpu = run(&gpu, &case, &spec, seed);
        let on_cpu = run(&Device::Cpu, &case, &on_cpu_spec, seed);
        for (what, (g, c)) in ["y", "dx", "dweight", "dbias"].iter().zip(on_gpu.iter().zip(&on_cpu)) {
            let e = relative_l2_f32(g, c);
            assert!(e < 1e-5, "{:?} {what}: {e:e}", case.x);
        }
    }
}

/// The transforms alone (their own ops on CUDA) and their adjoints.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_transforms_match_the_cpu_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let (modes, grid) = ([6, 4], [12, 10]);
    let run = |device: &Device| {
        let x = Var::from_vec(uniform_f32(2 * 3 * 120, seed), (2, 3, 12, 10), device).unwrap();
        let s = retained_spectrum(x.as_tensor(), &modes, Norm::Backward, InverseShift::Fftshift).unwrap();
        let y = spectrum_to_grid(
            &(&s * 0.5).unwrap(),
            &modes,
            &grid,
            Norm::Backward,
            InverseShift::Fftshift,
        )
        .unwrap();
        let g = Tensor::from_vec(uniform_f32(2 * 3 * 120, seed + 1), (2, 3, 12, 10), device).unwrap();
        let grads = (&y * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        [flat(&s), flat(&y), flat(grads.get(&x).unwrap())]
    };
    let (on_gpu, on_cpu) = (run(&Device::new_cuda(0).unwrap()), run(&Device::Cpu));
    for (what, (g, c)) in ["spectrum", "grid", "dx"].iter().zip(on_gpu.iter().zip(&on_cpu)) {
        let e = relative_l2_f32(g, c);
        assert!(e < 1e-5, "{what}: {e:e}");
    }
}

/// A transform's input that starts one float into its buffer (a narrowed
/// view): read in place at that offset, as on the CPU.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_transforms_read_views_at_their_offset() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let run = |device: &Device| {
        let buffer = Tensor::from_vec(uniform_f32(2 * 3 * 120 + 1, seed), 2 * 3 * 120 + 1, device).unwrap();
        let x = buffer
            .narrow(0, 1, 2 * 3 * 120)
            .unwrap()
            .reshape((2, 3, 12, 10))
            .unwrap();
        let s = retained_spectrum(&x, &[6, 4], Norm::Backward, InverseShift::Fftshift).unwrap();
        s.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    };
    let e = relative_l2_f32(&run(&Device::new_cuda(0).unwrap()), &run(&Device::Cpu));
    assert!(e < 1e-5, "spectrum of the view: {e:e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_reproduces_pytorch_on_the_fixtures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("../../models/tests/fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("y.npy").exists())
        .collect();
    dirs.push(root.join("../../../shared/fixtures/neuralop/fno2d_small"));
    let gpu = Device::new_cuda(0).unwrap();
    for dir in dirs {
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let config = std::fs::read_to_string(dir.join("config.json")).ok();
        let config = config.map(|c| FnoConfig::from_json(&c).unwrap());
        let model = fno_candle::Fno::load(&bytes, config.as_ref(), DType::F32, &gpu).unwrap();
        let x = fno_datasets::npy::read(dir.join("x.npy")).unwrap();
        let want = fno_datasets::npy::read(dir.join("y.npy")).unwrap().data;
        let got = fno_candle::infer(&model, &x.data, &x.shape, 4, (DType::F32, &gpu), |_, _| {}).unwrap();
        let e = relative_l2_f32(&got, &want);
        println!("{}: {e:.2e} off PyTorch on CUDA", dir.display());
        assert!(e < 1e-4, "{}: {e:e}", dir.display());
    }
}

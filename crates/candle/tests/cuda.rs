//! Candle's CUDA device (`--features cuda`, a GPU; ignored without one): the
//! spectral convolution and its gradients against the CPU path, and the
//! model fixtures against PyTorch's outputs.

use candle_core::{DType, Device, Tensor, Var};
use fno_kernels::fft::Norm;
use fno_kernels::testing::{fresh_seed, relative_l2_f32, uniform_f32};
use fno_models::FnoConfig;
use fno_ops::SpectralConvSpec;

/// Output and gradients (x, weight, bias) of `Σ g·conv(x)` on `device`.
fn run(device: &Device, x: &[usize], w: &[usize], spec: &SpectralConvSpec, seed: u64) -> Vec<Vec<f32>> {
    let values = |shape: &[usize], seed: u64| uniform_f32(shape.iter().product(), seed);
    let var = |shape: &[usize], seed: u64| Var::from_vec(values(shape, seed), shape, device).unwrap();
    let (xv, wv, bv) = (var(x, seed), var(w, seed + 1), var(&[w[1]], seed + 2));
    let y = fno_candle::spectral_conv(xv.as_tensor(), wv.as_tensor(), Some(bv.as_tensor()), spec).unwrap();
    let g = Tensor::from_vec(values(y.dims(), seed + 3), y.dims(), device).unwrap();
    let grads = (&y * &g).unwrap().sum_all().unwrap().backward().unwrap();
    let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let grad = |v: &Var| flat(grads.get(v).unwrap());
    vec![flat(&y), grad(&xv), grad(&wv), grad(&bv)]
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_matches_the_cpu_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let gpu = Device::new_cuda(0).unwrap();
    for (x, w, spec) in [
        (vec![4, 3, 64], vec![3, 5, 9, 2], SpectralConvSpec::new(&[9])),
        (
            vec![2, 3, 30, 17],
            vec![3, 4, 8, 5, 2],
            SpectralConvSpec::new(&[8, 5]).norm(Norm::Ortho),
        ),
        (
            vec![1, 2, 8, 6, 10],
            vec![2, 3, 4, 3, 3, 2],
            SpectralConvSpec::new(&[4, 3, 3]),
        ),
        (
            vec![2, 3, 16, 16],
            vec![3, 4, 2],
            SpectralConvSpec::new(&[6, 4]).shared_weights(),
        ),
    ] {
        let (on_gpu, on_cpu) = (run(&gpu, &x, &w, &spec, seed), run(&Device::Cpu, &x, &w, &spec, seed));
        for (what, (g, c)) in ["y", "dx", "dweight", "dbias"].iter().zip(on_gpu.iter().zip(&on_cpu)) {
            let e = relative_l2_f32(g, c);
            assert!(e < 1e-5, "{x:?} {what}: {e:e}");
        }
    }
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

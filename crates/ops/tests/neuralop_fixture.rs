//! neuraloperator's mode windows pinned with a real checkpoint: the first
//! spectral layer of ../shared/fixtures/neuralop/fno2d_small (n_modes (8, 8),
//! weight [16, 16, 8, 5] complex) applied to a known input, against the direct
//! f64 DFT computation.

mod common;

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use common::{random, rel_l2, spectral_conv_f64, Problem};
use fno_kernels::fft::Norm;
use fno_ops::spec::norm_scales;
use fno_ops::{spectral_conv_reference, SpectralConvSpec};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/neuralop/fno2d_small")
        .join(name)
}

#[test]
fn first_spectral_layer_of_the_fixture_matches_the_direct_dft() {
    let path = fixture("model_real.safetensors");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let view = st.tensor("fno_blocks.convs.0.weight.tensor").unwrap();
    assert_eq!(view.shape(), &[16, 16, 8, 5, 2]);
    let w: Vec<f64> = view
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect();
    let bias_view = st.tensor("fno_blocks.convs.0.bias").unwrap();
    let bias: Vec<f64> = bias_view
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect();

    // A 16 x 16 and an odd 15 x 13 grid: the window is the same 8 centred rows.
    for grid in [[16usize, 16], [15, 13]] {
        let norm = Norm::Forward;
        let scales: Vec<(f64, f64)> = grid.iter().map(|&n| norm_scales(norm, n, n)).collect();
        let p = Problem {
            batch: 2,
            cin: 16,
            cout: 16,
            input: grid.to_vec(),
            output: grid.to_vec(),
            modes: vec![8, 5],
            forward_scale: scales.iter().map(|s| s.0).collect(),
            inverse_scale: scales.iter().map(|s| s.1).collect(),
            shared: false,
        };
        let x = random(2 * 16 * grid[0] * grid[1], 42);
        let want = spectral_conv_f64(&p, &x, &w, Some(&bias));
        let device = Default::default();
        let y = spectral_conv_reference(
            Tensor::<NdArray<f64>, 4>::from_data(TensorData::new(x.clone(), [2, 16, grid[0], grid[1]]), &device),
            Tensor::<NdArray<f64>, 5>::from_data(TensorData::new(w.clone(), [16, 16, 8, 5, 2]), &device),
            Some(Tensor::from_data(TensorData::new(bias.clone(), [16]), &device)),
            &SpectralConvSpec::new(&[8, 5]).norm(norm),
        )
        .unwrap();
        let got = y.into_data().to_vec::<f64>().unwrap();
        let e = rel_l2(&got, &want);
        assert!(e < 1e-12, "grid {grid:?}: {e:e}");
    }
}

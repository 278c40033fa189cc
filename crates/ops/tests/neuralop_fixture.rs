//! neuraloperator's mode windows pinned with a real checkpoint: the first
//! spectral layer of ../shared/fixtures/neuralop/fno2d_small (n_modes (8, 8),
//! weight [16, 16, 8, 5] complex) applied to a known input, against the direct
//! f64 DFT computation, on the reference path (f64) and on the kernel path
//! (f32, wgpu) at grids of any size.

use crate::common;

use burn::backend::NdArray;
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use common::{random, rel_l2, spectral_conv_f64, Problem};
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::fft::Norm;
use fno_ops::spec::norm_scales;
use fno_ops::{spectral_conv, spectral_conv_reference, InverseShift, SpectralConvSpec, SpectralImpl};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;

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

    // A 16 x 16 grid, odd 15 x 13, and Darcy's 85 x 85 (Bluestein rows and
    // columns on the kernel path): the window is the same 8 centred rows.
    for grid in [[16usize, 16], [15, 13], [85, 85]] {
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
            shift: InverseShift::Fftshift,
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

        let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        for imp in [SpectralImpl::Unfused, SpectralImpl::Fused] {
            let y = spectral_conv(
                Tensor::<Wgpu, 4>::from_data(
                    TensorData::new(f32s(&x), [2, 16, grid[0], grid[1]]),
                    &Default::default(),
                ),
                Tensor::<Wgpu, 5>::from_data(TensorData::new(f32s(&w), [16, 16, 8, 5, 2]), &Default::default()),
                Some(Tensor::from_data(
                    TensorData::new(f32s(&bias), [16]),
                    &Default::default(),
                )),
                &SpectralConvSpec::new(&[8, 5]).norm(norm),
                imp,
            )
            .unwrap_or_else(|e| panic!("grid {grid:?}: {e}"));
            let got: Vec<f64> = y
                .into_data()
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect();
            let e = rel_l2(&got, &want);
            assert!(e < 1e-5, "{imp:?}, grid {grid:?}: {e:e}");
        }
    }
}

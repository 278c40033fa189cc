//! The tensor-core FFT (`src/fft/algorithm/tensor_core.rs`): half-precision
//! C2C signals of 256 points as 16 × 16 MMAs. Which plans take it, on the CPU;
//! its transforms against the oracle on CUDA (`--ignored` on a GPU machine).

use super::*;
use fno_kernels::fft::{MmaHalf, TENSOR_CORE_LEN};

/// Half-precision C2C axes of 256 contiguous points go to the tensor cores
/// where the device has half-precision MMA (bf16 operands where a buffer is
/// bf16), unless asked not to; f32 plans, other lengths, truncated or column
/// axes, and lavapipe keep the stage kernels.
#[test]
fn tensor_cores_take_contiguous_half_c2c_axes() {
    let c2c = |shape: &[usize], axes: &[isize], direction| FftDesc::new(shape, axes, FftKind::C2C, direction);
    let configs = |desc: &FftDesc, limits: &DeviceLimits, options| -> Vec<(bool, MmaHalf)> {
        lowered(desc, limits, options)
            .tensor_cores()
            .map(|cfg| (cfg.inverse, cfg.mma))
            .collect()
    };
    let h100 = |desc: &FftDesc| configs(desc, &DeviceLimits::H100, DeviceOptions::default());
    let n = TENSOR_CORE_LEN;
    let forward = c2c(&[3, n], &[-1], Direction::Forward);
    assert_eq!(
        h100(&forward.clone().precision(Precision::F16)),
        [(false, MmaHalf::F16)]
    );
    assert_eq!(
        h100(&forward.clone().precision(Precision::BF16)),
        [(false, MmaHalf::BF16)]
    );
    let inverse = c2c(&[3, n], &[-1], Direction::Inverse).precisions(Precision::F16, Precision::F32);
    assert_eq!(h100(&inverse), [(true, MmaHalf::F16)]);
    assert!(h100(&forward).is_empty(), "f32 plan");
    let never = DeviceOptions {
        tensor_cores: TensorCores::Never,
        ..DeviceOptions::default()
    };
    let half = forward.precision(Precision::F16);
    assert!(configs(&half, &DeviceLimits::H100, never).is_empty(), "asked for none");
    assert!(configs(&half, &DeviceLimits::LAVAPIPE, DeviceOptions::default()).is_empty());
    let others = [
        c2c(&[3, 128], &[-1], Direction::Forward),
        c2c(&[3, 512], &[-1], Direction::Forward),
        c2c(&[3, n], &[-1], Direction::Forward).modes(&[64]),
        c2c(&[n, 3], &[0], Direction::Forward),
        FftDesc::new(&[3, 2 * n], &[-1], FftKind::R2C, Direction::Forward),
    ];
    for desc in others {
        assert!(h100(&desc.clone().precision(Precision::F16)).is_empty(), "{desc:?}");
    }
    // A 2D half C2C: the contiguous axis on tensor cores, the column axis not.
    let plane = c2c(&[2, 64, n], &[-2, -1], Direction::Forward).precision(Precision::F16);
    let no_plane = DeviceOptions {
        plane: PlaneFusion::Never,
        ..DeviceOptions::default()
    };
    assert_eq!(configs(&plane, &DeviceLimits::H100, no_plane), [(false, MmaHalf::F16)]);
}

/// Half-precision C2C signals of 256 points with their radix-16 butterflies
/// on tensor cores (`m16n8k16` MMAs), against the oracle: forward and
/// inverse (orthonormal), f16 and bf16, half buffers or f32 on one side,
/// batches that leave a cube's warps idle or fill several cubes, and a 2D
/// transform whose contiguous axis takes them. Each plan is asserted to take
/// the tensor cores, and the stage kernels' error on the same case is printed beside.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn tensor_core_butterflies_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    let seed = drawn_seed();
    let never = DeviceOptions {
        tensor_cores: TensorCores::Never,
        ..DeviceOptions::default()
    };
    let precisions = [
        (Precision::F16, Precision::F16),
        (Precision::BF16, Precision::BF16),
        (Precision::F32, Precision::F16),
        (Precision::F16, Precision::F32),
    ];
    let n = TENSOR_CORE_LEN;
    let shapes: [&[usize]; 3] = [&[3, n], &[37, n], &[2, 3, 67, n]];
    let mut errors = Vec::new();
    let mut case_seed = seed;
    for shape in shapes {
        for direction in [Direction::Forward, Direction::Inverse] {
            for (from, to) in precisions {
                let axes: &[isize] = if shape.len() == 4 { &[-2, -1] } else { &[-1] };
                let norm = if direction == Direction::Inverse {
                    Norm::Ortho
                } else {
                    Norm::Backward
                };
                let desc = FftDesc::new(shape, axes, FftKind::C2C, direction)
                    .norm(norm)
                    .precisions(from, to);
                let device = device_with(&client, &desc, DeviceOptions::default());
                assert_eq!(
                    device.recipe().tensor_cores().count(),
                    1,
                    "{desc:?}: not on tensor cores"
                );
                let e = error_of(&client, &device, case_seed);
                let stages = error_of(&client, &device_with(&client, &desc, never), case_seed);
                println!("C2C {shape:?} {direction:?} {from}→{to}: tensor cores {e:.2e}, stage kernels {stages:.2e}");
                assert!(e <= bound(&desc), "{desc:?} (seed {case_seed}): {e:.3e}");
                errors.push((format!("{desc:?}"), e));
                case_seed = case_seed.wrapping_add(1);
            }
        }
    }
    report("tensor_core_butterflies_on_cuda", &errors);
}

//! `SpectralConvBackend::device_memory`: on wgpu it counts a new tensor's bytes
//! among those in use (through `Autodiff` too) and the pools hold at least
//! what is in use; the CPU backends have none to report.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::Tensor;
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::SpectralConvBackend;

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;

#[test]
fn device_memory_counts_live_tensors_on_wgpu_only() {
    let device = Default::default();
    let before = <Autodiff<Wgpu>>::device_memory(&device).expect("wgpu reports its memory");
    // 4 MiB of f32, filled on the device so the buffer is really allocated.
    let t = Tensor::<Wgpu, 1>::ones([1 << 20], &device);
    let _ = t.clone().sum().into_data();
    let during = Wgpu::device_memory(&device).unwrap();
    assert!(
        during.in_use >= before.in_use + (4 << 20),
        "a 4 MiB tensor: {before:?} → {during:?}"
    );
    assert!(during.reserved >= during.in_use, "{during:?}");
    // f64, as NdArray everywhere in this binary (its first use fixes the float type).
    assert_eq!(NdArray::<f64>::device_memory(&Default::default()), None);
}

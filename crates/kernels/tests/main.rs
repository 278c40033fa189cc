//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod activation_device;
mod adamw_device;
mod cgemm_device;
mod chain_device;
mod cgemm_faults_device;
mod channel_scale_device;
mod fft;
mod fused_device;
mod nufft_device;
mod pointwise_conv_device;
mod pointwise_grad_device;
mod precision_device;
mod split_sum_device;

/// The first CUDA device, for the `--ignored` tests of the asynchronous-copy
/// paths (wgpu has none), checked to have them.
#[cfg(feature = "cuda")]
fn cuda_client_with_async_copies() -> cubecl::prelude::ComputeClient<cubecl::cuda::CudaRuntime> {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use cubecl::prelude::Runtime;
    let client = CudaRuntime::client(&CudaDevice { index: 0 });
    assert!(
        client.properties().features.copy_async,
        "this device has no asynchronous copies"
    );
    client
}

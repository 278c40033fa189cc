//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod activation_device;
mod adamw_device;
mod cgemm_device;
mod cgemm_faults_device;
mod chain_device;
mod channel_scale_device;
mod fft;
mod fused_device;
mod nufft_device;
mod pointwise_conv_device;
mod pointwise_grad_device;
mod precision_device;
mod sobolev_device;
mod split_sum_device;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use cubecl::prelude::{ComputeClient, Runtime};
use cubecl::wgpu::{init_device, AutoGraphicsApi, GraphicsApi, RuntimeOptions, WgpuDevice, WgpuRuntime, WgpuSetup};

/// The wgpu client the tests run on: the default device (lavapipe in CI).
fn wgpu_client() -> ComputeClient<WgpuRuntime> {
    WgpuRuntime::client(&WgpuDevice::default())
}

/// One wgpu client per core, the first the default device's: shader
/// compilation, most of a lavapipe test's time, runs on the thread of each
/// device's CubeCL server (docs/testing.md), so cases spread over these
/// ([`spread`]) compile on every core.
fn wgpu_clients() -> Vec<ComputeClient<WgpuRuntime>> {
    static MORE: OnceLock<Vec<WgpuDevice>> = OnceLock::new();
    let more = MORE.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (1..cores)
            .map(|_| init_device(default_adapter_setup(), RuntimeOptions::default()))
            .collect()
    });
    std::iter::once(wgpu_client())
        .chain(more.iter().map(WgpuRuntime::client))
        .collect()
}

/// A new wgpu device on the adapter `WgpuDevice::default()` picks, asked
/// for what CubeCL asks of it (every feature but mappable primary buffers,
/// the adapter's limits).
fn default_adapter_setup() -> WgpuSetup {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: AutoGraphicsApi::backend().into(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = cubecl::future::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
    }))
    .expect("a wgpu adapter");
    let (device, queue) = cubecl::future::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: adapter.features().difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
        required_limits: adapter.limits(),
        memory_hints: wgpu::MemoryHints::MemoryUsage,
        ..Default::default()
    }))
    .expect("a second wgpu device on the default adapter");
    let backend = adapter.get_info().backend;
    WgpuSetup {
        instance,
        adapter,
        device,
        queue,
        backend,
    }
}

/// `job` of every item, the items shared out over `clients` (a thread each,
/// taking the next item as it finishes one), the results in the items'
/// order; a job's panic fails the caller with its message.
fn spread<R: Runtime, T: Sync, O: Send>(
    clients: &[ComputeClient<R>],
    items: &[T],
    job: impl Fn(&ComputeClient<R>, &T) -> O + Sync,
) -> Vec<O> {
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<O>> = items.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .iter()
            .map(|client| {
                let (next, job) = (&next, &job);
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break done };
                        done.push((i, job(client, item)));
                    }
                })
            })
            .collect();
        for worker in workers {
            let done = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (i, result) in done {
                results[i] = Some(result);
            }
        }
    });
    results.into_iter().map(|r| r.expect("every item ran")).collect()
}

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

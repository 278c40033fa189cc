//! On a GPU only (`cargo test -p fno-recorder --test gpu -- --ignored`): a
//! recorder modelling the GPU from its driver's attributes against
//! cubecl-cuda's properties, and recorded plans replayed on a cudarc stream
//! against the same plans run by cubecl-cuda, bit for bit.

use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cudarc::driver::{CudaContext, DevicePtr};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};
use fno_recorder::{properties::DeviceSpec, Executor, RecordingDevice, RecordingRuntime, VRange};

/// The recorder modelling GPU 0.
fn modelled() -> (DeviceSpec, RecordingDevice) {
    let spec = DeviceSpec::of(&CudaContext::new(0).unwrap()).unwrap();
    (spec, RecordingDevice::modelling(spec))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn properties_equal_cubecl_cudas() {
    let cuda = CudaRuntime::client(&CudaDevice { index: 0 });
    let (spec, device) = modelled();
    println!("{spec:?}");
    let recorder = RecordingRuntime::client(&device);
    let (cuda, recorder) = (cuda.properties(), recorder.properties());
    assert_eq!(recorder.hardware, cuda.hardware);
    assert_eq!(recorder.memory, cuda.memory);
    assert_eq!(recorder.features, cuda.features);
    assert_eq!(recorder, cuda);
}

/// Uniform values in [-1, 1) from `seed` (a 64-bit LCG).
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn page(client: &ComputeClient<RecordingRuntime>, handle: &Handle) -> VRange {
    *client.get_resource(handle.clone()).unwrap().resource()
}

/// `desc` run by cubecl-cuda and replayed from the recorder on Candle's kind
/// of stream (cudarc's), input and output foreign buffers: the same bytes.
fn replay_matches_cubecl_cuda(desc: FftDesc, seed: u64) {
    let input = values(FftPlan::new(desc.clone()).unwrap().input_floats(), seed);
    let cuda = CudaRuntime::client(&CudaDevice { index: 0 });
    let plan = FftPlan::new(desc.clone()).unwrap().on_device(&cuda).unwrap();
    let out_bytes = 4 * plan.plan().output_floats();
    let (x, y) = (cuda.create_from_slice(f32::as_bytes(&input)), cuda.empty(out_bytes));
    plan.execute(&x, &y).unwrap();
    let expected = cuda.read_one(y).unwrap().to_vec();

    let (spec, device) = modelled();
    let recorder = RecordingRuntime::client(&device);
    let recorded = FftPlan::new(desc.clone()).unwrap().on_device(&recorder).unwrap();
    let (rx, ry) = (recorder.empty(4 * input.len()), recorder.empty(out_bytes));
    recorded.execute(&rx, &ry).unwrap();
    recorder.flush().unwrap();
    let records = RecordingRuntime::log(&recorder).drain();

    let stream = CudaContext::new(0).unwrap().default_stream();
    let mut executor = Executor::new(stream.clone(), spec).unwrap();
    let sx = stream.clone_htod(input.as_slice()).unwrap();
    let sy = stream.alloc_zeros::<u8>(out_bytes).unwrap();
    let foreign = [
        (page(&recorder, &rx), sx.device_ptr(&stream).0),
        (page(&recorder, &ry), sy.device_ptr(&stream).0),
    ];
    executor.replay(&records, &foreign).unwrap();
    let got = stream.clone_dtoh(&sy).unwrap();
    assert!(
        got == expected,
        "{desc:?} (seed {seed}): replay differs from cubecl-cuda"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn recorded_ffts_replay_bit_for_bit() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    println!("seed {seed}");
    for desc in [
        FftDesc::new(&[4, 64], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 96], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 17], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[32]),
        FftDesc::new(&[3, 37], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, 32, 48], &[-2, -1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[1, 1 << 16], &[-1], FftKind::C2C, Direction::Forward),
    ] {
        replay_matches_cubecl_cuda(desc, seed);
    }
}

//! The recorder on the CPU: real kernels recorded, then compiled with CubeCL's
//! CUDA compiler and checked against what was recorded. No GPU, no CUDA toolkit.

use cubecl::prelude::*;
use cubecl::server::Handle;
use fno_kernels::cgemm::{spectral, CgemmProblem, Strides};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan};
use fno_kernels::fused::{FusedBuffers, FusedSpectralConv};
use fno_kernels::precision::Precision;
use fno_recorder::{
    compile_ptx, cuda_path, nvrtc_options,
    properties::{compilation_options, DeviceSpec, H100_SXM},
    AddressSpace, Backing, CudaCompiler, LaunchParams, Record, RecordedLaunch, RecordingDevice, RecordingRuntime,
    VRange,
};
use std::collections::HashMap;

/// Each test its own recorder, so that logs do not mix when tests run in parallel.
fn client(index: u16) -> ComputeClient<RecordingRuntime> {
    RecordingRuntime::client(&RecordingDevice { index })
}

fn drain(client: &ComputeClient<RecordingRuntime>) -> Vec<Record> {
    client.flush().unwrap();
    RecordingRuntime::log(client).drain()
}

fn launches(records: &[Record]) -> Vec<&RecordedLaunch> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Launch(l) => Some(l),
            _ => None,
        })
        .collect()
}

/// Small transforms of each kind, a prime length (Rader or Bluestein), half
/// precisions, two axes, and a length of several passes.
fn fft_descs() -> Vec<FftDesc> {
    vec![
        FftDesc::new(&[4, 64], &[-1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 96], &[-1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 17], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[32]),
        FftDesc::new(&[3, 37], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[2, 64], &[-1], FftKind::C2C, Direction::Forward).precision(Precision::F16),
        FftDesc::new(&[2, 64], &[-1], FftKind::C2C, Direction::Forward).precision(Precision::BF16),
        FftDesc::new(&[2, 32, 48], &[-2, -1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[1, 1 << 16], &[-1], FftKind::C2C, Direction::Forward),
    ]
}

/// Plans and executes `desc` on the recorder; `input_offset` bytes of the input buffer skipped.
fn record_fft(client: &ComputeClient<RecordingRuntime>, desc: FftDesc, input_offset: u64) -> (Handle, Handle) {
    let device = FftPlan::new(desc).unwrap().on_device(client).unwrap();
    let plan = device.plan();
    let in_bytes = (plan.input_floats() * device.input_stored().bytes()) as u64;
    let out_bytes = plan.output_floats() * device.output_stored().bytes();
    let input = client.empty(in_bytes as usize + input_offset as usize);
    let input = input.offset_start(input_offset);
    let output = client.empty(out_bytes);
    device.execute(&input, &output).unwrap();
    (input, output)
}

/// Compiles `launch` as cubecl-cuda would for an H100 and checks the kernel's
/// signature against what the launcher packed.
fn check_against_compiled(launch: &RecordedLaunch) {
    check_against_compiled_for(launch, &H100_SXM);
}

/// [`check_against_compiled`] for a device of `spec`.
fn check_against_compiled_for(launch: &RecordedLaunch, spec: &DeviceSpec) {
    let task = &launch.task;
    let compiled = compile(launch, spec);
    let repr = compiled.repr.as_ref().unwrap();
    let name = task.name();
    assert_eq!(repr.buffers.len(), launch.buffers.len(), "{name}: buffers");
    assert!(repr.tensor_maps.is_empty(), "{name}: tensor maps");
    assert_eq!(
        8 * launch.dynamic_metadata_offset,
        repr.info.dynamic_meta_offset,
        "{name}: dynamic meta offset"
    );
    let has_dynamic = launch.dynamic_metadata_offset < launch.info.len();
    assert_eq!(repr.info.has_dynamic_meta, has_dynamic, "{name}: dynamic metadata");
    assert_eq!(compiled.cube_dim, launch.kernel_id.cube_dim, "{name}: cube dim");
    assert_eq!(repr.cube_dim, launch.kernel_id.cube_dim, "{name}: repr cube dim");
    assert!(
        repr.shared_memory_size() <= spec.max_shared_memory,
        "{name}: shared memory"
    );
    let params = kernel_params(&compiled.source, &compiled.entrypoint_name);
    assert_eq!(params, expected_params(launch), "{name}: parameters");
    for range in &launch.buffers {
        assert!(
            range.len > 0 && range.addr >= fno_recorder::VIRTUAL_BASE,
            "{name}: range {range:?}"
        );
    }
}

/// `launch`'s kernel as cubecl-cuda compiles it for a device of `spec`.
fn compile(launch: &RecordedLaunch, spec: &DeviceSpec) -> CompiledKernel<CudaCompiler> {
    let task = &launch.task;
    let options = compilation_options(spec);
    task.compile(&mut CudaCompiler::default(), &options, launch.mode, task.address_type())
        .unwrap()
}

/// The parameter names of the `__global__` function `entry` in CUDA C++ `source`.
fn kernel_params(source: &str, entry: &str) -> Vec<String> {
    let global = source.find("extern \"C\" __global__").expect("no kernel");
    let open = global + source[global..].find(&format!("{entry} (")).expect("no entry point") + entry.len() + 2;
    let close = open + source[open..].find(')').unwrap();
    let names = source[open..close]
        .split(',')
        .map(|param| param.split_whitespace().last().unwrap());
    names.map(str::to_string).collect()
}

/// The parameters cubecl-cuda's launch fills for `launch` on an sm_90 (grid
/// constants on): the buffers, the dynamic metadata if any, the info struct if any.
fn expected_params(launch: &RecordedLaunch) -> Vec<String> {
    let mut params: Vec<String> = (0..launch.buffers.len()).map(|i| format!("buffer_{i}")).collect();
    if launch.dynamic_metadata_offset < launch.info.len() {
        params.push("dynamic_meta".into());
    }
    if launch.dynamic_metadata_offset > 0 {
        params.push("info".into());
    }
    params
}

#[test]
fn fft_launches_match_their_compiled_kernels() {
    let client = client(1);
    for desc in fft_descs() {
        let _buffers = record_fft(&client, desc.clone(), 0);
        let records = drain(&client);
        let launches = launches(&records);
        assert!(!launches.is_empty(), "{desc:?}: no launch recorded");
        for launch in launches {
            check_against_compiled(launch);
        }
    }
}

/// Records `problem` on buffers of its extents, each value as its precision is stored on the recorder.
fn record_cgemm(client: &ComputeClient<RecordingRuntime>, problem: &CgemmProblem) -> Vec<Record> {
    let (ea, eb, ec) = problem.extents();
    let width = if problem.complex { 2 } else { 1 };
    let p = problem.precisions;
    let buffer = |extent: usize, precision: fno_kernels::precision::Precision| {
        client.empty(width * extent * precision.stored_on(client).bytes())
    };
    let (a, b, c) = (buffer(ea, p.a), buffer(eb, p.b), buffer(ec, p.c));
    problem.launch(client, &a, &b, &c);
    drain(client)
}

#[test]
fn cgemm_launches_match_their_compiled_kernels() {
    let client = client(8);
    let dense = spectral::dense_weight(6, 33, false);
    let forward = spectral::forward(4, 8, 6, 33, dense);
    let scaled = CgemmProblem {
        mode_scale: vec![0.5, 1.5, 2.5],
        ..forward.clone()
    };
    // A long batch reduction into few outputs: split into partials, then summed.
    let split = spectral::grad_weight(3000, 3, 2, 3);
    for (problem, min_launches) in [(&forward, 1), (&scaled, 1), (&split, 2)] {
        let records = record_cgemm(&client, problem);
        let launches = launches(&records);
        assert!(
            launches.len() >= min_launches,
            "{problem:?}: {} launches",
            launches.len()
        );
        for launch in launches {
            check_against_compiled(launch);
        }
    }
}

#[test]
fn cgemm_mode_scale_is_uploaded() {
    let client = client(9);
    let scaled = CgemmProblem {
        mode_scale: vec![0.5, 1.5, 2.5],
        ..spectral::forward(2, 3, 4, 5, spectral::dense_weight(4, 5, false))
    };
    let records = record_cgemm(&client, &scaled);
    let scale_bytes: Vec<u8> = scaled.mode_scale.iter().flat_map(|v| v.to_le_bytes()).collect();
    let uploaded = records
        .iter()
        .any(|r| matches!(r, Record::Write(w) if w.bytes == scale_bytes));
    assert!(uploaded, "mode_scale not among the uploads");
}

/// A 1D real spectral convolution, batch 2, 3 → 4 channels, 64 points, 12 modes.
fn fused_conv() -> FusedSpectralConv {
    let (batch, cin, cout, n, modes) = (2, 3, 4, 64, 12);
    let forward = FftDesc::new(&[batch, cin, n], &[2], FftKind::R2C, Direction::Forward).modes(&[modes]);
    let inverse = FftDesc::new(&[batch, cout, modes], &[2], FftKind::C2R, Direction::Inverse)
        .modes(&[modes])
        .lengths(&[n]);
    let weight = Strides {
        row: cout * modes,
        col: modes,
        mode: 1,
    };
    let plans = (FftPlan::new(forward).unwrap(), FftPlan::new(inverse).unwrap());
    FusedSpectralConv::new(&plans.0, &plans.1, weight).unwrap()
}

/// [`fused_conv`] recorded on `client`: the log, and the input and output buffers.
fn record_fused(client: &ComputeClient<RecordingRuntime>) -> (Vec<Record>, Handle, Handle) {
    let problem = fused_conv();
    let (ex, ew, ey, es) = problem.extents();
    let [x, w, y, spectrum] = [ex, ew, ey, es].map(|floats| client.empty(4 * floats));
    let tables = problem.tables(client);
    let buffers = FusedBuffers {
        x: &x,
        weight: &w,
        y: &y,
        spectrum: Some(&spectrum),
        bias: None,
    };
    problem.launch(client, &tables, buffers);
    (drain(client), x, y)
}

#[test]
fn fused_spectral_conv_launch_matches_its_compiled_kernel() {
    let client = client(10);
    let (records, _x, y) = record_fused(&client);
    // Four tables (twiddles and factors of each transform) uploaded before the launch.
    assert_eq!(records.iter().filter(|r| matches!(r, Record::Write(_))).count(), 4);
    let launches = launches(&records);
    assert_eq!(launches.len(), 1);
    check_against_compiled(launches[0]);
    let y_addr = base_range(&client, &y).addr;
    assert!(launches[0].buffers.iter().any(|r| r.addr == y_addr));
}

#[cube(launch)]
fn scale_kernel(src: &Array<f32>, dst: &mut Array<f32>, factor: f32) {
    let i = ABSOLUTE_POS;
    if i < src.len() {
        dst[i] = src[i] * factor;
    }
}

fn launch_scale(client: &ComputeClient<RecordingRuntime>, count: CubeCount, src: &Handle, dst: &Handle, len: usize) {
    unsafe {
        scale_kernel::launch::<RecordingRuntime>(
            client,
            count,
            CubeDim::new_1d(64),
            ArrayArg::from_raw_parts(src.clone(), len),
            ArrayArg::from_raw_parts(dst.clone(), len),
            2.0f32,
        );
    }
}

fn base_range(client: &ComputeClient<RecordingRuntime>, handle: &Handle) -> VRange {
    *client.get_resource(handle.clone()).unwrap().resource()
}

#[test]
fn buffer_ranges_are_base_plus_offset() {
    let client = client(2);
    let (src, dst) = (client.empty(4096), client.empty(1024));
    let (src_base, dst_base) = (base_range(&client, &src), base_range(&client, &dst));
    let view = src.clone().offset_start(256).offset_end(2816);
    launch_scale(&client, CubeCount::Static(4, 1, 1), &view, &dst, 256);
    let records = drain(&client);
    let launch = launches(&records)[0];
    assert_eq!(launch.cube_count, (4, 1, 1));
    assert_eq!(
        launch.buffers[0],
        VRange {
            addr: src_base.addr + 256,
            len: 1024
        }
    );
    assert_eq!(
        launch.buffers[1],
        VRange {
            addr: dst_base.addr,
            len: 1024
        }
    );
    assert_ne!(src_base.addr, dst_base.addr);
    check_against_compiled(launch);
}

#[cube(launch)]
fn first_column(t: &Tensor<f32>, out: &mut Array<f32>) {
    let row = ABSOLUTE_POS;
    if row < t.shape(0) {
        out[row] = t[row * t.stride(0)];
    }
}

/// The address words of `launch`'s dynamic metadata, as the kernel reads them.
fn dynamic_metadata(launch: &RecordedLaunch) -> Vec<u64> {
    let tail = &launch.info[launch.dynamic_metadata_offset..];
    match launch.task.address_type().size() {
        4 => tail.iter().flat_map(|w| [w & 0xffff_ffff, w >> 32]).collect(),
        _ => tail.to_vec(),
    }
}

#[test]
fn tensor_shapes_and_strides_go_to_dynamic_metadata() {
    let client = client(7);
    let (t, out) = (client.empty(8 * 16 * 4), client.empty(8 * 4));
    unsafe {
        first_column::launch::<RecordingRuntime>(
            &client,
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(8),
            TensorArg::from_raw_parts(t.clone(), [16, 1].into(), [8, 16].into()),
            ArrayArg::from_raw_parts(out.clone(), 8),
        );
    }
    let records = drain(&client);
    let launch = launches(&records)[0];
    check_against_compiled(launch);
    // Shapes then strides, each padded to whole words.
    assert_eq!(dynamic_metadata(launch)[..4], [8, 16, 16, 1]);
}

#[test]
fn fft_input_with_offset_start_resolves_to_base_plus_offset() {
    let client = client(3);
    let desc = FftDesc::new(&[2, 64], &[-1], FftKind::C2C, Direction::Forward);
    let (input, output) = record_fft(&client, desc, 512);
    let records = drain(&client);
    let input_addr = base_range(&client, &input).addr;
    let output_addr = base_range(&client, &output).addr;
    let launches = launches(&records);
    let first = launches.first().unwrap();
    assert!(
        first.buffers.iter().any(|r| r.addr == input_addr),
        "input at {input_addr:#x} in {:?}",
        first.buffers
    );
    let last = launches.last().unwrap();
    assert!(
        last.buffers.iter().any(|r| r.addr == output_addr),
        "output at {output_addr:#x} in {:?}",
        last.buffers
    );
}

/// A log's launches and uploads with their virtual addresses renamed by order
/// of first appearance (which pages the memory manager allocates anew or
/// reuses is its own affair).
#[derive(Debug, PartialEq)]
enum Canonical {
    Launch {
        name: &'static str,
        cube_count: (u32, u32, u32),
        buffers: Vec<(usize, u64)>,
        info: Vec<u64>,
        dynamic_metadata_offset: usize,
    },
    Write {
        range: (usize, u64),
        bytes: Vec<u8>,
    },
}

fn canonical(records: &[Record]) -> Vec<Canonical> {
    let mut names: HashMap<u64, usize> = HashMap::new();
    let mut rename = |r: &VRange| {
        let next = names.len();
        (*names.entry(r.addr).or_insert(next), r.len)
    };
    records
        .iter()
        .filter_map(|record| match record {
            Record::Launch(l) => Some(Canonical::Launch {
                name: l.task.name(),
                cube_count: l.cube_count,
                buffers: l.buffers.iter().map(&mut rename).collect(),
                info: l.info.clone(),
                dynamic_metadata_offset: l.dynamic_metadata_offset,
            }),
            Record::Write(w) => Some(Canonical::Write {
                range: rename(&w.range),
                bytes: w.bytes.clone(),
            }),
            Record::Alloc(_) | Record::Free(_) => None,
        })
        .collect()
}

#[test]
fn recording_a_plan_twice_gives_the_same_log() {
    let client = client(4);
    let desc = FftDesc::new(&[3, 128], &[-1], FftKind::R2C, Direction::Forward);
    let first_buffers = record_fft(&client, desc.clone(), 0);
    let first = drain(&client);
    let second_buffers = record_fft(&client, desc, 0);
    let second = drain(&client);
    // Both sets live: the second recording's addresses differ from the first's.
    assert_ne!(
        base_range(&client, &first_buffers.0),
        base_range(&client, &second_buffers.0)
    );
    assert!(
        first.iter().any(|r| matches!(r, Record::Write(_))),
        "twiddle tables uploaded"
    );
    assert_eq!(canonical(&first), canonical(&second));
    let ids = |log: &[Record]| launches(log).iter().map(|l| l.kernel_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&second));
}

#[test]
fn dynamic_cube_counts_are_refused() {
    let client = client(5);
    let (src, dst, count) = (client.empty(256), client.empty(256), client.empty(12));
    launch_scale(&client, CubeCount::Dynamic(count.binding()), &src, &dst, 64);
    let err = client.flush().unwrap_err();
    assert!(format!("{err}").contains("dynamic cube counts"), "{err}");
    assert!(launches(&RecordingRuntime::log(&client).drain()).is_empty());
}

#[test]
fn reads_are_refused() {
    let client = client(6);
    let handle = client.create_from_slice(&[1u8, 2, 3, 4]);
    assert!(client.read_one(handle).is_err());
    let records = drain(&client);
    let writes: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Write(w) => Some(w),
            _ => None,
        })
        .collect();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].bytes, vec![1, 2, 3, 4]);
    assert_eq!(writes[0].range.len, 4);
}

/// Where the replay test backs the recorder's own pages: a fixed shift of the virtual address.
const DEVICE: u64 = 0x7000_0000_0000;

/// A recorded convolution replays onto backed pages: every range its launches
/// and uploads touch lies in a page the log allocated and did not free; a
/// foreign page (the input, as a Candle buffer would be) and the replay's own
/// pages translate by offset; each launch's parameters are its compiled
/// kernel's, in order.
#[test]
fn recorded_launches_replay_onto_backed_pages() {
    let client = client(12);
    let (records, x, _y) = record_fused(&client);
    let mut space = AddressSpace::default();
    for record in &records {
        assert_eq!(space.apply(record), None, "nothing freed mid-recording");
    }
    let foreign = base_range(&client, &x);
    let candle = 0xC0DE_0000;
    space.back(foreign, Backing::Foreign(candle)).unwrap();
    for page in space.unbacked() {
        space
            .back(
                page,
                Backing::Internal(Some(DEVICE + page.addr - fno_recorder::VIRTUAL_BASE)),
            )
            .unwrap();
    }
    let device = |r: &VRange| {
        if r.addr >= foreign.addr && r.addr < foreign.addr + foreign.len {
            candle + r.addr - foreign.addr
        } else {
            DEVICE + r.addr - fno_recorder::VIRTUAL_BASE
        }
    };
    let launches = launches(&records);
    assert_eq!(launches.len(), 1);
    for launch in launches {
        let params = LaunchParams::of(launch, &space).unwrap();
        assert_eq!(params.buffers, launch.buffers.iter().map(device).collect::<Vec<_>>());
        assert!(params.buffers.contains(&candle), "x is read from the foreign buffer");
        let compiled = compile(launch, &H100_SXM);
        let mut names: Vec<String> = (0..params.buffers.len()).map(|i| format!("buffer_{i}")).collect();
        names.extend(params.dynamic_metadata.as_ref().map(|_| "dynamic_meta".to_string()));
        names.extend(params.info.as_ref().map(|_| "info".to_string()));
        assert_eq!(kernel_params(&compiled.source, &compiled.entrypoint_name), names);
        assert_eq!(params.pointer_count(), names.len() - usize::from(params.info.is_some()));
    }
    for record in &records {
        if let Record::Write(write) = record {
            assert_eq!(space.translate(write.range), Ok(device(&write.range)));
        }
    }
}

/// With NVRTC and the CUDA headers on the host (no GPU; a toolkit as
/// crates/candle/scripts/cuda_toolkit.sh assembles, CUDA_PATH and
/// LD_LIBRARY_PATH set): every kernel recorded for the FFT plans, the CGEMMs
/// and the fused convolution compiles to sm_90a PTX whose entry point is the
/// one the executor loads.
#[test]
#[ignore = "needs NVRTC and the CUDA headers (CUDA_PATH, LD_LIBRARY_PATH)"]
fn recorded_kernels_compile_with_nvrtc() {
    let options = nvrtc_options(H100_SXM.arch, &cuda_path().expect("CUDA_PATH names a toolkit"));
    let client = client(13);
    let mut records = Vec::new();
    for desc in fft_descs() {
        let _buffers = record_fft(&client, desc, 0);
        records.extend(drain(&client));
    }
    let dense = spectral::dense_weight(6, 33, false);
    records.extend(record_cgemm(&client, &spectral::forward(4, 8, 6, 33, dense)));
    records.extend(record_cgemm(&client, &spectral::grad_weight(3000, 3, 2, 3)));
    let launches = launches(&records);
    let mut compiled = std::collections::HashSet::new();
    for launch in &launches {
        if !compiled.insert(launch.kernel_id.clone()) {
            continue;
        }
        let kernel = compile_ptx(launch, &H100_SXM, &options).unwrap_or_else(|e| panic!("{e}"));
        let ptx = kernel.ptx.to_src();
        assert!(
            ptx.contains(".target sm_90a"),
            "{}: {}",
            kernel.entry,
            &ptx[..200.min(ptx.len())]
        );
        assert!(
            ptx.contains(&format!(".entry {}(", kernel.entry)),
            "{}: no such entry",
            kernel.entry
        );
        assert_eq!(kernel.cube_dim, launch.kernel_id.cube_dim);
    }
    println!("{} launches, {} kernels compiled", launches.len(), compiled.len());
    assert!(compiled.len() >= 10, "{} distinct kernels", compiled.len());
}

/// A recorder modelling another GPU (an A100's attributes) reports that GPU's
/// properties, and its launches compile for it; the H100 default is untouched.
#[test]
fn a_recorder_models_the_device_it_is_given() {
    let a100 = DeviceSpec {
        arch: 80,
        max_shared_memory: 166_912,
        sm_count: 108,
        total_memory: 81_920 << 20,
        ..H100_SXM
    };
    let device = RecordingDevice::modelling(a100);
    assert_eq!(device.spec(), a100);
    let modelled = RecordingRuntime::client(&device);
    let hardware = &modelled.properties().hardware;
    assert_eq!(hardware.num_streaming_multiprocessors, Some(108));
    assert_eq!(hardware.max_shared_memory_size, 166_912);
    assert_eq!(
        client(14).properties().hardware.num_streaming_multiprocessors,
        Some(132)
    );
    let _buffers = record_fft(&modelled, fft_descs().swap_remove(0), 0);
    let records = drain(&modelled);
    assert!(!launches(&records).is_empty());
    for launch in launches(&records) {
        check_against_compiled_for(launch, &a100);
    }
}

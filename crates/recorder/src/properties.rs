//! The device properties and compilation options cubecl-cuda would build for a GPU,
//! ported from `vendor/cubecl-cuda/src/runtime.rs:57-318` with the driver queries
//! replaced by a [`DeviceSpec`]. Codegen reads these properties (the `#[cube]`
//! macro passes them to the kernel builder), so they must match for the recorded
//! kernels to be the ones cubecl-cuda would compile.

use cubecl::{
    ir::{
        features::{AtomicUsage, Plane, Tma, TypeUsage},
        BarrierLevel, DeviceProperties, ElemType, FloatKind, HardwareProperties, MemoryDeviceProperties, OpaqueType,
        SemanticType, StorageType, Type, VectorSize,
    },
    profile::TimingMethod,
};
use cubecl_cpp::{
    cuda::{arch::CudaArchitecture, mma::CudaWmmaCompiler},
    register_supported_types,
    shared::{
        register_mma_features, register_scaled_mma_features, register_wmma_features, CompilationOptions,
        CppSupportedFeatures,
    },
    DialectWmmaCompiler,
};
use cudarc::driver::sys::CUDA_VERSION;

/// cubecl-cuda's `CUDA_MAX_BINDINGS` (vendor/cubecl-cuda/src/device.rs).
const CUDA_MAX_BINDINGS: u32 = 1024;

/// Row alignment cubecl-cuda uses for every device (runtime.rs:87-90).
const MEM_ALIGNMENT: u64 = 512;

/// The driver attributes cubecl-cuda queries at device start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpec {
    /// Compute capability, major * 10 + minor.
    pub arch: u32,
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
    pub warp_size: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`, bytes.
    pub max_shared_memory: usize,
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_{X,Y,Z}`.
    pub max_block_dim: (u32, u32, u32),
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{X,Y,Z}`.
    pub max_grid_dim: (u32, u32, u32),
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    pub sm_count: u32,
    /// `cuDeviceTotalMem`, bytes.
    pub total_memory: u64,
}

/// An H100 SXM5 80 GB (sm_90) as its driver reports it; the total memory is
/// nvidia-smi's 81559 MiB. To be checked against `CudaRuntime` on the GPU.
pub const H100_SXM: DeviceSpec = DeviceSpec {
    arch: 90,
    warp_size: 32,
    max_shared_memory: 232_448,
    max_threads_per_block: 1024,
    max_block_dim: (1024, 1024, 64),
    max_grid_dim: (i32::MAX as u32, 65_535, 65_535),
    sm_count: 132,
    total_memory: 81_559 << 20,
};

impl DeviceSpec {
    /// The spec of `ctx`'s GPU, read from its driver as cubecl-cuda reads it
    /// at device start (vendor/cubecl-cuda/src/runtime.rs, `create_client`).
    pub fn of(ctx: &cudarc::driver::CudaContext) -> Result<Self, cudarc::driver::DriverError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let get = |attribute| ctx.attribute(attribute).map(|v| v as u32);
        let (major, minor) = ctx.compute_capability()?;
        Ok(Self {
            arch: (major * 10 + minor) as u32,
            warp_size: get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_shared_memory: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as usize,
            max_threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: (
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ),
            max_grid_dim: (
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                get(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ),
            sm_count: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory: ctx.total_mem()? as u64,
        })
    }
}

/// Tensor cores per SM, as cubecl-cuda's `tensor_cores_per_sm` (runtime.rs:343-349).
fn tensor_cores_per_sm(version: u32) -> Option<u32> {
    match version {
        70 | 75 => Some(8),
        80 | 86 | 89 | 90 | 91 | 92 | 100 => Some(4),
        _ => None,
    }
}

/// cubecl-cuda's memory properties: a page is a quarter of the device (runtime.rs:107-117).
pub fn memory_properties(spec: &DeviceSpec) -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size: spec.total_memory / 4,
        alignment: MEM_ALIGNMENT,
    }
}

/// The C++ compiler's options cubecl-cuda sets for `spec` (runtime.rs:119-125, 210, 224, 250-251).
pub fn compilation_options(spec: &DeviceSpec) -> CompilationOptions {
    CompilationOptions {
        warp_size: spec.warp_size,
        supports_features: CppSupportedFeatures {
            fast_math: true,
            grid_constants: spec.arch >= 70,
            fast_tanh: spec.arch >= 75 && CUDA_VERSION >= 12080,
            clusters: spec.arch >= 90,
            elect_sync: spec.arch >= 90,
        },
    }
}

/// The device properties cubecl-cuda builds for `spec` (runtime.rs:129-318).
pub fn device_properties(spec: &DeviceSpec) -> DeviceProperties {
    let arch = CudaArchitecture { version: spec.arch };
    let wmma = CudaWmmaCompiler::supported_wmma_combinations(&arch);
    let mut props = DeviceProperties::new(
        Default::default(),
        memory_properties(spec),
        hardware_properties(spec, !wmma.is_empty()),
        TimingMethod::System,
    );
    register_supported_types(&mut props);
    props.register_type_usage(ElemType::Float(FloatKind::TF32), TypeUsage::Conversion);
    register_by_arch(&mut props, spec.arch);
    props.features.memory_reinterpret = true;
    props.features.alignment = true;
    props.features.plane.insert(Plane::Ops);
    props.features.plane.insert(Plane::NonUniformControlFlow);
    register_wmma_features(wmma, &mut props);
    register_mma_features(CudaWmmaCompiler::supported_mma_combinations(&arch), &mut props);
    let scaled = CudaWmmaCompiler::supported_scaled_mma_combinations(&arch);
    register_scaled_mma_features(scaled, &mut props);
    props
}

// runtime.rs:129-179.
fn hardware_properties(spec: &DeviceSpec, has_wmma: bool) -> HardwareProperties {
    HardwareProperties {
        load_width: 128,
        plane_size_min: spec.warp_size,
        plane_size_max: spec.warp_size,
        max_bindings: CUDA_MAX_BINDINGS,
        max_shared_memory_size: spec.max_shared_memory,
        max_cube_count: spec.max_grid_dim,
        max_units_per_cube: spec.max_threads_per_block,
        max_cube_dim: spec.max_block_dim,
        num_streaming_multiprocessors: Some(spec.sm_count),
        num_tensor_cores: tensor_cores_per_sm(spec.arch),
        min_tensor_cores_dim: has_wmma.then_some(8),
        num_cpu_cores: None,
        max_vector_size: VectorSize::MAX,
    }
}

// The per-architecture features of runtime.rs:188-313, in the same order.
fn register_by_arch(props: &mut DeviceProperties, arch: u32) {
    let atomic = |float, width| Type::new(StorageType::Atomic(ElemType::Float(float))).with_vector_size(width);
    let add_store = AtomicUsage::Add | AtomicUsage::LoadStore;
    let half_types: [StorageType; 2] = [FloatKind::F16, FloatKind::BF16].map(|f| ElemType::Float(f).into());
    if arch >= 60 {
        props.register_atomic_type_usage(atomic(FloatKind::F64, 1), add_store);
    }
    if arch >= 70 {
        props.register_atomic_type_usage(atomic(FloatKind::F16, 1), add_store);
        props.register_atomic_type_usage(atomic(FloatKind::F16, 2), add_store);
        props.register_semantic_type(SemanticType::Pipeline);
        props.register_type_usage(OpaqueType::Barrier(BarrierLevel::Unit), TypeUsage::Buffer);
        props.register_type_usage(OpaqueType::Barrier(BarrierLevel::Cube), TypeUsage::Buffer);
        props.features.plane.insert(Plane::Sync);
    }
    if arch >= 75 {
        props.features.matmul.ldmatrix.extend(half_types);
    }
    if arch >= 80 {
        props.features.copy_async = true;
    }
    if arch >= 89 {
        for float in [FloatKind::E4M3, FloatKind::E5M2] {
            let usage = TypeUsage::Conversion | TypeUsage::Buffer;
            props.register_type_usage(ElemType::Float(float), usage);
        }
    }
    if arch >= 90 {
        props.features.tma.insert(Tma::Base);
        props.register_semantic_type(SemanticType::TensorMap);
        props.features.cube_cluster = true;
        props.features.matmul.stmatrix.extend(half_types);
        props.register_atomic_type_usage(atomic(FloatKind::F32, 2), add_store);
        props.register_atomic_type_usage(atomic(FloatKind::F32, 4), add_store);
    }
    if arch >= 100 {
        props.features.tma.insert(Tma::Im2colWide);
    }
    if (100..130).contains(&arch) {
        register_fp4_fp6(props);
    }
}

// runtime.rs:279-306: FP4/FP6/UE8M0 on architectures 10.x to 12.x.
fn register_fp4_fp6(props: &mut DeviceProperties) {
    let buffer = TypeUsage::Conversion | TypeUsage::Buffer;
    props.register_type_usage(ElemType::Float(FloatKind::E2M1), TypeUsage::Conversion);
    props.register_type_usage(StorageType::Packed(ElemType::Float(FloatKind::E2M1), 2), buffer);
    for float in [FloatKind::E2M3, FloatKind::E3M2, FloatKind::UE8M0] {
        props.register_type_usage(ElemType::Float(float), buffer);
    }
    if CUDA_VERSION >= 12080 {
        props.features.tma.insert(Tma::SwizzleAtomicity);
    }
}

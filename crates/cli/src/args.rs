//! Flags shared by several commands: enum values clap lists in `--help` and
//! checks itself, and the dispatch of a job to the chosen Burn backend.

use burn::backend::NdArray;
use clap::{Args, ValueEnum};
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fault::{FaultCounts, FaultTolerance};
use fno_kernels::fft::{Norm, Planning};
use fno_kernels::pools::MemoryMode;
use fno_kernels::precision::Precision;
use fno_models::BlockPrecision;
use fno_ops::fusion::ElementWise;
use fno_ops::{MatmulPrecision, SpectralConvBackend, SpectralImpl};

/// Where to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// CUDA, then a wgpu adapter that is a real GPU, then the CPU.
    Auto,
    Cuda,
    /// Vulkan/Metal/DX12, software adapters (lavapipe) included.
    Wgpu,
    Cpu,
}

impl BackendArg {
    /// The backend this machine offers for the choice, or why it has none.
    pub fn resolve(self) -> Result<Backend, String> {
        match self {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Cuda => BackendChoice::Cuda,
            BackendArg::Wgpu => BackendChoice::Wgpu,
            BackendArg::Cpu => BackendChoice::Cpu,
        }
        .resolve()
    }
}

/// The spectral convolution's implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImplArg {
    /// Burn tensor ops, on any backend.
    Reference,
    /// Truncated FFT, per-mode CGEMM and zero-padded inverse kernels (on
    /// the CPU, the same steps on its threads).
    Unfused,
    /// The first axis as one fused FFT–CGEMM–iFFT kernel (GPU backends; the
    /// CPU runs unfused).
    Fused,
    /// Per layer, the faster of fused and unfused for its shape (GPU backends).
    Auto,
}

impl From<ImplArg> for SpectralImpl {
    fn from(arg: ImplArg) -> Self {
        match arg {
            ImplArg::Reference => SpectralImpl::Reference,
            ImplArg::Unfused => SpectralImpl::Unfused,
            ImplArg::Fused => SpectralImpl::Fused,
            ImplArg::Auto => SpectralImpl::Auto,
        }
    }
}

/// How the 1×1 convolutions multiply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// f32 products and sums.
    F32,
    /// Operands rounded to TF32 on tensor cores where the device has them
    /// (CUDA, Ampere and later), sums in f32; f32 elsewhere.
    Tf32,
}

impl From<PrecisionArg> for MatmulPrecision {
    fn from(arg: PrecisionArg) -> Self {
        match arg {
            PrecisionArg::F32 => MatmulPrecision::F32,
            PrecisionArg::Tf32 => MatmulPrecision::Tf32,
        }
    }
}

/// What the FNO blocks' spectral convolutions hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BlockPrecisionArg {
    /// f32 throughout.
    F32,
    /// Spectra and their contraction in f16, sums in f32 (neuraloperator's "mixed").
    Mixed,
    /// As mixed, with every activation in f16 on the cuda and wgpu backends
    /// (weights, sums and normalisation in f32, dynamic loss scaling); on the
    /// cpu backend the blocks' inputs and outputs rounded to f16
    /// (neuraloperator's "half").
    Half,
}

impl From<BlockPrecisionArg> for BlockPrecision {
    fn from(arg: BlockPrecisionArg) -> Self {
        match arg {
            BlockPrecisionArg::F32 => BlockPrecision::F32,
            BlockPrecisionArg::Mixed => BlockPrecision::Mixed,
            BlockPrecisionArg::Half => BlockPrecision::Half,
        }
    }
}

/// How the kernel path lowers its FFT plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanningArg {
    /// The planner's rules.
    Rules,
    /// Times each plan's candidate lowerings once per shape and keeps the
    /// fastest (same results; seconds of compilation per shape).
    Measured,
}

impl From<PlanningArg> for Planning {
    fn from(arg: PlanningArg) -> Self {
        match arg {
            PlanningArg::Rules => Planning::Rules,
            PlanningArg::Measured => Planning::Measured,
        }
    }
}

/// What an FFT's buffers hold (`fno fft --precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FftPrecisionArg {
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
}

impl From<FftPrecisionArg> for Precision {
    fn from(arg: FftPrecisionArg) -> Self {
        match arg {
            FftPrecisionArg::F32 => Precision::F32,
            FftPrecisionArg::F16 => Precision::F16,
            FftPrecisionArg::Bf16 => Precision::BF16,
        }
    }
}

/// numpy's FFT normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NormArg {
    /// Forward unscaled, inverse scaled by 1/n.
    Backward,
    /// Forward scaled by 1/n, inverse unscaled.
    Forward,
    /// Both scaled by 1/sqrt(n).
    Ortho,
}

impl From<NormArg> for Norm {
    fn from(arg: NormArg) -> Self {
        match arg {
            NormArg::Backward => Norm::Backward,
            NormArg::Forward => Norm::Forward,
            NormArg::Ortho => Norm::Ortho,
        }
    }
}

/// Checksums in the FFT and contraction kernels (docs/abft.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FaultToleranceArg {
    Off,
    /// Count signals and rows whose checksums disagree.
    Detect,
    /// Count them and compute each again.
    Correct,
}

impl From<FaultToleranceArg> for FaultTolerance {
    fn from(arg: FaultToleranceArg) -> Self {
        match arg {
            FaultToleranceArg::Off => FaultTolerance::Off,
            FaultToleranceArg::Detect => FaultTolerance::Detect,
            FaultToleranceArg::Correct => FaultTolerance::Correct,
        }
    }
}

/// Where and how a model runs: `--backend`, `--impl`, `--fft-planning`,
/// `--matmul-precision`, `--precision`.
#[derive(Args, Debug, Clone)]
pub struct ModelDevice {
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Spectral convolution [default: auto on a GPU, unfused on the CPU].
    #[arg(long = "impl", value_enum, value_name = "IMPL")]
    pub imp: Option<ImplArg>,
    /// How the kernel path lowers its FFT plans.
    #[arg(long, value_enum, default_value_t = PlanningArg::Rules)]
    pub fft_planning: PlanningArg,
    /// The 1×1 convolutions' products [default: f32; `fno train`: the
    /// configuration's run.matmul_precision].
    #[arg(long, value_enum)]
    pub matmul_precision: Option<PrecisionArg>,
    /// What the spectral convolutions hold [default: the model's
    /// fno_block_precision; `fno train`: the configuration's run.precision].
    #[arg(long, value_enum)]
    pub precision: Option<BlockPrecisionArg>,
    /// Checksums in the spectral convolutions (unfused kernel path): count
    /// faults, or count them and compute again what they corrupted.
    #[arg(long, value_enum, default_value_t = FaultToleranceArg::Off)]
    pub fault_tolerance: FaultToleranceArg,
    /// On a GPU, Burn's fusion backend, which merges the element-wise ops
    /// around our kernels (`on`; `on-burn-ops` runs GELU, the channel scale
    /// and AdamW there as Burn's ops for it to merge, instead of our
    /// kernels), or Burn's backend without it (`off`, the default: fusion is
    /// not faster on every case, benches/RESULTS.md).
    #[arg(long, value_enum, default_value_t = BurnFusionArg::Off)]
    pub burn_fusion: BurnFusionArg,
    /// How a GPU's memory trades for speed: `fast` (CubeCL's large shared
    /// pages, kept), `balanced` (pages fitted to the tensors, returned
    /// between epochs) or `small` (balanced's pages; training reruns each
    /// block in the backward pass instead of keeping its activations)
    /// [default: balanced; `fno train`: the configuration's run.memory].
    #[arg(long, value_parser = str::parse::<MemoryMode>)]
    pub memory: Option<MemoryMode>,
    /// The CPU's threads, on which the cpu backend's kernels, GEMMs and
    /// element-wise steps run (and the Candle engine's on the CPU)
    /// [default: every core].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// Sizes rayon's pool, on which the CPU paths run, to `threads` (else every core).
pub fn set_threads(threads: Option<usize>) -> Result<(), String> {
    match threads {
        None => Ok(()),
        Some(0) => Err("--threads must be positive".into()),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| format!("--threads {n}: {e}")),
    }
}

/// `backend` as the first lines name it: the CPU with its thread count.
pub fn backend_label(backend: Backend) -> String {
    match backend {
        Backend::Cpu => format!("{backend}, {}", threads_label()),
        _ => backend.to_string(),
    }
}

/// How many threads rayon's pool has, as "N threads".
pub fn threads_label() -> String {
    match rayon::current_num_threads() {
        1 => "1 thread".into(),
        n => format!("{n} threads"),
    }
}

/// Whether Burn fuses element-wise ops on a GPU, and who runs GELU, the
/// channel scale and AdamW there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BurnFusionArg {
    On,
    OnBurnOps,
    Off,
}

impl ModelDevice {
    /// Resolves the backend, sets the FFT planning, and picks the
    /// implementation (auto on a GPU, unfused on the CPU, unless asked).
    pub fn resolve(&self) -> Result<(Backend, SpectralImpl), String> {
        let backend = self.backend.resolve()?;
        set_threads(self.threads)?;
        fno_ops::set_fft_planning(self.fft_planning.into());
        let imp = match self.imp {
            Some(imp) => imp.into(),
            None if backend == Backend::Cpu => SpectralImpl::Unfused,
            None => SpectralImpl::Auto,
        };
        // Auto runs checked layers unfused.
        let checkable = matches!(imp, SpectralImpl::Unfused | SpectralImpl::Auto) && backend != Backend::Cpu;
        if self.fault_tolerance != FaultToleranceArg::Off && !checkable {
            return Err(format!(
                "--fault-tolerance runs on the unfused kernel path (a GPU or wgpu backend with --impl unfused), not {}",
                match (backend, imp) {
                    (Backend::Cpu, _) => "on the CPU",
                    (_, SpectralImpl::Reference) => "the reference path",
                    _ => "the fused kernel",
                }
            ));
        }
        Ok((backend, imp))
    }
}

/// How a model runs beyond its parameters: its 1×1 products' precision,
/// where given its spectral convolutions' (else the model's own), and their
/// fault tolerance.
#[derive(Clone, Copy, Debug)]
pub struct ModelSettings {
    pub matmul: MatmulPrecision,
    pub block: Option<BlockPrecision>,
    pub fault_tolerance: FaultTolerance,
}

impl ModelDevice {
    /// The settings asked for on the command line.
    pub fn settings(&self) -> ModelSettings {
        ModelSettings {
            matmul: self.matmul_precision.map(Into::into).unwrap_or_default(),
            block: self.precision.map(Into::into),
            fault_tolerance: self.fault_tolerance.into(),
        }
    }
}

/// `model` with `settings`, saying so where TF32 is asked for and the device
/// has none.
pub fn with_settings<B: SpectralConvBackend>(
    model: fno_models::Fno<B>,
    settings: ModelSettings,
    device: &B::Device,
) -> fno_models::Fno<B> {
    if let Some(why) = settings.matmul.unavailable_on::<B>(device) {
        eprintln!("{why}");
    }
    let model = model
        .with_matmul_precision(settings.matmul)
        .with_fault_tolerance(settings.fault_tolerance);
    match settings.block {
        Some(block) => model.with_block_precision(block),
        None => model,
    }
}

/// What the spectral convolution's checks count: FFT signals and
/// contraction rows (a batch element at one mode).
pub const SPECTRAL_UNITS: &str = "transform signal(s) or contraction row(s)";

/// Reports what checked kernels counted (`what` names the checked unit);
/// under `Correct`, an error where a fault stayed uncorrected.
pub fn report_faults(tolerance: FaultTolerance, counts: FaultCounts, what: &str) -> Result<(), String> {
    if tolerance == FaultTolerance::Off {
        return Ok(());
    }
    eprintln!(
        "fault tolerance ({tolerance:?}): {} detected, {} corrected",
        counts.detected, counts.corrected
    );
    if tolerance == FaultTolerance::Correct && counts.corrected < counts.detected {
        return Err(format!(
            "{} faulty {what} stayed faulty after their repair",
            counts.detected - counts.corrected
        ));
    }
    Ok(())
}

/// A job written once for any backend with the spectral convolution.
pub trait BackendJob {
    type Output;
    fn run<B: SpectralConvBackend>(self, device: &B::Device) -> Result<Self::Output, String>;
}

/// Runs `job` on `backend`'s default device: on a GPU on Burn's backend
/// without Burn fusion (`Off`), or on its fusion backend (`On`, `OnBurnOps`),
/// its memory pools set first where given (a job that only asks about
/// devices leaves them to the one that runs).
pub fn run_on<J: BackendJob>(
    backend: Backend,
    fusion: BurnFusionArg,
    pools: Option<Pools>,
    job: J,
) -> Result<J::Output, String> {
    if let Some(pools) = pools {
        install_pools(backend, pools);
    }
    let fused = fusion != BurnFusionArg::Off;
    fno_ops::fusion::set_element_wise(match fusion {
        BurnFusionArg::OnBurnOps => ElementWise::BurnFusion,
        _ => ElementWise::Kernels,
    });
    match backend {
        Backend::Cpu => job.run::<NdArray>(&Default::default()),
        #[cfg(feature = "cuda")]
        Backend::Cuda if fused => job.run::<burn::backend::Cuda>(&Default::default()),
        #[cfg(feature = "cuda")]
        Backend::Cuda => job.run::<fno_ops::Cuda>(&Default::default()),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu if fused => job.run::<burn::backend::Wgpu>(&Default::default()),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => job.run::<fno_ops::Wgpu>(&Default::default()),
        #[allow(unreachable_patterns)]
        other => Err(format!("this build has no {other} backend")),
    }
}

/// The memory pools a command asks for: a mode, and where the command knows
/// it, the bytes of its widest activation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pools {
    pub mode: MemoryMode,
    pub widest: Option<u64>,
}

/// The pools of a mode, sized without knowing the activations.
impl From<Option<MemoryMode>> for Pools {
    fn from(mode: Option<MemoryMode>) -> Self {
        Pools {
            mode: mode.unwrap_or_default(),
            widest: None,
        }
    }
}

/// The GPU backend's pools, before its devices' first use.
fn install_pools(backend: Backend, pools: Pools) {
    let Pools { mode, widest } = pools;
    match backend {
        #[cfg(feature = "cuda")]
        Backend::Cuda => fno_kernels::pools::install_cuda(mode, widest),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => fno_kernels::pools::init_wgpu(mode, widest),
        _ => {}
    }
}

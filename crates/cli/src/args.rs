//! Flags shared by several commands: enum values clap lists in `--help` and
//! checks itself, and the dispatch of a job to the chosen Burn backend.

use burn::backend::NdArray;
use clap::{Args, ValueEnum};
use fno_kernels::backend::{Backend, BackendChoice};
use fno_kernels::fault::{FaultCounts, FaultTolerance};
use fno_kernels::fft::Planning;
use fno_kernels::pools::MemoryMode;
use fno_models::{BlockPrecision, ModelSettings};
use fno_ops::fusion::ElementWise;
use fno_ops::{MatmulPrecision, SpectralConvBackend, SpectralImpl};

/// Where and how a model runs: `--backend`, `--impl`, `--fft-planning`,
/// `--matmul-precision`, `--precision`.
#[derive(Args, Debug, Clone)]
pub struct ModelDevice {
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Spectral convolution [default: auto on a GPU, unfused on the CPU].
    #[arg(long = "impl", value_enum, value_name = "IMPL")]
    pub imp: Option<SpectralImpl>,
    /// How the kernel path lowers its FFT plans.
    #[arg(long, value_enum, default_value_t = Planning::Rules)]
    pub fft_planning: Planning,
    /// The 1×1 convolutions' products [default: f32; `fno train`: the
    /// configuration's run.matmul_precision].
    #[arg(long, value_enum)]
    pub matmul_precision: Option<MatmulPrecision>,
    /// What the spectral convolutions hold [default: the model's
    /// fno_block_precision].
    #[arg(long, value_enum)]
    pub precision: Option<BlockPrecision>,
    /// Checksums in the spectral convolutions (unfused kernel path): count
    /// faults, or count them and compute again what they corrupted.
    #[arg(long, value_enum, default_value_t = FaultTolerance::Off)]
    pub fault_tolerance: FaultTolerance,
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
    /// Resolves the backend and picks the
    /// implementation (auto on a GPU, unfused on the CPU, unless asked).
    pub fn resolve(&self) -> Result<(Backend, SpectralImpl), String> {
        let backend = self.backend.resolve()?;
        set_threads(self.threads)?;
        let imp = match self.imp {
            Some(imp) => imp,
            None if backend == Backend::Cpu => SpectralImpl::Unfused,
            None => SpectralImpl::Auto,
        };
        if backend == Backend::Cpu && self.fault_tolerance != FaultTolerance::Off {
            return Err(
                "--fault-tolerance runs on the unfused kernel path of a GPU or wgpu backend, not on the CPU".into(),
            );
        }
        imp.check_fault_tolerance(self.fault_tolerance)
            .map_err(|e| format!("--fault-tolerance: {e}"))?;
        Ok((backend, imp))
    }
}

impl ModelDevice {
    /// The settings asked for on the command line.
    pub fn settings(&self) -> ModelSettings {
        ModelSettings {
            matmul: self.matmul_precision.unwrap_or_default(),
            block: self.precision,
            fault_tolerance: self.fault_tolerance,
            fft_planning: self.fft_planning,
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
    model.with_settings(settings)
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

//! What a spectral convolution computes, independent of how.

use fno_kernels::cgemm::ModeBias;
use fno_kernels::fault::FaultTolerance;
use fno_kernels::fft::{ModeOrder, Norm, Planning, Window};
use fno_kernels::precision::Precision;

/// Where neuraloperator takes the modes of the non-last dims from the input's
/// spectrum (fftshift order); [`InverseShift`] says where it puts them back.
/// Adjoints swap the two orders.
pub const FORWARD_ORDER: ModeOrder = ModeOrder::Shifted;

/// How neuraloperator shifts the contracted spectrum back over the non-last
/// dims before its inverse transform. The two differ only on odd sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum InverseShift {
    /// neuraloperator 2.0.0: a second `fftshift`, which on an odd-sized dim
    /// puts every mode one index lower.
    #[default]
    Fftshift,
    /// neuraloperator's main branch since PR #688 (2025-11): `ifftshift`,
    /// every mode at its frequency.
    Ifftshift,
}

impl InverseShift {
    /// Where the inverse transform reads the retained modes of a non-last dim.
    pub fn order(self) -> ModeOrder {
        match self {
            InverseShift::Fftshift => ModeOrder::ShiftedOddLower,
            InverseShift::Ifftshift => ModeOrder::Shifted,
        }
    }
}

/// Which implementation runs the spectral convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SpectralImpl {
    /// Burn tensor ops only (truncated DFTs as matmuls): any backend, any size,
    /// autodiff from Burn.
    #[default]
    Reference,
    /// Truncated R2C → per-mode CGEMM → zero-padded C2R kernels (CubeCL
    /// backends; on the CPU backends the same steps on the CPU's threads).
    Unfused,
    /// The fused FFT→CGEMM→iFFT kernel along the first spatial axis (the whole
    /// convolution in 1D), truncated R2C / zero-padded C2R of the later axes
    /// around it (CubeCL backends; the CPU backends run Unfused's steps).
    Fused,
    /// Per layer, the faster kernel path for its shape (the rule of
    /// `SpectralImpl::resolve`).
    Auto,
}

/// The most channels (in and out) at which `Auto` runs a 1D layer fused.
const AUTO_FUSED_CHANNELS: usize = 64;

impl SpectralImpl {
    /// Ok for the kernel paths a backend op runs; Reference and Auto never reach one.
    pub fn check_kernel_path(self) -> Result<(), SpectralError> {
        match self {
            SpectralImpl::Unfused | SpectralImpl::Fused => Ok(()),
            SpectralImpl::Reference => Err(SpectralError::Invalid(
                "the reference path runs through Burn tensor ops, not the backend op".into(),
            )),
            SpectralImpl::Auto => Err(SpectralError::Invalid(
                "Auto is resolved to a kernel path before the backend op (SpectralImpl::resolve)".into(),
            )),
        }
    }

    /// Whether `tolerance` runs on this implementation: checksums are the
    /// unfused kernel path's (`Auto` runs checked layers unfused); the
    /// reference path and the fused kernel have none.
    pub fn check_fault_tolerance(self, tolerance: FaultTolerance) -> Result<(), SpectralError> {
        let path = match self {
            _ if tolerance == FaultTolerance::Off => return Ok(()),
            SpectralImpl::Unfused | SpectralImpl::Auto => return Ok(()),
            SpectralImpl::Reference => "the reference path",
            SpectralImpl::Fused => "the fused kernel",
        };
        Err(SpectralError::Unsupported(format!(
            "fault tolerance runs on the unfused kernel path, not {path}"
        )))
    }

    /// The kernel path `Auto` runs for a layer of `shapes` under `spec`, by a
    /// rule fitted to the benchmarks (benches/RESULTS.md, "Fused kernel"):
    /// the fused kernel in 1D with at most 64 channels in and out, where it
    /// beats the unfused path, the unfused path elsewhere and wherever the
    /// fused kernel does not run (checksums, half precision: `f32_operands`
    /// says whether x and the weight are f32). Other implementations are
    /// themselves.
    pub fn resolve(self, shapes: &SpectralShapes, spec: &SpectralConvSpec, f32_operands: bool) -> SpectralImpl {
        if self != SpectralImpl::Auto {
            return self;
        }
        let fusable =
            f32_operands && spec.fault_tolerance == FaultTolerance::Off && spec.spectrum_precision == Precision::F32;
        let small = shapes.in_channels.max(shapes.out_channels) <= AUTO_FUSED_CHANNELS;
        if fusable && small && shapes.spatial_dims() == 1 {
            SpectralImpl::Fused
        } else {
            SpectralImpl::Unfused
        }
    }
}

impl std::str::FromStr for SpectralImpl {
    type Err = SpectralError;
    fn from_str(s: &str) -> Result<Self, SpectralError> {
        match s {
            "reference" => Ok(SpectralImpl::Reference),
            "unfused" => Ok(SpectralImpl::Unfused),
            "fused" => Ok(SpectralImpl::Fused),
            "auto" => Ok(SpectralImpl::Auto),
            other => Err(SpectralError::Invalid(format!(
                "unknown implementation '{other}' (expected reference, unfused, fused or auto)"
            ))),
        }
    }
}

/// How the complex weights are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum WeightLayout {
    /// neuraloperator: one `[Cin, Cout]` complex matrix per retained mode,
    /// weight shape `[Cin, Cout, m_1, …, m_{d-1}, m_d, 2]`.
    #[default]
    PerMode,
    /// TurboFNO: one `[Cin, Cout]` complex matrix for every mode, shape `[Cin, Cout, 2]`.
    Shared,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpectralError {
    #[error("invalid spectral convolution: {0}")]
    Invalid(String),
    #[error("unsupported spectral convolution: {0}")]
    Unsupported(String),
}

/// The semantics of neuraloperator 2.0.0's `SpectralConv` (real data, dense
/// weights): rfftn over the spatial dims; on every spatial dim but the last the
/// centred window of `m` frequencies `-m/2 … m - m/2 - 1`, in that (fftshift)
/// order, which is how the weights are stored; on the last dim the first `m`
/// bins; a complex contraction over input channels per mode; the modes placed
/// in a spectrum of the input's size and `irfftn(s = output)` (numpy's crop or
/// zero-pad at the end). Where the grid holds fewer modes than the weight, the
/// weight is cropped as neuraloperator does (`[start/2 : -start/2]`, the last
/// dim `[:kept]`). The inverse shift is 2.0.0's by default ([`InverseShift`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpectralConvSpec {
    /// Retained modes per spatial dim as stored: centred-window sizes, and for
    /// the last dim the number of bins (`n_modes[-1] // 2 + 1` in neuraloperator).
    pub modes: Vec<usize>,
    /// Output spatial size; `None` keeps the input size.
    pub output_size: Option<Vec<usize>>,
    /// neuraloperator's `fft_norm` (its default is `forward`).
    pub norm: Norm,
    pub weights: WeightLayout,
    /// What the retained spectra hold (the input's, the contracted one and,
    /// in the backward, the output gradient's); transforms and contractions
    /// compute in f32 whatever they hold. F16: neuraloperator's
    /// `fno_block_precision = "mixed"` (docs/half_precision.md).
    pub spectrum_precision: Precision,
    /// Checksums on the unfused kernel path (docs/abft.md): every FFT stage
    /// and every contraction checks its result, counting faults in the
    /// device's record (fno-ops' `SpectralConvBackend::fault_counts`) and,
    /// under `Correct`, computing faulty signals and rows again.
    pub fault_tolerance: FaultTolerance,
    pub inverse_shift: InverseShift,
    /// How the kernel path lowers its FFT plans: by the planner's rules, or
    /// [`Planning::Measured`], timing each plan's candidate lowerings on the
    /// device the first time a shape runs (seconds of compilation per shape on
    /// CUDA, the fastest lowering after). Both compute the same transform.
    pub fft_planning: Planning,
}

impl SpectralConvSpec {
    pub fn new(modes: &[usize]) -> Self {
        SpectralConvSpec {
            modes: modes.to_vec(),
            output_size: None,
            norm: Norm::Forward,
            weights: WeightLayout::PerMode,
            spectrum_precision: Precision::F32,
            fault_tolerance: FaultTolerance::Off,
            inverse_shift: InverseShift::Fftshift,
            fft_planning: Planning::Rules,
        }
    }

    pub fn fft_planning(mut self, planning: Planning) -> Self {
        self.fft_planning = planning;
        self
    }

    pub fn inverse_shift(mut self, shift: InverseShift) -> Self {
        self.inverse_shift = shift;
        self
    }

    /// Where the inverse transform reads the retained modes of non-last dims.
    pub fn inverse_order(&self) -> ModeOrder {
        self.inverse_shift.order()
    }

    pub fn fault_tolerance(mut self, tolerance: FaultTolerance) -> Self {
        self.fault_tolerance = tolerance;
        self
    }

    pub fn spectrum_precision(mut self, precision: Precision) -> Self {
        self.spectrum_precision = precision;
        self
    }

    pub fn output_size(mut self, size: &[usize]) -> Self {
        self.output_size = Some(size.to_vec());
        self
    }

    pub fn norm(mut self, norm: Norm) -> Self {
        self.norm = norm;
        self
    }

    pub fn shared_weights(mut self) -> Self {
        self.weights = WeightLayout::Shared;
        self
    }
}

/// Shapes of one call, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpectralShapes {
    pub batch: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub input: Vec<usize>,
    pub output: Vec<usize>,
    /// Modes used on this grid per spatial dim (the weight's, or fewer where
    /// the grid holds fewer).
    pub modes: Vec<usize>,
    /// Where the used modes start in the weight's mode dims.
    pub weight_offsets: Vec<usize>,
    /// Where the inverse transform reads the modes of non-last dims.
    pub inverse_order: ModeOrder,
}

impl SpectralShapes {
    pub fn spatial_dims(&self) -> usize {
        self.input.len()
    }

    /// Number of retained modes (product over spatial dims).
    pub fn mode_count(&self) -> usize {
        self.modes.iter().product()
    }

    /// Which sequence indices (frequencies, or bins for the last dim) the
    /// retained modes of spatial dim `d` hold, in the weight's order.
    pub fn window(&self, d: usize) -> Window {
        if d + 1 == self.spatial_dims() {
            Window::Prefix(self.modes[d])
        } else {
            FORWARD_ORDER.window(self.modes[d], self.input[d])
        }
    }

    /// Index of retained mode `j` of non-last dim `d` in the spectrum of the
    /// input's size that the inverse transform starts from: its frequency, or
    /// one lower on odd sizes under 2.0.0's shift.
    pub fn placement(&self, d: usize, j: usize) -> usize {
        let n = self.input[d];
        self.inverse_order.window(self.modes[d], n).index(j, n)
    }

    /// True when the weight has more modes than this grid holds.
    pub fn crops_weight(&self, weight_modes: &[usize]) -> bool {
        self.modes[..] != weight_modes[..]
    }

    /// What the kernel paths (GPU and CPU) refuse of these shapes: a weight
    /// not cropped to the grid's modes (`weight_modes`), and what
    /// [`Self::check_resizes_last_dim_only`] refuses.
    pub fn check_kernel_layout(&self, weight_modes: &[usize]) -> Result<(), SpectralError> {
        if self.crops_weight(weight_modes) {
            return Err(SpectralError::Invalid(
                "the kernel path expects the weight cropped to the grid's modes".into(),
            ));
        }
        self.check_resizes_last_dim_only()
    }

    /// What every kernel path, factorized chains too, refuses: neuraloperator's
    /// crop/pad of a non-last dim's centred spectrum.
    pub fn check_resizes_last_dim_only(&self) -> Result<(), SpectralError> {
        let dims = self.spatial_dims();
        if self.output[..dims - 1] != self.input[..dims - 1] {
            return Err(SpectralError::Unsupported(
                "changing the size of a non-last spatial dim on the kernel path (neuraloperator's crop/pad of \
                 the centred spectrum); use Reference"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Where the bias goes in the contracted spectrum `[B, Cout, *modes]`: the
    /// flat mode the inverse places at frequency 0 on every axis, and the factor
    /// that undoes the inverse's scale there. `None` where the inverse's modes miss
    /// frequency 0 (neuraloperator's placement one index lower on an odd axis
    /// keeping at most two modes). The output gradient's spectrum, taken with the
    /// adjoint norm in the inverse's order, holds the gradient's sum over the grid
    /// at the same mode divided by the same factor.
    pub fn dc_bias(&self, norm: Norm) -> Option<ModeBias> {
        let dims = self.spatial_dims();
        let (mut mode, mut inverse_scale) = (0, 1.0);
        for d in 0..dims {
            let n = self.input[d];
            let position = if d + 1 == dims {
                0
            } else {
                self.inverse_order.window(self.modes[d], n).position(0, n)?
            };
            mode = mode * self.modes[d] + position;
            inverse_scale *= norm_scales(norm, n, self.output[d]).1;
        }
        Some(ModeBias {
            mode,
            factor: (1.0 / inverse_scale) as f32,
        })
    }
}

impl SpectralConvSpec {
    /// Checks `x: [B, Cin, *spatial]` and the weight shape (trailing 2 included)
    /// against the spec.
    pub fn shapes(&self, x: &[usize], weight: &[usize]) -> Result<SpectralShapes, SpectralError> {
        let invalid = |m: String| Err(SpectralError::Invalid(m));
        if x.len() < 3 || x.len() > 5 {
            return invalid(format!(
                "input must be [B, C, *spatial] with 1 to 3 spatial dims, got {x:?}"
            ));
        }
        let input = x[2..].to_vec();
        let dims = input.len();
        if self.modes.len() != dims {
            return invalid(format!("{} modes given for {dims} spatial dims", self.modes.len()));
        }
        let output = self.output_size.clone().unwrap_or_else(|| input.clone());
        if output.len() != dims || output.contains(&0) {
            return invalid(format!("output size {output:?} does not fit {dims} spatial dims"));
        }
        if input.contains(&0) || x[0] == 0 || x[1] == 0 {
            return invalid(format!("input shape {x:?} has an empty dimension"));
        }
        if self.modes.contains(&0) {
            return invalid(format!("modes {:?} must be positive", self.modes));
        }
        // The grid may hold fewer modes than the weight: neuraloperator crops it.
        let mut modes = Vec::with_capacity(dims);
        let mut weight_offsets = Vec::with_capacity(dims);
        for (d, (&m, &n)) in self.modes.iter().zip(&input).enumerate() {
            let last = d + 1 == dims;
            let kept = m.min(if last { n / 2 + 1 } else { n });
            modes.push(kept);
            weight_offsets.push(if last { 0 } else { (m - kept) / 2 });
        }
        let (in_channels, out_channels) = match self.weights {
            WeightLayout::PerMode => {
                let want_rank = dims + 3;
                if weight.len() != want_rank || weight[2..2 + dims] != self.modes[..] || weight[want_rank - 1] != 2 {
                    return invalid(format!(
                        "per-mode weight must be [Cin, Cout, {}, 2], got {weight:?}",
                        self.modes.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
                    ));
                }
                (weight[0], weight[1])
            }
            WeightLayout::Shared => {
                if weight.len() != 3 || weight[2] != 2 {
                    return invalid(format!("shared weight must be [Cin, Cout, 2], got {weight:?}"));
                }
                (weight[0], weight[1])
            }
        };
        if in_channels != x[1] {
            return invalid(format!("input has {} channels, the weight expects {in_channels}", x[1]));
        }
        Ok(SpectralShapes {
            batch: x[0],
            in_channels,
            out_channels,
            input,
            output,
            modes,
            weight_offsets,
            inverse_order: self.inverse_order(),
        })
    }
}

/// Per-dim scale of the forward and of the inverse transform for a norm.
pub fn norm_scales(norm: Norm, n_in: usize, n_out: usize) -> (f64, f64) {
    match norm {
        Norm::Forward => (1.0 / n_in as f64, 1.0),
        Norm::Backward => (1.0, 1.0 / n_out as f64),
        Norm::Ortho => (1.0 / (n_in as f64).sqrt(), 1.0 / (n_out as f64).sqrt()),
    }
}

/// The forward's complement: the norm whose forward scale is `norm`'s inverse
/// scale and whose inverse scale is `norm`'s forward scale (for adjoints).
pub fn adjoint_norm(norm: Norm) -> Norm {
    match norm {
        Norm::Forward => Norm::Backward,
        Norm::Backward => Norm::Forward,
        Norm::Ortho => Norm::Ortho,
    }
}

impl SpectralConvSpec {
    /// The adjoints' weights of the last-axis bins on a grid `grid`
    /// ([`hermitian_weights`] of this spec's last modes).
    pub fn bin_weights(&self, grid: &[usize]) -> Vec<f32> {
        hermitian_weights(self.modes[grid.len() - 1], grid[grid.len() - 1])
    }
}

/// irfft weights of `bins` bins of a real axis of length `n`: 1 for DC and
/// Nyquist, 2 between (a real inverse counts the others twice); the adjoints
/// of the truncated transforms weigh the last axis's bins by them.
pub fn hermitian_weights(bins: usize, n: usize) -> Vec<f32> {
    (0..bins)
        .map(|k| if k == 0 || 2 * k == n { 1.0 } else { 2.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Auto` picks the fused kernel only for small 1D layers it can run.
    #[test]
    fn auto_resolves_by_dims_channels_and_what_the_fused_kernel_runs() {
        let layer = |x: &[usize], w: &[usize], spec: &SpectralConvSpec| spec.shapes(x, w).unwrap();
        let spec_1d = SpectralConvSpec::new(&[16]);
        let small_1d = layer(&[8, 64, 128], &[64, 64, 16, 2], &spec_1d);
        let wide_1d = layer(&[8, 128, 128], &[128, 64, 16, 2], &spec_1d);
        let spec_2d = SpectralConvSpec::new(&[8, 5]);
        let small_2d = layer(&[8, 16, 32, 32], &[16, 16, 8, 5, 2], &spec_2d);
        let auto =
            |shapes: &SpectralShapes, spec: &SpectralConvSpec, f32s| SpectralImpl::Auto.resolve(shapes, spec, f32s);
        assert_eq!(auto(&small_1d, &spec_1d, true), SpectralImpl::Fused);
        assert_eq!(auto(&wide_1d, &spec_1d, true), SpectralImpl::Unfused);
        assert_eq!(auto(&small_2d, &spec_2d, true), SpectralImpl::Unfused);
        assert_eq!(auto(&small_1d, &spec_1d, false), SpectralImpl::Unfused);
        let checked = spec_1d.clone().fault_tolerance(FaultTolerance::Detect);
        assert_eq!(auto(&small_1d, &checked, true), SpectralImpl::Unfused);
        let half = spec_1d.clone().spectrum_precision(Precision::F16);
        assert_eq!(auto(&small_1d, &half, true), SpectralImpl::Unfused);
        for imp in [SpectralImpl::Reference, SpectralImpl::Unfused, SpectralImpl::Fused] {
            assert_eq!(imp.resolve(&small_1d, &spec_1d, true), imp);
        }
        assert_eq!("auto".parse::<SpectralImpl>().unwrap(), SpectralImpl::Auto);
    }
}

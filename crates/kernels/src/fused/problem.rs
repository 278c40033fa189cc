//! One fused spectral convolution along one axis: the two transforms, the
//! tensors' strides and the weight's, checked when built.

use super::config::FusedConfig;
use crate::cgemm::{ModeBias, Strides};
use crate::fft::stage::StageConfig;
use crate::fft::{shared_stage, AxisStep, FftError, FftPlan};
use crate::limits::DeviceLimits;

/// Where the pencils of one tensor lie, in floats: signal `(b, c, e)` starts at
/// `b·batch + c·channel + e·inner`, and its entries along the axis are `axis`
/// floats apart (complex entries keep (re, im) adjacent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PencilStrides {
    pub batch: usize,
    pub channel: usize,
    pub axis: usize,
    pub inner: usize,
}

impl PencilStrides {
    /// A dense `[batch, channels, len, inner]` tensor of `parts`-float entries.
    pub fn dense(channels: usize, len: usize, inner: usize, parts: usize) -> Self {
        PencilStrides {
            batch: channels * len * inner * parts,
            channel: len * inner * parts,
            axis: inner * parts,
            inner: parts,
        }
    }

    /// The strides in entries of `parts` floats (what the stages address by).
    pub(super) fn in_entries(self, parts: usize) -> [usize; 4] {
        [
            self.batch / parts,
            self.channel / parts,
            self.axis / parts,
            self.inner / parts,
        ]
    }
}

/// One fused spectral convolution along one axis.
#[derive(Clone, Debug)]
pub struct FusedSpectralConv {
    pub batch: usize,
    /// Channels contracted (input channels; output channels for the input gradient).
    pub cin: usize,
    pub cout: usize,
    /// Positions after the axis (product of the later retained modes).
    pub inner: usize,
    pub x: PencilStrides,
    pub y: PencilStrides,
    /// Weight strides in complex elements: row walks `cin`, column `cout`, mode
    /// the flat index `k·inner + e` (0 for one weight shared by all modes).
    pub weight: Strides,
    pub conj_weight: bool,
    /// Output mode `k·inner + e` scaled by `mode_scale[(k·inner + e) % len]`.
    pub mode_scale: Vec<f32>,
    /// A bias per output channel added to the accumulated mode `k·inner + e`
    /// (after the scale) before the inverse.
    pub bias: Option<ModeBias>,
    pub(super) steps: (AxisStep, AxisStep),
    /// The two transforms as stages on tiles in shared memory, one signal per tile.
    pub(super) stages: (StageConfig, StageConfig),
}

/// The single axis step of a plan over `[batch, channels, len, inner…]`, and its batch, channels and inner size.
fn single_step(plan: &FftPlan, what: &str) -> Result<(AxisStep, usize, usize, usize), FftError> {
    let shape = plan.input_shape();
    match plan.steps() {
        [step] if step.axis == 2 => Ok((*step, shape[0], shape[1], shape[3..].iter().product())),
        _ => Err(FftError::Invalid(format!(
            "the fused kernel's {what} transform must run along axis 2 of [batch, channels, len, …], got {:?}",
            plan.desc()
        ))),
    }
}

/// Floats per entry of a stage's input and output arrays.
pub(super) fn entry_floats(cfg: &StageConfig) -> (usize, usize) {
    let floats = |real: bool| if real { 1 } else { 2 };
    (floats(cfg.input.is_real()), floats(cfg.output.is_real()))
}

impl FusedSpectralConv {
    /// The fused pattern of two one-axis plans: `forward` over `[batch, cin,
    /// n_in, inner…]` keeping `M` modes of axis 2 (R2C or C2C), `inverse` over
    /// `[batch, cout, M, inner…]` (C2C or C2R). Tensors are dense unless the
    /// strides are changed; the weight's strides are given.
    pub fn new(forward: &FftPlan, inverse: &FftPlan, weight: Strides) -> Result<Self, FftError> {
        let (fwd, batch, cin, inner) = single_step(forward, "forward")?;
        let (inv, inv_batch, cout, inv_inner) = single_step(inverse, "inverse")?;
        let stages = (shared_stage(&fwd), shared_stage(&inv));
        if entry_floats(&stages.0).1 != 2 || entry_floats(&stages.1).0 != 2 {
            return Err(FftError::Invalid(
                "the fused kernel contracts complex spectra: forward R2C/C2C, inverse C2C/C2R".into(),
            ));
        }
        if (inv_batch, inv_inner, inv.in_len) != (batch, inner, fwd.out_len) {
            return Err(FftError::Invalid(format!(
                "the inverse transform of {inverse_shape:?} does not take the forward's {} modes of [{batch}, ·, ·, {inner}]",
                fwd.out_len,
                inverse_shape = inverse.input_shape()
            )));
        }
        let (forward_parts, inverse_parts) = (entry_floats(&stages.0).0, entry_floats(&stages.1).1);
        let problem = FusedSpectralConv {
            batch,
            cin,
            cout,
            inner,
            x: PencilStrides::dense(cin, fwd.in_len, inner, forward_parts),
            y: PencilStrides::dense(cout, inv.out_len, inner, inverse_parts),
            weight,
            conj_weight: false,
            mode_scale: Vec::new(),
            bias: None,
            steps: (fwd, inv),
            stages,
        };
        // The smallest tiles must fit: a cube of both stages' threads, one
        // batch and one output channel.
        let smallest = FusedConfig {
            batch_tile: 1,
            out_tile: 1,
            ..problem.config(false, &DeviceLimits::PORTABLE)
        };
        if !smallest.fits(&DeviceLimits::PORTABLE) {
            return Err(FftError::Unsupported(format!(
                "fused transforms of lengths {} and {} need {} threads and {} bytes of shared memory per cube (at most {}, {})",
                fwd.n,
                inv.n,
                smallest.threads(),
                smallest.shared_bytes(),
                DeviceLimits::PORTABLE.cube_threads,
                DeviceLimits::PORTABLE.shared_memory
            )));
        }
        Ok(problem)
    }

    /// Retained modes along the axis.
    pub fn modes(&self) -> usize {
        self.steps.0.out_len
    }

    pub(super) fn is_scaled(&self) -> bool {
        self.mode_scale.iter().any(|&s| s != 1.0)
    }

    /// Floats of every buffer: (x, weight, y, spectrum).
    pub fn extents(&self) -> (usize, usize, usize, usize) {
        let pencil = |s: PencilStrides, channels: usize, len: usize, parts: usize| {
            (self.batch - 1) * s.batch
                + (channels - 1) * s.channel
                + (self.inner - 1) * s.inner
                + (len - 1) * s.axis
                + parts
        };
        let (fwd, inv) = self.steps;
        let x = pencil(self.x, self.cin, fwd.in_len, entry_floats(&self.stages.0).0);
        let y = pencil(self.y, self.cout, inv.out_len, entry_floats(&self.stages.1).1);
        let w = &self.weight;
        let modes = self.modes() * self.inner;
        let weight = 2 * ((self.cin - 1) * w.row + (self.cout - 1) * w.col + (modes - 1) * w.mode + 1);
        (x, weight, y, 2 * self.batch * self.cin * modes)
    }
}

//! The spectral convolution's two transforms as Candle custom ops: the
//! retained spectrum `[B, C, K, 2]` of a real grid `[B, C, *grid]` (the K
//! modes flattened in the weight's order) and its zero-padded inverse. Each
//! op's backward is the other's adjoint, so Candle's autograd runs through
//! them. These are the passes of `fno_ops::spectrum` on Burn, with the same
//! mode orders and norms. On the CPU they run the shared FFT plan through
//! [`FftPlan::execute_cpu`], in the tensor's own float type (f32 or f64).

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, ModeOrder, Norm};
use fno_ops::spec::{adjoint_norm, hermitian_weights, FORWARD_ORDER, INVERSE_ORDER};
use rustfft::num_traits::Float;
use rustfft::FftNum;

/// Which way a transform runs: as the convolution applies it, or as the
/// adjoint of the other transform (the backward).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Adjoint,
}

impl Pass {
    fn flip(self) -> Pass {
        match self {
            Pass::Forward => Pass::Adjoint,
            Pass::Adjoint => Pass::Forward,
        }
    }
}

/// `x: [B, C, *grid]` → its retained spectrum `[B, C, K, 2]`.
#[derive(Clone, Debug)]
pub struct RetainedSpectrum {
    /// Retained modes per spatial dim, at most the grid's (the last dim's bins).
    pub modes: Vec<usize>,
    pub norm: Norm,
    pub pass: Pass,
}

/// `s: [B, C, K, 2]` placed in a zero spectrum and transformed back to `grid`.
#[derive(Clone, Debug)]
pub struct SpectrumToGrid {
    pub modes: Vec<usize>,
    pub grid: Vec<usize>,
    pub norm: Norm,
    pub pass: Pass,
}

/// The retained spectrum of `x: [B, C, *grid]` with Candle's autograd.
pub fn retained_spectrum(x: &Tensor, modes: &[usize], norm: Norm) -> Result<Tensor> {
    x.contiguous()?.apply_op1(RetainedSpectrum {
        modes: modes.to_vec(),
        norm,
        pass: Pass::Forward,
    })
}

/// `s: [B, C, K, 2]` back on `grid`, with Candle's autograd.
pub fn spectrum_to_grid(s: &Tensor, modes: &[usize], grid: &[usize], norm: Norm) -> Result<Tensor> {
    s.contiguous()?.apply_op1(SpectrumToGrid {
        modes: modes.to_vec(),
        grid: grid.to_vec(),
        norm,
        pass: Pass::Forward,
    })
}

fn spatial_axes(dims: usize) -> Vec<isize> {
    (0..dims as isize).map(|d| d - dims as isize).collect()
}

/// The shared FFT plan of a truncated R2C (forward) or zero-padded C2R
/// (inverse) over the trailing `modes.len()` dims of `shape`, of `lengths`.
fn plan(
    shape: &[usize],
    kind: FftKind,
    modes: &[usize],
    lengths: &[usize],
    (norm, order): (Norm, ModeOrder),
) -> Result<FftPlan> {
    let direction = match kind {
        FftKind::R2C => Direction::Forward,
        _ => Direction::Inverse,
    };
    let desc = FftDesc::new(shape, &spatial_axes(modes.len()), kind, direction)
        .modes(modes)
        .lengths(lengths)
        .norm(norm)
        .mode_order(order);
    FftPlan::new(desc).map_err(candle_core::Error::wrap)
}

/// The norm and mode order of a transform: a forward transform at `norm` in
/// `forward_order`, or the adjoint's (the complementary norm, the other order).
fn norm_and_order(pass: Pass, norm: Norm, forward_order: ModeOrder, adjoint_order: ModeOrder) -> (Norm, ModeOrder) {
    match pass {
        Pass::Forward => (norm, forward_order),
        Pass::Adjoint => (adjoint_norm(norm), adjoint_order),
    }
}

/// Multiplies (or divides) every (re, im) pair of `[.., m_last, 2]` values by
/// its last-axis bin's weight.
fn weigh_bins<T: Float>(values: &mut [T], weights: &[f32], divide: bool) {
    let m = weights.len();
    for (pair, v) in values.chunks_exact_mut(2).enumerate() {
        let w = T::from(weights[pair % m]).expect("a small integer");
        for part in v {
            *part = if divide { *part / w } else { *part * w };
        }
    }
}

/// The contiguous values of a float storage, as `f(values)` of their type.
fn with_floats(
    storage: &CpuStorage,
    layout: &Layout,
    op: &str,
    f32s: impl FnOnce(&[f32]) -> Result<Vec<f32>>,
    f64s: impl FnOnce(&[f64]) -> Result<Vec<f64>>,
) -> Result<CpuStorage> {
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::msg(format!("{op}: the input must be contiguous")))?;
    match storage {
        CpuStorage::F32(v) => Ok(CpuStorage::F32(f32s(&v[start..end])?)),
        CpuStorage::F64(v) => Ok(CpuStorage::F64(f64s(&v[start..end])?)),
        other => candle_core::bail!("{op}: f32 or f64 values, got {:?}", other.dtype()),
    }
}

impl RetainedSpectrum {
    fn check(&self, dims: &[usize]) -> Result<()> {
        if dims.len() != self.modes.len() + 2 {
            candle_core::bail!(
                "retained spectrum: {} modes for an input of shape {dims:?} ([B, C, *grid])",
                self.modes.len()
            );
        }
        Ok(())
    }

    fn run<T: FftNum + Float>(&self, fft: &FftPlan, x: &[T], grid: &[usize]) -> Result<Vec<T>> {
        let mut s = fft.execute_cpu(x).map_err(candle_core::Error::wrap)?;
        if self.pass == Pass::Adjoint {
            // The adjoint of a real inverse counts interior bins twice.
            weigh_bins(
                &mut s,
                &hermitian_weights(self.modes[grid.len() - 1], grid[grid.len() - 1]),
                false,
            );
        }
        Ok(s)
    }
}

impl CustomOp1 for RetainedSpectrum {
    fn name(&self) -> &'static str {
        "fno-retained-spectrum"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let dims = layout.dims();
        self.check(dims)?;
        let grid = &dims[2..];
        let scaling = norm_and_order(self.pass, self.norm, FORWARD_ORDER, INVERSE_ORDER);
        let fft = plan(dims, FftKind::R2C, &self.modes, grid, scaling)?;
        let out = with_floats(
            storage,
            layout,
            self.name(),
            |x| self.run(&fft, x, grid),
            |x| self.run(&fft, x, grid),
        )?;
        let k = self.modes.iter().product();
        Ok((out, Shape::from((dims[0], dims[1], k, 2))))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let back = SpectrumToGrid {
            modes: self.modes.clone(),
            grid: arg.dims()[2..].to_vec(),
            norm: self.norm,
            pass: self.pass.flip(),
        };
        Ok(Some(grad_res.contiguous()?.apply_op1(back)?))
    }
}

impl SpectrumToGrid {
    fn check(&self, dims: &[usize]) -> Result<()> {
        let k: usize = self.modes.iter().product();
        if dims.len() != 4 || dims[2] != k || dims[3] != 2 || self.grid.len() != self.modes.len() {
            candle_core::bail!(
                "spectrum to grid: a spectrum [B, C, {k}, 2] of modes {:?} to a {}-D grid, got {dims:?}",
                self.modes,
                self.grid.len()
            );
        }
        Ok(())
    }

    fn run<T: FftNum + Float>(&self, fft: &FftPlan, s: &[T]) -> Result<Vec<T>> {
        let last = self.grid.len() - 1;
        match self.pass {
            Pass::Forward => fft.execute_cpu(s),
            Pass::Adjoint => {
                // The adjoint of the truncated forward halves interior bins.
                let mut s = s.to_vec();
                weigh_bins(&mut s, &hermitian_weights(self.modes[last], self.grid[last]), true);
                fft.execute_cpu(&s)
            }
        }
        .map_err(candle_core::Error::wrap)
    }
}

impl CustomOp1 for SpectrumToGrid {
    fn name(&self) -> &'static str {
        "fno-spectrum-to-grid"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let dims = layout.dims();
        self.check(dims)?;
        let scaling = norm_and_order(self.pass, self.norm, INVERSE_ORDER, FORWARD_ORDER);
        let logical = [&dims[..2], &self.modes[..]].concat();
        let fft = plan(&logical, FftKind::C2R, &self.modes, &self.grid, scaling)?;
        let out = with_floats(
            storage,
            layout,
            self.name(),
            |s| self.run(&fft, s),
            |s| self.run(&fft, s),
        )?;
        Ok((out, Shape::from([&dims[..2], &self.grid[..]].concat())))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let back = RetainedSpectrum {
            modes: self.modes.clone(),
            norm: self.norm,
            pass: self.pass.flip(),
        };
        Ok(Some(grad_res.contiguous()?.apply_op1(back)?))
    }
}

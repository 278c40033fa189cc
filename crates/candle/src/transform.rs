//! The spectral convolution's two transforms as Candle custom ops: the
//! retained spectrum `[B, C, K, 2]` of a real grid `[B, C, *grid]` (the K
//! modes flattened in the weight's order) and its zero-padded inverse. Each
//! op's backward is the other's adjoint, so Candle's autograd runs through
//! them. These are the passes of `fno_ops::spectral` on Burn, with the same
//! mode orders and norms. On the CPU they run the shared FFT plan through
//! [`FftPlan::execute_threaded`] (real-input transforms on rayon's threads),
//! in the tensor's own float type (f32 or f64); on
//! Candle's CUDA device (feature `cuda`), through our CubeCL kernels.

use candle_core::backend::BackendStorage;
#[cfg(feature = "cuda")]
use candle_core::CudaStorage;
use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use fno_core::spec::{adjoint_norm, hermitian_weights, InverseShift, FORWARD_ORDER};
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, ModeOrder, Norm};
use rustfft::num_traits::Float;
use rustfft::FftNum;

/// Which way a transform runs: as the convolution applies it, or as the
/// adjoint of the other transform (the backward: the complementary norm and
/// the other mode order; the ops' callers weigh the last axis's bins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
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
struct RetainedSpectrum {
    /// Retained modes per spatial dim, at most the grid's (the last dim's bins).
    modes: Vec<usize>,
    norm: Norm,
    shift: InverseShift,
    pass: Pass,
}

/// `s: [B, C, K, 2]` placed in a zero spectrum and transformed back to `grid`.
#[derive(Clone, Debug)]
struct SpectrumToGrid {
    modes: Vec<usize>,
    grid: Vec<usize>,
    norm: Norm,
    shift: InverseShift,
    pass: Pass,
}

/// The retained spectrum of `x: [B, C, *grid]` with Candle's autograd
/// (`shift`: the inverse's, which its backward uses).
pub fn retained_spectrum(x: &Tensor, modes: &[usize], norm: Norm, shift: InverseShift) -> Result<Tensor> {
    retained(x, modes, (norm, shift), Pass::Forward)
}

/// `s: [B, C, K, 2]` back on `grid`, its modes placed by `shift`, with
/// Candle's autograd.
pub fn spectrum_to_grid(
    s: &Tensor,
    modes: &[usize],
    grid: &[usize],
    norm: Norm,
    shift: InverseShift,
) -> Result<Tensor> {
    to_grid(s, modes, grid, (norm, shift), Pass::Forward)
}

/// [`RetainedSpectrum`] in `pass`; the adjoint of a real inverse counts the
/// last axis's interior bins twice.
fn retained(x: &Tensor, modes: &[usize], (norm, shift): (Norm, InverseShift), pass: Pass) -> Result<Tensor> {
    let grid = x.dims()[2..].to_vec();
    let op = RetainedSpectrum {
        modes: modes.to_vec(),
        norm,
        shift,
        pass,
    };
    let s = x.contiguous()?.apply_op1(Op(op))?;
    match pass {
        Pass::Forward => Ok(s),
        Pass::Adjoint => weigh_bins(&s, modes, &grid, false),
    }
}

/// [`SpectrumToGrid`] in `pass`; the adjoint of the truncated forward halves
/// the last axis's interior bins first.
fn to_grid(
    s: &Tensor,
    modes: &[usize],
    grid: &[usize],
    (norm, shift): (Norm, InverseShift),
    pass: Pass,
) -> Result<Tensor> {
    let s = match pass {
        Pass::Forward => s.clone(),
        Pass::Adjoint => weigh_bins(s, modes, grid, true)?,
    };
    s.contiguous()?.apply_op1(Op(SpectrumToGrid {
        modes: modes.to_vec(),
        grid: grid.to_vec(),
        norm,
        shift,
        pass,
    }))
}

/// `s: [B, C, K, 2]` times (or over) the weights of the last axis's bins on
/// `grid` (1 at frequency 0 and Nyquist, 2 between).
fn weigh_bins(s: &Tensor, modes: &[usize], grid: &[usize], divide: bool) -> Result<Tensor> {
    let last = grid.len() - 1;
    let weights = hermitian_weights(modes[last], grid[last]);
    let (b, c, k, _) = s.dims4()?;
    let m = weights.len();
    let w = Tensor::from_vec(weights, (m, 1), s.device())?.to_dtype(s.dtype())?;
    let rows = s.reshape((b, c, k / m, m, 2))?;
    let scaled = if divide {
        rows.broadcast_div(&w)?
    } else {
        rows.broadcast_mul(&w)?
    };
    scaled.reshape((b, c, k, 2))
}

fn spatial_axes(dims: usize) -> Vec<isize> {
    (0..dims as isize).map(|d| d - dims as isize).collect()
}

/// The shared FFT plan's description of a truncated R2C (forward) or
/// zero-padded C2R (inverse) over the trailing `modes.len()` dims of `shape`,
/// of `lengths`.
fn desc(
    shape: &[usize],
    kind: FftKind,
    modes: &[usize],
    lengths: &[usize],
    (norm, order): (Norm, ModeOrder),
) -> FftDesc {
    let direction = match kind {
        FftKind::R2C => Direction::Forward,
        _ => Direction::Inverse,
    };
    FftDesc::new(shape, &spatial_axes(modes.len()), kind, direction)
        .modes(modes)
        .lengths(lengths)
        .norm(norm)
        .mode_order(order)
}

/// `desc`'s plan run on the CPU over a float storage.
fn cpu_execute(desc: FftDesc, storage: &CpuStorage, layout: &Layout, op: &str) -> Result<CpuStorage> {
    let fft = FftPlan::new(desc).map_err(candle_core::Error::wrap)?;
    with_floats(storage, layout, op, |v| run(&fft, v), |v| run(&fft, v))
}

/// The norm and mode order of a transform: a forward transform at `norm` in
/// `forward_order`, or the adjoint's (the complementary norm, the other order).
fn norm_and_order(pass: Pass, norm: Norm, forward_order: ModeOrder, adjoint_order: ModeOrder) -> (Norm, ModeOrder) {
    match pass {
        Pass::Forward => (norm, forward_order),
        Pass::Adjoint => (adjoint_norm(norm), adjoint_order),
    }
}

/// `fft` on the CPU's threads, in the values' own float type.
fn run<T: FftNum + Float>(fft: &FftPlan, values: &[T]) -> Result<Vec<T>> {
    fft.execute_threaded(values).map_err(candle_core::Error::wrap)
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

/// A transform as Candle sees it: its plan and output shape for an input, and
/// its backward.
trait Transform {
    const NAME: &'static str;
    fn desc(&self, dims: &[usize]) -> Result<(FftDesc, Shape)>;
    fn backward(&self, arg: &Tensor, grad: &Tensor) -> Result<Tensor>;
}

impl Transform for RetainedSpectrum {
    const NAME: &'static str = "fno-retained-spectrum";

    /// The transform of an input of shape `dims`, and the output's shape.
    fn desc(&self, dims: &[usize]) -> Result<(FftDesc, Shape)> {
        if dims.len() != self.modes.len() + 2 {
            candle_core::bail!(
                "retained spectrum: {} modes for an input of shape {dims:?} ([B, C, *grid])",
                self.modes.len()
            );
        }
        let scaling = norm_and_order(self.pass, self.norm, FORWARD_ORDER, self.shift.order());
        let fft = desc(dims, FftKind::R2C, &self.modes, &dims[2..], scaling);
        let k = self.modes.iter().product();
        Ok((fft, Shape::from((dims[0], dims[1], k, 2))))
    }

    fn backward(&self, arg: &Tensor, grad: &Tensor) -> Result<Tensor> {
        to_grid(
            grad,
            &self.modes,
            &arg.dims()[2..],
            (self.norm, self.shift),
            self.pass.flip(),
        )
    }
}

impl Transform for SpectrumToGrid {
    const NAME: &'static str = "fno-spectrum-to-grid";

    /// The transform of a spectrum of shape `dims`, and the output's shape.
    fn desc(&self, dims: &[usize]) -> Result<(FftDesc, Shape)> {
        let k: usize = self.modes.iter().product();
        if dims.len() != 4 || dims[2] != k || dims[3] != 2 || self.grid.len() != self.modes.len() {
            candle_core::bail!(
                "spectrum to grid: a spectrum [B, C, {k}, 2] of modes {:?} to a {}-D grid, got {dims:?}",
                self.modes,
                self.grid.len()
            );
        }
        let scaling = norm_and_order(self.pass, self.norm, self.shift.order(), FORWARD_ORDER);
        let logical = [&dims[..2], &self.modes[..]].concat();
        let fft = desc(&logical, FftKind::C2R, &self.modes, &self.grid, scaling);
        Ok((fft, Shape::from([&dims[..2], &self.grid[..]].concat())))
    }

    fn backward(&self, _arg: &Tensor, grad: &Tensor) -> Result<Tensor> {
        retained(grad, &self.modes, (self.norm, self.shift), self.pass.flip())
    }
}

/// A [`Transform`] as a Candle custom op.
struct Op<T>(T);

impl<T: Transform> CustomOp1 for Op<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (fft, shape) = self.0.desc(layout.dims())?;
        Ok((cpu_execute(fft, storage, layout, T::NAME)?, shape))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, storage: &CudaStorage, layout: &Layout) -> Result<(CudaStorage, Shape)> {
        let (fft, shape) = self.0.desc(layout.dims())?;
        Ok((crate::replay::execute(fft, storage, layout)?, shape))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(self.0.backward(arg, grad_res)?))
    }
}

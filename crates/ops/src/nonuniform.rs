//! Non-uniform FFTs as differentiable Burn ops ([`nufft`]) and the spectral
//! convolution of values at arbitrary points built of them
//! ([`nonuniform_spectral_conv`]): values at points → type 1 → a complex
//! weight per mode and channel pair → type 2 at the same or other points.
//!
//! Both transforms are linear, and the adjoint of one is the other with the
//! opposite sign at the same points, so each op's backward is the other op
//! (complex values as trailing (re, im) pairs: the pairs' transpose is the
//! complex adjoint; for real values at the points, type 1 of real values and
//! the real part of type 2 are each other's adjoints). On `CubeBackend` the transforms run
//! [`fno_kernels::nufft`]'s kernels (plans cached per point cloud and
//! device); the default is the same algorithm in f64 on the host.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData, TensorMetadata, TensorPrimitive};
use fno_kernels::nufft::{NufftDesc, NufftError, NufftType, PointValues};

use crate::mode_mix::{mode_mix, ModeMix, ModeMixBackend};

/// Points in `d` dimensions (radians; any finite values, taken modulo 2π),
/// shared by the ops that read or write values there. Cheap to clone; plans
/// are cached per cloud.
#[derive(Clone, Debug)]
pub struct PointCloud(Arc<Cloud>);

#[derive(Debug)]
struct Cloud {
    id: u64,
    dims: usize,
    coords: Vec<f64>,
}

impl PointCloud {
    /// `coords` `[M, dims]` row-major.
    pub fn new(coords: Vec<f64>, dims: usize) -> Result<Self, NufftError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if !(1..=3).contains(&dims) || coords.is_empty() || !coords.len().is_multiple_of(dims) {
            return Err(NufftError::Invalid(format!(
                "{} coordinates do not make points of {dims} dimensions (1 to 3)",
                coords.len()
            )));
        }
        if let Some(x) = coords.iter().find(|x| !x.is_finite()) {
            return Err(NufftError::Invalid(format!(
                "a point has a non-finite coordinate ({x})"
            )));
        }
        Ok(PointCloud(Arc::new(Cloud {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            dims,
            coords,
        })))
    }

    pub fn len(&self) -> usize {
        self.0.coords.len() / self.0.dims
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dims(&self) -> usize {
        self.0.dims
    }

    pub fn coords(&self) -> &[f64] {
        &self.0.coords
    }

    /// The cloud's number, which keys its plans.
    pub(crate) fn id(&self) -> u64 {
        self.0.id
    }
}

/// One transform over a point cloud.
#[derive(Clone, Debug)]
pub struct NufftOp {
    pub points: PointCloud,
    pub kind: NufftType,
    pub modes: Vec<usize>,
    pub eps: f64,
    pub isign: i32,
    /// Complex values at the points (`[…, M, 2]`), or real ones
    /// (`[…, M]`: type 1 reads real values, type 2 returns real parts).
    pub values: PointValues,
    /// Every output value's factor (free: folded into the deconvolution);
    /// the adjoint keeps it.
    pub scale: f64,
}

impl NufftOp {
    /// The transform's adjoint: the other type, the opposite sign, the same points.
    pub fn adjoint(&self) -> NufftOp {
        NufftOp {
            kind: match self.kind {
                NufftType::One => NufftType::Two,
                NufftType::Two => NufftType::One,
            },
            isign: -self.isign,
            ..self.clone()
        }
    }

    pub(crate) fn desc(&self, batch: usize) -> NufftDesc {
        NufftDesc::new(self.kind, &self.modes, self.eps)
            .isign(self.isign)
            .batch(batch)
    }

    /// The values one vector holds at the input and at the output (modes flattened).
    fn extents(&self) -> (usize, usize) {
        let (points, modes) = (self.points.len(), self.modes.iter().product());
        match self.kind {
            NufftType::One => (points, modes),
            NufftType::Two => (modes, points),
        }
    }

    /// The trailing dims of one vector's input: `[M]` for real values at
    /// the points, `[values, 2]` otherwise; the dims before them are the batch.
    pub(crate) fn input_rank(&self) -> usize {
        match (self.kind, self.values) {
            (NufftType::One, PointValues::Real) => 1,
            _ => 2,
        }
    }

    /// The output's shape for the batch dims `batch`.
    pub(crate) fn output_shape(&self, batch: &[usize]) -> Vec<usize> {
        let (_, output) = self.extents();
        let mut shape = batch.to_vec();
        shape.push(output);
        if (self.kind, self.values) != (NufftType::Two, PointValues::Real) {
            shape.push(2);
        }
        shape
    }
}

/// Backends that run [`nufft`]. The default runs the f64 algorithm on the
/// host (CPU backends); `CubeBackend` runs the kernels.
pub trait NufftBackend: ModeMixBackend {
    /// `x`: `[…, input, 2]` complex pairs (`input` the points for type
    /// 1, the modes flattened row-major for type 2), or `[…, M]` real
    /// values at the points (`op.values`), the leading dims a batch; returns
    /// `[…, output, 2]`, or `[…, M]` real parts.
    fn nufft(x: FloatTensor<Self>, op: &NufftOp) -> FloatTensor<Self> {
        let (shape, dtype) = (x.shape().to_vec(), x.dtype());
        let lead = &shape[..shape.len() - op.input_rank()];
        let batch = lead.iter().product();
        let device = Self::float_device(&x);
        let data = Self::float_into_data(x);
        let data = burn::tensor::try_read_sync(data)
            .expect("a CPU backend's data are readable at once")
            .expect("reading a tensor's data");
        let mut input: Vec<f64> = data.convert::<f64>().to_vec().expect("f64 values");
        let real = op.values == PointValues::Real;
        if real && op.kind == NufftType::One {
            input = input.iter().flat_map(|&re| [re, 0.0]).collect();
        }
        let mut out = op
            .desc(batch)
            .execute_cpu(op.points.coords(), &input)
            .unwrap_or_else(|e| panic!("{e}"));
        if real && op.kind == NufftType::Two {
            out = out.iter().step_by(2).copied().collect();
        }
        out.iter_mut().for_each(|v| *v *= op.scale);
        let out = TensorData::new(out, op.output_shape(lead)).convert_dtype(dtype);
        Self::float_from_data(out, &device)
    }
}

/// The transform `op` of `x` (`[batch, input, 2]`, complex pairs; type 1's
/// input the points, type 2's the modes flattened row-major), with autodiff
/// where `B` has it: `[batch, output, 2]`.
pub fn nufft<B: NufftBackend>(x: Tensor<B, 3>, op: &NufftOp) -> Tensor<B, 3> {
    let (input, _) = op.extents();
    let dims = x.dims();
    assert!(
        op.values == PointValues::Complex && dims[1] == input && dims[2] == 2,
        "a {:?} NUFFT of complex values takes [batch, {input}, 2], got {dims:?} ({:?} values)",
        op.kind,
        op.values
    );
    apply(x, op)
}

/// Type 1 of real values at the points (`x: [batch, channels, M]`;
/// `op.values` real): `[batch, channels, modes, 2]`, with autodiff (the
/// gradient is the real part of the adjoint). Rows padded by Burn's CUDA
/// allocator are read in place.
pub fn nufft_from_real<B: NufftBackend>(x: Tensor<B, 3>, op: &NufftOp) -> Tensor<B, 4> {
    let [_, _, points] = x.dims();
    assert!(
        op.kind == NufftType::One && op.values == PointValues::Real && points == op.points.len(),
        "nufft_from_real is type 1 of real values at {} points, got {:?} of {:?} values on [batch, channels, {points}]",
        op.points.len(),
        op.kind,
        op.values
    );
    apply(x, op)
}

/// The real parts of type 2 at the points (`x: [batch, channels, modes, 2]`;
/// `op.values` real): `[batch, channels, M]`, with autodiff.
pub fn nufft_real_part<B: NufftBackend>(x: Tensor<B, 4>, op: &NufftOp) -> Tensor<B, 3> {
    let (input, _) = op.extents();
    let dims = x.dims();
    assert!(
        op.kind == NufftType::Two && op.values == PointValues::Real && dims[2] == input && dims[3] == 2,
        "nufft_real_part is type 2 to real values from [batch, channels, {input}, 2], got {:?} of {:?} values on {dims:?}",
        op.kind,
        op.values
    );
    apply(x, op)
}

fn apply<B: NufftBackend, const D: usize, const E: usize>(x: Tensor<B, D>, op: &NufftOp) -> Tensor<B, E> {
    Tensor::from_primitive(TensorPrimitive::Float(B::nufft(x.into_primitive().tensor(), op)))
}

/// The spectral convolution of real values at `points_in` (`x: [B, Cin, M_in]`)
/// onto `points_out` (`[B, Cout, M_out]`): `F = (1/M_in)·Σ_j x_j e^{−ik·x_j}`
/// (type 1) for the `modes` frequencies, `G[o] = Σ_i W[i, o]·F[i]` per mode
/// ([`mode_mix`]), `y = Re Σ_k G_k e^{+ik·y_j}` (type 2). `weight: [Cin, Cout, K, 2]` with
/// `K = Π modes` in FINUFFT's mode order (−N/2 … N/2−1 per dimension).
pub fn nonuniform_spectral_conv<B: NufftBackend>(
    x: Tensor<B, 3>,
    weight: Tensor<B, 4>,
    points_in: &PointCloud,
    points_out: &PointCloud,
    modes: &[usize],
    eps: f64,
) -> Tensor<B, 3> {
    let [_, cin, m_in] = x.dims();
    let [w_in, _, k, two] = weight.dims();
    let modes_total: usize = modes.iter().product();
    assert!(
        w_in == cin && k == modes_total && two == 2,
        "weight {:?} for {cin} input channels and {modes:?} modes (expected [{cin}, Cout, {modes_total}, 2])",
        weight.dims()
    );
    assert_eq!(
        m_in,
        points_in.len(),
        "x holds {m_in} values a channel for {} points",
        points_in.len()
    );
    let forward = NufftOp {
        points: points_in.clone(),
        kind: NufftType::One,
        modes: modes.to_vec(),
        eps,
        isign: -1,
        values: PointValues::Real,
        scale: 1.0 / m_in as f64,
    };
    let inverse = NufftOp {
        points: points_out.clone(),
        kind: NufftType::Two,
        modes: modes.to_vec(),
        eps,
        isign: 1,
        values: PointValues::Real,
        scale: 1.0,
    };
    // No reshapes: Burn copies a row-padded tensor to reshape it.
    let spectrum = nufft_from_real(x, &forward);
    nufft_real_part(mode_mix(spectrum, weight, ModeMix::Forward), &inverse)
}

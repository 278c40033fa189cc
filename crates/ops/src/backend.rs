//! The Burn backend extension: spectral convolution through our kernels.
//!
//! [`SpectralConvBackend`] is implemented for `CubeBackend` (wgpu, CUDA), for
//! `Autodiff<B>` of any backend that has it (the backward runs the adjoint chain
//! through the same kernels), and for the CPU backends, where the kernel paths
//! answer with an error naming the reference path.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;

use crate::matmul::PreciseMatmulBackend;
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl};

/// A backend that runs the spectral convolution's kernel paths. The bias is not
/// part of the op (it is a plain broadcast add).
pub trait SpectralConvBackend: PreciseMatmulBackend {
    /// `x: [B, Cin, *spatial]`, weight `[Cin, Cout, *modes, 2]` or `[Cin, Cout, 2]`.
    /// Returns the output and what the backward needs of `x` (its retained
    /// spectrum on the kernel paths, computed anyway), so training does not
    /// recompute it; inference drops it.
    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError>;

    /// Gradients of `Σ grad_out ⊙ spectral_conv(x, weight)` with respect to `x`
    /// (of shape `x_shape`) and `weight`, from what the forward saved of `x`.
    fn spectral_conv_backward(
        saved_x: FloatTensor<Self>,
        x_shape: &[usize],
        weight: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError>;
}

/// The error every backend without kernels gives for a kernel path.
pub fn no_kernels(backend: &str, imp: SpectralImpl) -> SpectralError {
    SpectralError::Unsupported(format!(
        "{imp:?} spectral convolution needs a CubeCL backend (wgpu or cuda); {backend} runs SpectralImpl::Reference"
    ))
}

#[allow(unused_macros)] // unused when no CPU backend feature is on
macro_rules! cpu_backend_without_kernels {
    ($ty:ty, $name:literal) => {
        impl SpectralConvBackend for $ty {
            fn spectral_conv_forward(
                _x: FloatTensor<Self>,
                _weight: FloatTensor<Self>,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError> {
                Err(no_kernels($name, imp))
            }

            fn spectral_conv_backward(
                _saved_x: FloatTensor<Self>,
                _x_shape: &[usize],
                _weight: FloatTensor<Self>,
                _grad_out: FloatTensor<Self>,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError> {
                Err(no_kernels($name, imp))
            }
        }
    };
}

#[cfg(feature = "ndarray")]
cpu_backend_without_kernels!(burn::backend::NdArray<f32>, "ndarray");
#[cfg(feature = "ndarray")]
cpu_backend_without_kernels!(burn::backend::NdArray<f64>, "ndarray");
// Burn 0.21 deprecates its Candle backend but still ships it; we test on it.
#[cfg(feature = "candle")]
#[allow(deprecated)]
mod candle_impls {
    use super::*;
    cpu_backend_without_kernels!(burn::backend::Candle<f32, i64>, "candle");
    cpu_backend_without_kernels!(burn::backend::Candle<f64, i64>, "candle");
}

#[derive(Debug)]
struct SpectralConvBackward;

impl<B: SpectralConvBackend> Backward<B, 2> for SpectralConvBackward {
    /// What the forward saved of `x`, the shape of `x`, the weight, the op.
    type State = (FloatTensor<B>, Vec<usize>, NodeId, SpectralConvSpec, SpectralImpl);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (saved_x, x_shape, w_state, spec, imp) = ops.state;
        let w: FloatTensor<B> = checkpointer.retrieve_node_output(w_state);
        // The forward ran the same shapes through the same path, so this cannot
        // fail for a reason the caller could still act on.
        let (grad_x, grad_w) = B::spectral_conv_backward(saved_x, &x_shape, w, grad, &spec, imp)
            .unwrap_or_else(|e| panic!("spectral convolution backward: {e}"));
        if let Some(node) = node_x {
            grads.register::<B>(node.id, grad_x);
        }
        if let Some(node) = node_w {
            grads.register::<B>(node.id, grad_w);
        }
    }
}

impl<B: SpectralConvBackend, C: CheckpointStrategy> SpectralConvBackend for Autodiff<B, C> {
    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError> {
        let x_shape = x.primitive.shape().to_vec();
        let (out, saved_x) = B::spectral_conv_forward(x.primitive, weight.primitive.clone(), spec, imp)?;
        // Nothing differentiates through the saved spectrum: returned untracked.
        let saved = Self::from_inner(saved_x.clone());
        let out = match SpectralConvBackward
            .prepare::<C>([x.node.clone(), weight.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let w_state = prep.checkpoint(&weight);
                prep.finish((saved_x, x_shape, w_state, spec.clone(), imp), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(out),
        };
        Ok((out, saved))
    }

    fn spectral_conv_backward(
        _saved_x: FloatTensor<Self>,
        _x_shape: &[usize],
        _weight: FloatTensor<Self>,
        _grad_out: FloatTensor<Self>,
        _spec: &SpectralConvSpec,
        _imp: SpectralImpl,
    ) -> Result<(FloatTensor<Self>, FloatTensor<Self>), SpectralError> {
        Err(higher_order())
    }
}

fn higher_order() -> SpectralError {
    SpectralError::Unsupported("higher-order gradients of the spectral convolution".into())
}

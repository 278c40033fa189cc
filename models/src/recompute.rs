//! Training with fewer live bytes: the forward pass keeps each block's input
//! only (it runs without the autodiff graph up to the head), and the backward
//! pass runs each block again, last first, with its graph. One block's
//! activations are alive at a time, for one more forward pass of the blocks.

use burn::module::AutodiffModule;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use fno_ops::SpectralConvBackend;

use crate::{Fno, ModelError};

/// What [`Fno::forward_recomputed`] keeps for [`Recompute::backward`].
pub struct Recompute<B: AutodiffBackend, const D: usize> {
    /// The model's input, which the lifting runs on again.
    input: Tensor<B, D>,
    /// Each block's input, first to last.
    block_inputs: Vec<Tensor<B::InnerBackend, D>>,
    /// The last block's output as a leaf: where the head's graph starts.
    head: Tensor<B, D>,
}

impl<B> Fno<B>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    /// [`Fno::forward`] whose graph holds the head (unpadding and projection)
    /// only; the blocks' inputs are kept for [`Recompute::backward`], which
    /// gives the parameters' gradients of a loss of the result.
    ///
    /// Dropout (a random mask each run) would differ between the two runs
    /// of a block: a model with it is refused.
    pub fn forward_recomputed<const D: usize>(
        &self,
        x: Tensor<B, D>,
    ) -> Result<(Tensor<B, D>, Recompute<B, D>), ModelError> {
        if self.config().channel_mlp_dropout > 0.0 {
            return Err(ModelError::Config(format!(
                "recomputing blocks in the backward pass (memory \"small\") needs channel_mlp_dropout = 0, got {}",
                self.config().channel_mlp_dropout
            )));
        }
        let untracked = self.valid();
        let (mut h, layout) = untracked.stem(x.clone().inner())?;
        let mut block_inputs = Vec::with_capacity(self.blocks.len());
        for i in 0..self.blocks.len() {
            block_inputs.push(h.clone());
            h = untracked.block(i, h)?;
        }
        let head = Tensor::from_inner(h).require_grad();
        let y = self.head(head.clone(), &layout)?;
        Ok((
            y,
            Recompute {
                input: x,
                block_inputs,
                head,
            },
        ))
    }
}

impl<B, const D: usize> Recompute<B, D>
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    /// The gradients of `model`'s parameters from `grads`, the backward pass
    /// of a loss of [`Fno::forward_recomputed`]'s result: the head's taken
    /// from `grads`, each block's and the lifting's by running it again on
    /// its input with the gradient of its output. `sample` runs after each
    /// rerun and after each of its backward passes, where the live tensors
    /// peak (to sample the device's memory, say).
    pub fn backward(
        self,
        model: &Fno<B>,
        mut grads: B::Gradients,
        sample: &mut dyn FnMut(),
    ) -> Result<GradientsParams, ModelError> {
        let mut all = GradientsAccumulator::<Fno<B>>::new();
        let mut g = self.head.grad_remove(&mut grads);
        all.accumulate(model, GradientsParams::from_grads(grads, model));
        for (i, x) in self.block_inputs.into_iter().enumerate().rev() {
            // No gradient reaches the blocks where the loss does not depend on them.
            let Some(g_out) = g else { break };
            let x = Tensor::from_inner(x).require_grad();
            let y = model.block(i, x.clone())?;
            sample();
            g = x.grad_remove(&mut grads_of(y, g_out, model, &mut all));
            sample();
        }
        if let Some(g_out) = g {
            let (lifted, _) = model.stem(self.input)?;
            sample();
            grads_of(lifted, g_out, model, &mut all);
            sample();
        }
        Ok(all.grads())
    }
}

/// The backward pass of `y` given its gradient `g`: the parameters' gradients
/// added to `all`, the rest (the input's) returned.
fn grads_of<B, const D: usize>(
    y: Tensor<B, D>,
    g: Tensor<B::InnerBackend, D>,
    model: &Fno<B>,
    all: &mut GradientsAccumulator<Fno<B>>,
) -> B::Gradients
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    // d(Σ y·g)/dy = g: the chain rule through y with g as its gradient.
    let mut grads = (y * Tensor::from_inner(g)).sum().backward();
    all.accumulate(model, GradientsParams::from_module(&mut grads, model));
    grads
}

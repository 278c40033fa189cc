//! AdamW with each parameter's step in one kernel ([`PointwiseBackend::adamw_step`])
//! instead of a dozen element-wise ops: Burn's `AdamW` arithmetic (decoupled
//! weight decay, bias-corrected moments, ε outside the square root) and its
//! state type (`AdamWState`), so saved optimizer states keep their layout.

use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamWState, AdaptiveMomentumState, LearningRate, SimpleOptimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};
use fno_ops::{AdamWStep, PointwiseBackend};

#[derive(Clone, Debug)]
pub struct FusedAdamW {
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    pub weight_decay: f32,
}

impl FusedAdamW {
    /// Burn's `AdamWConfig` defaults for the betas.
    pub fn new(epsilon: f32, weight_decay: f32) -> Self {
        FusedAdamW {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon,
            weight_decay,
        }
    }

    /// The optimizer over module `M`'s parameters, their gradients clipped as configured.
    pub fn init<B: AutodiffBackend, M: AutodiffModule<B>>(
        self,
        clipping: Option<GradientClippingConfig>,
    ) -> OptimizerAdaptor<Self, M, B>
    where
        B::InnerBackend: PointwiseBackend,
    {
        let optim = OptimizerAdaptor::from(self);
        match clipping {
            Some(config) => optim.with_grad_clipping(config.init()),
            None => optim,
        }
    }
}

fn primitive<B: Backend, const D: usize>(t: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    t.into_primitive().tensor()
}

impl<B: PointwiseBackend> SimpleOptimizer<B> for FusedAdamW {
    type State<const D: usize> = AdamWState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<B, D>, Option<Self::State<D>>) {
        let time = state.as_ref().map_or(1, |s| s.momentum.time + 1);
        let step = AdamWStep {
            lr,
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            time,
        };
        let moments = state.map(|s| (primitive(s.momentum.moment_1), primitive(s.momentum.moment_2)));
        let [p, m, v] = B::adamw_step(primitive(tensor), primitive(grad), moments, &step)
            .map(|t| Tensor::<B, D>::from_primitive(TensorPrimitive::Float(t)));
        let state = AdamWState::new(AdaptiveMomentumState::new(time, m, v));
        (p, Some(state))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}

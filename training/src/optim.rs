//! neuraloperator's AdamW with every parameter's step in one kernel launch
//! ([`PointwiseBackend::adamw_steps`]) instead of a dozen element-wise ops each: ε
//! added before the bias correction, the decay after the step, and complex
//! parameters (interleaved (re, im) pairs, named by
//! [`FusedAdamWOptimizer::with_complex_params`])
//! sharing one second moment per value, so training follows neuraloperator's.
//! The state is Burn's `AdamWState` kept as Burn's optimizer adaptor keeps it,
//! so saved optimizer states keep their layout.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;

use burn::module::{AutodiffModule, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::{GradientClipping, GradientClippingConfig};
use burn::optim::record::AdaptorRecord;
use burn::optim::{
    AdamWState, AdaptiveMomentumState, GradientsParams, LearningRate, MultiGradientsParams, Optimizer, SimpleOptimizer,
};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{ElementConversion, Tensor, TensorPrimitive};
use fno_ops::{AdamWOperands, AdamWStep, PointwiseBackend};

/// The hyper-parameters (neuraloperator's defaults for the betas).
#[derive(Clone, Debug)]
pub struct FusedAdamW {
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    pub weight_decay: f32,
}

impl FusedAdamW {
    pub fn new(epsilon: f32, weight_decay: f32) -> Self {
        FusedAdamW {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon,
            weight_decay,
        }
    }

    /// The optimizer over module `M`'s parameters, their gradients clipped as
    /// configured; every parameter real until told otherwise.
    pub fn init<B: AutodiffBackend, M: AutodiffModule<B>>(
        self,
        clipping: Option<GradientClippingConfig>,
    ) -> FusedAdamWOptimizer<M, B>
    where
        B::InnerBackend: PointwiseBackend,
    {
        FusedAdamWOptimizer {
            optim: self,
            complex: HashSet::new(),
            records: Default::default(),
            clipping: clipping.map(|c| c.init()),
            unscale: 1.0,
            module: PhantomData,
        }
    }

    /// The step of a parameter at `time` (counted from 1).
    fn step_at(&self, lr: LearningRate, time: usize, pairs: bool, grad_scale: f32) -> AdamWStep {
        AdamWStep {
            lr,
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            time,
            pairs,
            grad_scale,
        }
    }
}

/// The state after a step: the moments as `AdamWState`.
fn state_of<B: Backend, const D: usize>(time: usize, m: FloatTensor<B>, v: FloatTensor<B>) -> AdamWState<B, D> {
    let wrap = |t| Tensor::<B, D>::from_primitive(TensorPrimitive::Float(t));
    AdamWState::new(AdaptiveMomentumState::new(time, wrap(m), wrap(v)))
}

fn primitive<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Every parameter real: for use through Burn's `OptimizerAdaptor`.
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
        let operands = AdamWOperands {
            param: primitive(tensor),
            grad: primitive(grad),
            moments: state.map(|s| (primitive(s.momentum.moment_1), primitive(s.momentum.moment_2))),
        };
        let step = self.step_at(lr, time, false, 1.0);
        let [p, m, v] = B::adamw_steps(vec![operands], &step).pop().expect("one step");
        (
            Tensor::from_primitive(TensorPrimitive::Float(p)),
            Some(state_of(time, m, v)),
        )
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}

/// The states by parameter, as Burn's adaptor records them.
type Records<M, B> = <OptimizerAdaptor<FusedAdamW, M, B> as Optimizer<M, B>>::Record;

/// [`FusedAdamW`] over a module, knowing its complex parameters.
#[derive(Clone)]
pub struct FusedAdamWOptimizer<M: AutodiffModule<B>, B: AutodiffBackend>
where
    B::InnerBackend: PointwiseBackend,
{
    optim: FusedAdamW,
    complex: HashSet<ParamId>,
    records: Records<M, B>,
    clipping: Option<GradientClipping>,
    /// Gradients are multiplied by this before anything else (a loss scale's inverse).
    unscale: f32,
    module: PhantomData<M>,
}

/// The gradients of one step, from one device or several.
enum Grads {
    One(GradientsParams),
    Many(MultiGradientsParams),
}

impl Grads {
    fn remove<B: Backend, const D: usize>(&mut self, id: ParamId) -> Option<Tensor<B, D>> {
        match self {
            Grads::One(g) => g.remove(id),
            Grads::Many(g) => g.remove(id).map(|(t, _)| t),
        }
    }
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> FusedAdamWOptimizer<M, B>
where
    B::InnerBackend: PointwiseBackend,
{
    /// The parameters holding (re, im) pairs (ids as the module has them now:
    /// a loaded module record brings its own).
    pub fn with_complex_params(mut self, ids: impl IntoIterator<Item = ParamId>) -> Self {
        self.complex = ids.into_iter().collect();
        self
    }

    /// The next steps' gradients come from a loss multiplied by `scale`:
    /// they are divided by it before clipping and the update.
    pub fn set_loss_scale(&mut self, scale: f32) {
        self.unscale = 1.0 / scale;
    }

    /// Gathers every parameter's operands, steps them together (one call a
    /// group of equal step: a launch for the whole model where the kernels
    /// run), then puts the new values and states in place.
    fn step_with(&mut self, lr: LearningRate, module: M, mut grads: Grads) -> M {
        let mut gather = Gather::<M, B> {
            complex: &self.complex,
            records: &mut self.records,
            grads: &mut grads,
            clipping: self.clipping.as_ref(),
            unscale: self.unscale,
            gathered: Vec::new(),
        };
        module.visit(&mut gather);
        let mut groups: HashMap<_, Vec<Gathered<B::InnerBackend>>> = HashMap::new();
        for g in gather.gathered {
            let key = (g.time, g.pairs, g.operands.moments.is_some(), g.grad_scale.to_bits());
            groups.entry(key).or_default().push(g);
        }
        let mut stepped = HashMap::new();
        for ((time, pairs, _, scale), group) in groups {
            let step = self.optim.step_at(lr, time, pairs, f32::from_bits(scale));
            let ids: Vec<_> = group.iter().map(|g| g.id).collect();
            let operands = group.into_iter().map(|g| g.operands).collect();
            let out = B::InnerBackend::adamw_steps(operands, &step);
            stepped.extend(ids.into_iter().zip(out).map(|(id, out)| (id, (time, out))));
        }
        module.map(&mut Apply::<M, B> {
            records: &mut self.records,
            stepped,
        })
    }
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Optimizer<M, B> for FusedAdamWOptimizer<M, B>
where
    B::InnerBackend: PointwiseBackend,
{
    type Record = Records<M, B>;

    fn step(&mut self, lr: LearningRate, module: M, grads: GradientsParams) -> M {
        self.step_with(lr, module, Grads::One(grads))
    }

    fn step_multi(&mut self, lr: LearningRate, module: M, grads: MultiGradientsParams) -> M {
        self.step_with(lr, module, Grads::Many(grads))
    }

    fn to_record(&self) -> Self::Record {
        self.records.clone()
    }

    fn load_record(mut self, record: Self::Record) -> Self {
        self.records = record;
        self
    }
}

/// One parameter's step operands, gathered before the step.
struct Gathered<B: Backend> {
    id: ParamId,
    operands: AdamWOperands<FloatTensor<B>>,
    time: usize,
    pairs: bool,
    grad_scale: f32,
}

/// The first pass: every parameter with a gradient, its (clipped) gradient
/// and its state.
struct Gather<'a, M: AutodiffModule<B>, B: AutodiffBackend>
where
    B::InnerBackend: PointwiseBackend,
{
    complex: &'a HashSet<ParamId>,
    records: &'a mut Records<M, B>,
    grads: &'a mut Grads,
    clipping: Option<&'a GradientClipping>,
    unscale: f32,
    gathered: Vec<Gathered<B::InnerBackend>>,
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> ModuleVisitor<B> for Gather<'_, M, B>
where
    B::InnerBackend: PointwiseBackend,
{
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(param.id) else {
            return;
        };
        let device = grad.device();
        // Clipping sees the unscaled gradient; without it the step kernel unscales.
        let (grad, grad_scale) = match self.clipping {
            Some(clipping) if self.unscale != 1.0 => (clipping.clip_gradient(grad * self.unscale), 1.0),
            Some(clipping) => (clipping.clip_gradient(grad), 1.0),
            None => (grad, self.unscale),
        };
        let state = self.records.remove(&param.id).map(|r: AdaptorRecord<FusedAdamW, B>| {
            <FusedAdamW as SimpleOptimizer<B::InnerBackend>>::to_device(r.into_state::<D>(), &device)
        });
        let time = state.as_ref().map_or(1, |s| s.momentum.time + 1);
        self.gathered.push(Gathered {
            id: param.id,
            operands: AdamWOperands {
                param: primitive(param.val().inner().to_device(&device)),
                grad: primitive(grad),
                moments: state.map(|s| (primitive(s.momentum.moment_1), primitive(s.momentum.moment_2))),
            },
            time,
            pairs: self.complex.contains(&param.id),
            grad_scale,
        });
    }
}

/// A parameter's step time and new value and moments.
type Stepped<B> = (usize, [FloatTensor<B>; 3]);

/// The second pass: the stepped values and states in place.
struct Apply<'a, M: AutodiffModule<B>, B: AutodiffBackend>
where
    B::InnerBackend: PointwiseBackend,
{
    records: &'a mut Records<M, B>,
    stepped: HashMap<ParamId, Stepped<B::InnerBackend>>,
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> ModuleMapper<B> for Apply<'_, M, B>
where
    B::InnerBackend: PointwiseBackend,
{
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some((time, [p, m, v])) = self.stepped.remove(&id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let state = state_of::<B::InnerBackend, D>(time, m, v);
        self.records.insert(id, AdaptorRecord::from_state(state));
        let mut value = Tensor::from_inner(Tensor::from_primitive(TensorPrimitive::Float(p)));
        if tensor.is_require_grad() {
            value = value.require_grad();
        }
        Param::from_mapped_value(id, value, mapper)
    }
}

/// Dynamic loss scaling for half-precision gradients, by torch's `GradScaler` rules:
/// the loss is multiplied by [`scale`](Self::scale) before the backward, so
/// small gradients survive f16; a step whose gradients hold an inf or a NaN
/// is skipped and halves the scale; every `GROWTH_INTERVAL` finite steps in
/// a row double it.
#[derive(Clone, Debug, PartialEq)]
pub struct LossScaler {
    scale: f32,
    finite_steps: usize,
}

impl LossScaler {
    const INITIAL: f32 = 65536.0;
    const GROWTH_INTERVAL: usize = 2000;

    pub fn new() -> Self {
        LossScaler {
            scale: Self::INITIAL,
            finite_steps: 0,
        }
    }

    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Records a step whose gradients were `finite` (or not); returns whether
    /// to apply it.
    pub fn update(&mut self, finite: bool) -> bool {
        if !finite {
            self.scale = (self.scale / 2.0).max(1.0);
            self.finite_steps = 0;
            return false;
        }
        self.finite_steps += 1;
        if self.finite_steps == Self::GROWTH_INTERVAL {
            self.scale *= 2.0;
            self.finite_steps = 0;
        }
        true
    }
}

impl Default for LossScaler {
    fn default() -> Self {
        Self::new()
    }
}

/// Zero if every gradient of `module`'s parameters in `grads` is finite, NaN
/// otherwise (`None` without gradients): the sum of the gradients' sums times
/// zero, two launches a parameter and no read, so the trainer reads it with
/// the loss. (A sum that overflows counts as infinite, as it would after the
/// step.)
pub fn gradients_poison<B: AutodiffBackend, M: AutodiffModule<B>>(
    module: &M,
    grads: &GradientsParams,
) -> Option<Tensor<B::InnerBackend, 1>> {
    struct Check<'a, B: AutodiffBackend> {
        grads: &'a GradientsParams,
        total: Option<Tensor<B::InnerBackend, 1>>,
    }
    impl<B: AutodiffBackend> burn::module::ModuleVisitor<B> for Check<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(g) = self.grads.get::<B::InnerBackend, D>(param.id) {
                let sum = g.sum();
                self.total = Some(match self.total.take() {
                    Some(t) => t + sum,
                    None => sum,
                });
            }
        }
    }
    let mut check = Check::<B> { grads, total: None };
    module.visit(&mut check);
    check.total.map(|t| t * 0.0)
}

/// Whether every gradient of `module`'s parameters in `grads` is finite (one
/// value read back; see [`gradients_poison`]).
pub fn gradients_finite<B: AutodiffBackend, M: AutodiffModule<B>>(module: &M, grads: &GradientsParams) -> bool {
    gradients_poison(module, grads).is_none_or(|t| t.into_scalar().elem::<f32>().is_finite())
}

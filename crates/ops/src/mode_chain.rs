//! Three [`mode_mix`]es in a row, `x·W₁·W₂·W₃` (each step a `Forward` or a
//! `GradInput` contraction), with a bias at one mode of the result: a Tucker
//! weight's contraction `x̂·U₀·C_k·U₁ᵀ` ([`crate::factorized`]). One launch
//! on `CubeBackend` ([`fno_kernels::cgemm::ChainProblem`]), the steps one by
//! one elsewhere. Its backward is the chain of adjoints in reverse (one launch
//! again, which also sums the bias's gradient) and one weight gradient per
//! weight ([`ModeMixBackend::weight_gradient`]), from the forward's kept
//! intermediates.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorData, TensorPrimitive};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::cgemm::{ChainBuffers, ChainProblem, ChainStep, ModeBias, Strides};

use crate::graph::record;
use crate::kernel_path::{cast_to, empty, weight_operand};
use crate::mode_mix::{ModeMix, ModeMixBackend, Operand};

/// What a chain computes besides its three products.
#[derive(Clone, Copy, Debug)]
pub struct ChainExtras {
    /// `y[b, o, mode] += factor·bias[o]` (with a bias given).
    pub bias_at: Option<ModeBias>,
    /// Returns the first two steps' results.
    pub keep: bool,
    /// Returns `factor·Σ_b Re x[b, c, mode]`, `[C₀]`.
    pub input_sum: Option<ModeBias>,
}

/// A chain's results (see [`ChainExtras`]).
pub struct ChainOutput<B: Backend> {
    pub y: FloatTensor<B>,
    pub kept: Option<[FloatTensor<B>; 2]>,
    pub input_sum: Option<FloatTensor<B>>,
}

/// `x·W₁·W₂·W₃` for spectra `x: [B, C₀, K, 2]`, step `i` contracting with
/// `weights[i]` as `mixes[i]` (`Forward` or `GradInput`), plus `bias`
/// (`[C₃]`) at `bias.1`'s mode; autodiff where `B` has it.
pub fn mode_mix_chain<B: ModeMixBackend>(
    x: Tensor<B, 4>,
    weights: [Tensor<B, 4>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(Tensor<B, 1>, ModeBias)>,
) -> Tensor<B, 4> {
    let (bias, bias_at) = match bias {
        Some((t, at)) => (Some(t.into_primitive().tensor()), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: false,
        input_sum: None,
    };
    let weights = weights.map(|w| w.into_primitive().tensor());
    let out = B::mode_mix_chain(x.into_primitive().tensor(), weights, mixes, bias, extras);
    Tensor::from_primitive(TensorPrimitive::Float(out.y))
}

fn tensor<B: Backend, const D: usize>(t: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// The chain step by step: three [`ModeMixBackend::mode_mix`]es and Burn ops.
pub(crate) fn chain_by_steps<B: ModeMixBackend>(
    x: FloatTensor<B>,
    [w1, w2, w3]: [FloatTensor<B>; 3],
    mixes: [ModeMix; 3],
    bias: Option<FloatTensor<B>>,
    extras: ChainExtras,
) -> ChainOutput<B> {
    let input_sum = extras.input_sum.map(|at| {
        let x = tensor::<B, 4>(x.clone());
        let channels = x.dims()[1];
        let re = x.narrow(2, at.mode, 1).narrow(3, 0, 1).sum_dim(0);
        (re.reshape([channels]) * at.factor).into_primitive().tensor()
    });
    let t1 = B::mode_mix(x, w1, mixes[0]);
    let t2 = B::mode_mix(t1.clone(), w2, mixes[1]);
    let mut y = B::mode_mix(t2.clone(), w3, mixes[2]);
    if let (Some(bias), Some(at)) = (bias, extras.bias_at) {
        y = add_at_mode::<B>(tensor(y), tensor(bias), at).into_primitive().tensor();
    }
    ChainOutput {
        y,
        kept: extras.keep.then_some([t1, t2]),
        input_sum,
    }
}

/// `y: [B, C, K, 2]` plus `factor·bias[c]` at one mode (a one-hot product).
pub(crate) fn add_at_mode<B: Backend>(y: Tensor<B, 4>, bias: Tensor<B, 1>, at: ModeBias) -> Tensor<B, 4> {
    let [_, channels, modes, _] = y.dims();
    let mut one_hot = vec![0f32; 2 * modes];
    one_hot[2 * at.mode] = at.factor;
    let one_hot = Tensor::<B, 4>::from_data(TensorData::new(one_hot, [1, 1, modes, 2]), &y.device());
    let one_hot = if one_hot.dtype() == y.dtype() {
        one_hot
    } else {
        one_hot.cast(y.dtype())
    };
    let bias = bias.reshape([1, channels, 1, 1]);
    let bias = if bias.dtype() == y.dtype() {
        bias
    } else {
        bias.cast(y.dtype())
    };
    y + bias * one_hot
}

/// The chain as one launch, f32 throughout; step by step where a step's
/// channels do not fit the kernel's shared tiles.
pub(crate) fn chain_by_kernel<R: CubeRuntime, B: ModeMixBackend<FloatTensorPrimitive = CubeTensor<R>>>(
    x: CubeTensor<R>,
    weights: [CubeTensor<R>; 3],
    mixes: [ModeMix; 3],
    bias: Option<CubeTensor<R>>,
    extras: ChainExtras,
) -> ChainOutput<B> {
    let x = into_contiguous(cast_to(x, DType::F32));
    let [batch, inputs, modes, _] = x.meta.shape().to_vec()[..] else {
        panic!("a chain's input is [B, C, K, 2]")
    };
    let mut channels = inputs;
    let mut steps = Vec::with_capacity(3);
    let mut operands = Vec::with_capacity(3);
    for (w, &mix) in weights.iter().zip(&mixes) {
        let shape = w.meta.shape().to_vec();
        let shared = shape[2] == 1 && modes != 1;
        let (w, s) = weight_operand(cast_to(w.clone(), DType::F32), shape[1], modes, shared);
        let (n_in, outputs, strides, conj) = match mix {
            ModeMix::Forward => (shape[0], shape[1], s, false),
            ModeMix::GradInput => (
                shape[1],
                shape[0],
                Strides {
                    row: s.col,
                    col: s.row,
                    mode: s.mode,
                },
                true,
            ),
            ModeMix::GradWeight => panic!("a chain's steps contract with weights"),
        };
        assert_eq!(
            n_in, channels,
            "{mix:?} chain step of {shape:?} after {channels} channels"
        );
        channels = outputs;
        steps.push(ChainStep { outputs, strides, conj });
        operands.push(w);
    }
    let problem = ChainProblem {
        batch,
        inputs,
        modes,
        steps: [steps[0], steps[1], steps[2]],
        bias: extras.bias_at.filter(|_| bias.is_some()),
        keep: extras.keep,
        input_sum: extras.input_sum,
    };
    if !problem.fits() {
        return chain_by_steps::<B>(x, weights, mixes, bias, extras);
    }
    let c = problem.channels();
    let y = empty(&x, vec![batch, c[3], modes, 2]);
    let kept = extras
        .keep
        .then(|| [1, 2].map(|i| empty(&x, vec![batch, c[i], modes, 2])));
    let tiles = problem.tiles();
    let partial_sums = extras.input_sum.map(|_| empty(&x, vec![tiles, inputs]));
    let bias = bias.map(|b| into_contiguous(cast_to(b, DType::F32)));
    problem.launch(
        &x.client,
        ChainBuffers {
            x: &x.handle,
            weights: [&operands[0].handle, &operands[1].handle, &operands[2].handle],
            bias: bias.as_ref().map_or(&x.handle, |t| &t.handle),
            y: &y.handle,
            kept: match &kept {
                Some([a, b]) => [&a.handle, &b.handle],
                None => [&y.handle, &y.handle],
            },
            input_sum: partial_sums.as_ref().map_or(&x.handle, |t| &t.handle),
        },
    );
    let input_sum = partial_sums.map(|p| {
        let p = tensor::<B, 2>(p);
        p.sum_dim(0).reshape([inputs]).into_primitive().tensor()
    });
    ChainOutput { y, kept, input_sum }
}

/// The chain's backward: the adjoint chain for the input (and the bias), one
/// weight-gradient contraction per weight.
#[derive(Debug)]
struct ChainBackward {
    mixes: [ModeMix; 3],
    bias_at: Option<ModeBias>,
}

/// The input (kept where the first weight's gradient is wanted), the weights,
/// the first two results.
type ChainState<B> = (Option<NodeId>, [NodeId; 3], Option<[FloatTensor<B>; 2]>);

impl<B: ModeMixBackend> Backward<B, 5> for ChainBackward {
    type State = ChainState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let g = grads.consume::<B>(&ops.node);
        let (x, weights, kept) = ops.state;
        let mut operand = |id: NodeId| -> FloatTensor<B> { checkpointer.retrieve_node_output(id) };
        let x = x.map(&mut operand);
        let weights = weights.map(&mut operand);
        let [px, pw1, pw2, pw3, pbias] = &ops.parents;
        // The adjoint of step i contracts its output's gradient with its weight.
        let adjoint = self.mixes.map(|mix| {
            let (back, first, second) = mix.gradients()[0];
            assert!(matches!((first, second), (Operand::U, Operand::B)));
            back
        });
        let wanted_chain = px.is_some() || pw1.is_some() || pw2.is_some() || pbias.is_some();
        let back = wanted_chain.then(|| {
            let [w1, w2, w3] = weights.clone();
            let extras = ChainExtras {
                bias_at: None,
                keep: pw1.is_some() || pw2.is_some(),
                input_sum: self.bias_at.filter(|_| pbias.is_some()),
            };
            B::mode_mix_chain(
                g.clone(),
                [w3, w2, w1],
                [adjoint[2], adjoint[1], adjoint[0]],
                None,
                extras,
            )
        });
        let (gx, back_kept, gbias) = match back {
            Some(out) => (Some(out.y), out.kept, out.input_sum),
            None => (None, None, None),
        };
        if let (Some(node), Some(gx)) = (px, gx) {
            grads.register::<B>(node.id, gx);
        }
        if let (Some(node), Some(gbias)) = (pbias, gbias) {
            grads.register::<B>(node.id, gbias);
        }
        // Step i's input and its output's gradient.
        let (t1, t2) = match kept {
            Some([t1, t2]) => (Some(t1), Some(t2)),
            None => (None, None),
        };
        let (g_t2, g_t1) = match back_kept {
            Some([a, b]) => (Some(a), Some(b)),
            None => (None, None),
        };
        let inputs = [x, t1, t2];
        let output_grads = [g_t1, g_t2, Some(g)];
        for (i, parent) in [pw1, pw2, pw3].into_iter().enumerate() {
            let Some(node) = parent else { continue };
            let (a, u) = (
                inputs[i]
                    .clone()
                    .expect("a step's input is kept for its weight's gradient"),
                output_grads[i]
                    .clone()
                    .expect("a step's output gradient is formed for its weight's"),
            );
            let (mix, first, second) = self.mixes[i].gradients()[1];
            assert_eq!(mix, ModeMix::GradWeight);
            let pick = |o: Operand| match o {
                Operand::A => a.clone(),
                Operand::U => u.clone(),
                Operand::B => unreachable!("a weight's gradient does not take the weight"),
            };
            let gw = B::weight_gradient(pick(first), pick(second), weights[i].clone());
            grads.register::<B>(node.id, gw);
        }
    }
}

/// The chain on `Autodiff<B>`: `B`'s chain forward (keeping its intermediates
/// where a weight's gradient is wanted), [`ChainBackward`] backward.
pub(crate) fn autodiff_chain<B: ModeMixBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    weights: [FloatTensor<Autodiff<B, C>>; 3],
    mixes: [ModeMix; 3],
    bias: Option<FloatTensor<Autodiff<B, C>>>,
    extras: ChainExtras,
) -> ChainOutput<Autodiff<B, C>> {
    let weights_tracked = weights.iter().any(|w| w.is_tracked());
    let inner = ChainExtras {
        keep: extras.keep || weights_tracked,
        ..extras
    };
    let out = B::mode_mix_chain(
        x.primitive.clone(),
        weights.clone().map(|w| w.primitive),
        mixes,
        bias.as_ref().map(|b| b.primitive.clone()),
        inner,
    );
    // A chain without a bias has an untracked stand-in as its fifth parent.
    let bias = bias.unwrap_or_else(|| {
        let none = Tensor::<B, 1>::zeros([1], &tensor::<B, 4>(x.primitive.clone()).device());
        <Autodiff<B, C> as AutodiffBackend>::from_inner(none.into_primitive().tensor())
    });
    let kept = out.kept;
    let w1_tracked = weights[0].is_tracked();
    let op = ChainBackward {
        mixes,
        bias_at: extras.bias_at,
    };
    let kept_out = kept.clone();
    let y = record::<B, C, _, 5>(
        op,
        [&x, &weights[0], &weights[1], &weights[2], &bias],
        out.y,
        |checkpoint| {
            (
                w1_tracked.then(|| checkpoint(&x)),
                [
                    checkpoint(&weights[0]),
                    checkpoint(&weights[1]),
                    checkpoint(&weights[2]),
                ],
                kept,
            )
        },
    );
    ChainOutput {
        y,
        // Kept for this node's backward; a caller asking for them gets them untracked.
        kept: kept_out
            .filter(|_| extras.keep)
            .map(|k| k.map(<Autodiff<B, C> as AutodiffBackend>::from_inner)),
        input_sum: out.input_sum.map(<Autodiff<B, C> as AutodiffBackend>::from_inner),
    }
}

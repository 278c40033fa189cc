//! [`ModeMixBackend`] on `Autodiff`: a contraction's gradients are two of the
//! others (so autodiff runs them too, to any order); a chain's node runs the
//! chain of adjoints in reverse and one weight gradient per weight, from the
//! forward's kept intermediates.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::Tensor;
use fno_kernels::cgemm::ModeBias;

use super::record;
use crate::mode_mix::{ChainExtras, ChainOutput, ModeMix, ModeMixBackend, Operand};

/// The contraction's backward: the weight's gradient (of `Forward` and
/// `GradInput`) by [`ModeMixBackend::weight_gradient`].
#[derive(Debug)]
struct ModeMixBackward(ModeMix);

impl<B: ModeMixBackend> Backward<B, 2> for ModeMixBackward {
    /// The operands, each kept where the other's gradient is wanted (`b`
    /// also where it is a weight and its gradient is: its layout).
    type State = (Option<NodeId>, Option<NodeId>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let u = grads.consume::<B>(&ops.node);
        let (a, b) = ops.state;
        let mut operand = |id: NodeId| -> FloatTensor<B> { checkpointer.retrieve_node_output(id) };
        let (a, b) = (a.map(&mut operand), b.map(&mut operand));
        for (parent, (mix, first, second)) in ops.parents.iter().zip(self.0.gradients()) {
            if let Some(node) = parent {
                // Each operand is kept where the other's gradient is wanted.
                let pick = |o: Operand| match o {
                    Operand::A => a.clone().expect("a kept for b's gradient"),
                    Operand::B => b.clone().expect("b kept for a's gradient"),
                    Operand::U => u.clone(),
                };
                let grad = match mix {
                    ModeMix::GradWeight => {
                        let w = b.clone().expect("a weight kept for its gradient's layout");
                        B::weight_gradient(pick(first), pick(second), w, &[])
                    }
                    _ => B::mode_mix(pick(first), pick(second), mix),
                };
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: ModeMixBackend, C: CheckpointStrategy> ModeMixBackend for Autodiff<B, C> {
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        let (a_tracked, b_tracked) = (a.is_tracked(), b.is_tracked());
        let weight_tracked = b_tracked && mix != ModeMix::GradWeight;
        let out = B::mode_mix(a.primitive.clone(), b.primitive.clone(), mix);
        record::<B, C, _, 2>(ModeMixBackward(mix), [&a, &b], out, |checkpoint| {
            (
                b_tracked.then(|| checkpoint(&a)),
                (a_tracked || weight_tracked).then(|| checkpoint(&b)),
            )
        })
    }

    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        autodiff_chain::<B, C>(x, weights, mixes, bias, extras)
    }
}

/// The chain's gradients (input, three weights, bias) from its output's
/// gradient `g`: the adjoint chain for the input (and the bias), one weight
/// gradient per weight, each mode's times `scale` (periodic; empty: none).
/// `wanted` says which are; `x` is the chain's input, kept where the first
/// weight's gradient is wanted, `kept` the forward's two intermediates.
#[allow(clippy::too_many_arguments)]
pub(super) fn chain_gradients<B: ModeMixBackend>(
    g: FloatTensor<B>,
    mixes: [ModeMix; 3],
    bias_at: Option<ModeBias>,
    x: Option<FloatTensor<B>>,
    weights: [FloatTensor<B>; 3],
    kept: Option<[FloatTensor<B>; 2]>,
    wanted: [bool; 5],
    scale: &[f32],
) -> [Option<FloatTensor<B>>; 5] {
    let [want_x, want_w1, want_w2, want_w3, want_bias] = wanted;
    // The adjoint of step i contracts its output's gradient with its weight.
    let adjoint = mixes.map(|mix| {
        let (back, first, second) = mix.gradients()[0];
        assert!(matches!((first, second), (Operand::U, Operand::B)));
        back
    });
    let back = (want_x || want_w1 || want_w2 || want_bias).then(|| {
        let [w1, w2, w3] = weights.clone();
        let extras = ChainExtras {
            bias_at: None,
            keep: want_w1 || want_w2,
            input_sum: bias_at.filter(|_| want_bias),
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
    let mut weight_grads = [None, None, None];
    for (i, want) in [want_w1, want_w2, want_w3].into_iter().enumerate() {
        if !want {
            continue;
        }
        let a = inputs[i]
            .clone()
            .expect("a step's input is kept for its weight's gradient");
        let u = output_grads[i]
            .clone()
            .expect("a step's output gradient is formed for its weight's");
        let (mix, first, second) = mixes[i].gradients()[1];
        assert_eq!(mix, ModeMix::GradWeight);
        let pick = |o: Operand| match o {
            Operand::A => a.clone(),
            Operand::U => u.clone(),
            Operand::B => unreachable!("a weight's gradient does not take the weight"),
        };
        weight_grads[i] = Some(B::weight_gradient(pick(first), pick(second), weights[i].clone(), scale));
    }
    let [gw1, gw2, gw3] = weight_grads;
    [gx.filter(|_| want_x), gw1, gw2, gw3, gbias]
}

/// What the parents' nodes want, as [`chain_gradients`] takes it.
pub(super) fn wanted<T>(parents: &[Option<T>; 5]) -> [bool; 5] {
    parents.each_ref().map(Option::is_some)
}

/// The chain's backward ([`chain_gradients`]).
#[derive(Debug)]
pub(super) struct ChainBackward {
    pub(super) mixes: [ModeMix; 3],
    pub(super) bias_at: Option<ModeBias>,
}

/// The input (kept where the first weight's gradient is wanted), the weights,
/// the first two results.
pub(super) type ChainState<B> = (Option<FloatTensor<B>>, [NodeId; 3], Option<[FloatTensor<B>; 2]>);

impl<B: ModeMixBackend> Backward<B, 5> for ChainBackward {
    type State = ChainState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let g = grads.consume::<B>(&ops.node);
        let (x, weights, kept) = ops.state;
        let weights = weights.map(|id| checkpointer.retrieve_node_output(id));
        let wanted = wanted(&ops.parents);
        let out = chain_gradients::<B>(g, self.mixes, self.bias_at, x, weights, kept, wanted, &[]);
        for (parent, grad) in ops.parents.iter().zip(out) {
            if let (Some(node), Some(grad)) = (parent, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// Records a chain's node on `Autodiff<B>` (parents: the input, the three
/// weights, the bias or an untracked stand-in) with its state.
pub(super) fn record_chain<B: ModeMixBackend, C: CheckpointStrategy, T: Backward<B, 5, State = ChainState<B>>>(
    op: T,
    x: &FloatTensor<Autodiff<B, C>>,
    first_input: FloatTensor<B>,
    weights: &[FloatTensor<Autodiff<B, C>>; 3],
    bias: Option<FloatTensor<Autodiff<B, C>>>,
    kept: Option<[FloatTensor<B>; 2]>,
    out: FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let bias = bias.unwrap_or_else(|| {
        let none = Tensor::<B, 1>::zeros([1], &B::float_device(&out));
        <Autodiff<B, C> as AutodiffBackend>::from_inner(none.into_primitive().tensor())
    });
    let w1_tracked = weights[0].is_tracked();
    record::<B, C, _, 5>(
        op,
        [x, &weights[0], &weights[1], &weights[2], &bias],
        out,
        |checkpoint| {
            (
                w1_tracked.then_some(first_input),
                [
                    checkpoint(&weights[0]),
                    checkpoint(&weights[1]),
                    checkpoint(&weights[2]),
                ],
                kept,
            )
        },
    )
}

/// The chain on `Autodiff<B>`: `B`'s chain forward (keeping its intermediates
/// where a weight's gradient is wanted), [`ChainBackward`] backward.
pub(super) fn autodiff_chain<B: ModeMixBackend, C: CheckpointStrategy>(
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
    let kept = out.kept;
    let op = ChainBackward {
        mixes,
        bias_at: extras.bias_at,
    };
    let y = record_chain::<B, C, _>(op, &x, x.primitive.clone(), &weights, bias, kept.clone(), out.y);
    ChainOutput {
        y,
        // Kept for this node's backward; a caller asking for them gets them untracked.
        kept: kept
            .filter(|_| extras.keep)
            .map(|k| k.map(<Autodiff<B, C> as AutodiffBackend>::from_inner)),
        input_sum: out.input_sum.map(<Autodiff<B, C> as AutodiffBackend>::from_inner),
    }
}

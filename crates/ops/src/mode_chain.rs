//! Three [`mode_mix`]es in a row, `x·W₁·W₂·W₃` (each step a `Forward` or a
//! `GradInput` contraction), with a bias at one mode of the result: a Tucker
//! weight's contraction `x̂·U₀·C_k·U₁ᵀ` ([`crate::factorized`]). One launch
//! on `CubeBackend` ([`fno_kernels::cgemm::ChainProblem`]), the steps one by
//! one elsewhere. Its backward is the chain of adjoints in reverse (one launch
//! again, which also sums the bias's gradient) and one weight gradient per
//! weight ([`ModeMixBackend::weight_gradient`]), from the forward's kept
//! intermediates.
//!
//! [`spectral_chain`] puts the transforms around it: on autodiff one node,
//! whose backward runs the transforms without the last axis's bin weights (a
//! Mul and a Div, each with an upload, on the separate transform ops). The
//! weights cancel on the input's path, as the chain acts on each mode alone,
//! and they join the weight gradients as the CGEMM's mode scale.

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

use crate::backend::SpectralConvBackend;
use crate::cube_tensor::{cast_to, empty, weight_operand};
use crate::graph::record;
use crate::mode_mix::{ModeMix, ModeMixBackend, Operand};
use crate::rounding::in_dtype;
use crate::spec::{SpectralConvSpec, SpectralError};
use crate::spectrum::{bin_weights, Pass};
use fno_kernels::precision::Precision;

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
    let dtype = y.dtype();
    y + in_dtype(bias.reshape([1, channels, 1, 1]), dtype) * in_dtype(one_hot, dtype)
}

/// The channels of a chain's input (`inputs`) and of each step's result,
/// from the steps' weight shapes.
///
/// # Panics
/// If a step is `GradWeight` or its weight does not take the channels before it.
pub(crate) fn chain_channels(inputs: usize, weights: &[Vec<usize>; 3], mixes: [ModeMix; 3]) -> [usize; 4] {
    let mut c = [inputs; 4];
    for (i, (shape, mix)) in weights.iter().zip(mixes).enumerate() {
        let (n_in, outputs) = match mix {
            ModeMix::Forward => (shape[0], shape[1]),
            ModeMix::GradInput => (shape[1], shape[0]),
            ModeMix::GradWeight => panic!("a chain's steps contract with weights"),
        };
        assert_eq!(n_in, c[i], "{mix:?} chain step of {shape:?} after {} channels", c[i]);
        c[i + 1] = outputs;
    }
    c
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
    let c = chain_channels(inputs, &weights.each_ref().map(|w| w.meta.shape().to_vec()), mixes);
    let mut steps = Vec::with_capacity(3);
    let mut operands = Vec::with_capacity(3);
    for (i, (w, &mix)) in weights.iter().zip(&mixes).enumerate() {
        let shape = w.meta.shape().to_vec();
        let shared = shape[2] == 1 && modes != 1;
        let (w, s) = weight_operand(cast_to(w.clone(), DType::F32), shape[1], modes, shared);
        // GradInput reads the weight transposed and conjugated.
        let (strides, conj) = match mix {
            ModeMix::GradInput => (
                Strides {
                    row: s.col,
                    col: s.row,
                    mode: s.mode,
                },
                true,
            ),
            _ => (s, false),
        };
        steps.push(ChainStep {
            outputs: c[i + 1],
            strides,
            conj,
        });
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

/// The chain's gradients (input, three weights, bias) from its output's
/// gradient `g`: the adjoint chain for the input (and the bias), one weight
/// gradient per weight, each mode's times `scale` (periodic; empty: none).
/// `wanted` says which are; `x` is the chain's input, kept where the first
/// weight's gradient is wanted, `kept` the forward's two intermediates.
#[allow(clippy::too_many_arguments)]
fn chain_gradients<B: ModeMixBackend>(
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
fn wanted<T>(parents: &[Option<T>; 5]) -> [bool; 5] {
    parents.each_ref().map(Option::is_some)
}

/// The chain's backward ([`chain_gradients`]).
#[derive(Debug)]
struct ChainBackward {
    mixes: [ModeMix; 3],
    bias_at: Option<ModeBias>,
}

/// The input (kept where the first weight's gradient is wanted), the weights,
/// the first two results.
type ChainState<B> = (Option<FloatTensor<B>>, [NodeId; 3], Option<[FloatTensor<B>; 2]>);

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
fn record_chain<B: ModeMixBackend, C: CheckpointStrategy, T: Backward<B, 5, State = ChainState<B>>>(
    op: T,
    x: &FloatTensor<Autodiff<B, C>>,
    first_input: FloatTensor<B>,
    weights: &[FloatTensor<Autodiff<B, C>>; 3],
    bias: Option<FloatTensor<Autodiff<B, C>>>,
    kept: Option<[FloatTensor<B>; 2]>,
    out: FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let bias = bias.unwrap_or_else(|| {
        let none = Tensor::<B, 1>::zeros([1], &tensor::<B, 4>(out.clone()).device());
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

/// The transforms around a chain ([`spectral_chain`]): `spec` with the modes
/// the grids use, the input's and the output's grids, and the precision both
/// grids' values hold.
#[derive(Clone, Debug)]
pub struct ChainTransforms {
    pub spec: SpectralConvSpec,
    pub input_grid: Vec<usize>,
    pub output_grid: Vec<usize>,
    pub precision: Precision,
}

/// `x: [B, C₀, *grid]` through its retained spectrum, the chain
/// ([`mode_mix_chain`]) and the inverse to `transforms.output_grid`; one node
/// on autodiff (see [`SpectralConvBackend::spectral_chain`]).
pub fn spectral_chain<B: SpectralConvBackend, const D: usize>(
    x: Tensor<B, D>,
    weights: [Tensor<B, 4>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(Tensor<B, 1>, ModeBias)>,
    transforms: &ChainTransforms,
) -> Result<Tensor<B, D>, SpectralError> {
    let bias = bias.map(|(t, at)| (t.into_primitive().tensor(), at));
    let weights = weights.map(|w| w.into_primitive().tensor());
    let y = B::spectral_chain(x.into_primitive().tensor(), weights, mixes, bias, transforms)?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}

/// [`SpectralConvBackend::spectral_chain`] as its three ops.
pub(crate) fn spectral_chain_by_steps<B: SpectralConvBackend>(
    x: FloatTensor<B>,
    weights: [FloatTensor<B>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(FloatTensor<B>, ModeBias)>,
    t: &ChainTransforms,
) -> Result<FloatTensor<B>, SpectralError> {
    let x_hat = B::retained_spectrum(x, &t.spec, Pass::Forward)?;
    let (bias, bias_at) = match bias {
        Some((b, at)) => (Some(b), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: false,
        input_sum: None,
    };
    let y_hat = B::mode_mix_chain(x_hat, weights, mixes, bias, extras).y;
    B::spectrum_to_grid(y_hat, &t.output_grid, &t.spec, Pass::Forward, t.precision)
}

/// The chain between the transforms as one node: its backward runs both
/// transforms without the last axis's bin weights, which cancel on the input's
/// path (the chain is per mode), and puts them on the weight gradients as a
/// CGEMM mode scale: two passes and their uploads fewer than three nodes.
#[derive(Debug)]
struct TransformedChainBackward {
    chain: ChainBackward,
    transforms: ChainTransforms,
    bins: Vec<f32>,
}

impl<B: SpectralConvBackend> Backward<B, 5> for TransformedChainBackward {
    type State = ChainState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let t = &self.transforms;
        let fail = |e: SpectralError| -> ! { panic!("spectral chain backward: {e}") };
        let g = grads.consume::<B>(&ops.node);
        let g_hat = B::retained_spectrum(g, &t.spec, Pass::AdjointUnweighted).unwrap_or_else(|e| fail(e));
        let (x_hat, weights, kept) = ops.state;
        let weights = weights.map(|id| checkpointer.retrieve_node_output(id));
        let wanted = wanted(&ops.parents);
        let [gx_hat, gw1, gw2, gw3, gbias] = chain_gradients::<B>(
            g_hat,
            self.chain.mixes,
            self.chain.bias_at,
            x_hat,
            weights,
            kept,
            wanted,
            &self.bins,
        );
        let gx = gx_hat.map(|s| {
            B::spectrum_to_grid(s, &t.input_grid, &t.spec, Pass::AdjointUnweighted, t.precision)
                .unwrap_or_else(|e| fail(e))
        });
        for (parent, grad) in ops.parents.iter().zip([gx, gw1, gw2, gw3, gbias]) {
            if let (Some(node), Some(grad)) = (parent, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// [`SpectralConvBackend::spectral_chain`] on `Autodiff<B>`: one node, or the
/// three ops where the grids weigh their last axis's bins differently (a
/// resized output keeping the input's Nyquist bin), which do not cancel.
pub(crate) fn autodiff_spectral_chain<B: SpectralConvBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    weights: [FloatTensor<Autodiff<B, C>>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(FloatTensor<Autodiff<B, C>>, ModeBias)>,
    t: &ChainTransforms,
) -> Result<FloatTensor<Autodiff<B, C>>, SpectralError> {
    let bins = bin_weights(&t.spec, &t.output_grid);
    if bins != bin_weights(&t.spec, &t.input_grid) {
        return spectral_chain_by_steps::<Autodiff<B, C>>(x, weights, mixes, bias, t);
    }
    let x_hat = B::retained_spectrum(x.primitive.clone(), &t.spec, Pass::Forward)?;
    let (bias, bias_at) = match bias {
        Some((b, at)) => (Some(b), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: weights.iter().any(|w| w.is_tracked()),
        input_sum: None,
    };
    let out = B::mode_mix_chain(
        x_hat.clone(),
        weights.clone().map(|w| w.primitive),
        mixes,
        bias.as_ref().map(|b| b.primitive.clone()),
        extras,
    );
    let y = B::spectrum_to_grid(out.y, &t.output_grid, &t.spec, Pass::Forward, t.precision)?;
    let op = TransformedChainBackward {
        chain: ChainBackward { mixes, bias_at },
        transforms: t.clone(),
        bins,
    };
    Ok(record_chain::<B, C, _>(op, &x, x_hat, &weights, bias, out.kept, y))
}

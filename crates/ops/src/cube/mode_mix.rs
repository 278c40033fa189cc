//! [`ModeMixBackend`] on `CubeBackend`: each contraction one CGEMM launch
//! ([`fno_kernels::cgemm::spectral`], no permuted copies; a weight read at its
//! strides), a weight's gradient written at the weight's strides, and a chain
//! of three one launch ([`fno_kernels::cgemm::ChainProblem`]).

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::cgemm::{span, spectral, CgemmProblem, ChainBuffers, ChainProblem, ChainStep, Strides};

use super::tensor::{cast_to, empty, weight_operand, weight_strides};
use crate::mode_mix::{chain_by_steps, chain_channels, is_shared, ChainExtras, ChainOutput, ModeMix, ModeMixBackend};
use crate::reference::mode_mix::sum_modes;

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> ModeMixBackend for CubeBackend<R, F, I, BT> {
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        mode_mix_by_cgemm(a, b, mix)
    }

    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        chain_by_kernel::<R, Self>(x, weights, mixes, bias, extras)
    }

    fn weight_gradient(
        a: FloatTensor<Self>,
        u: FloatTensor<Self>,
        w: FloatTensor<Self>,
        scale: &[f32],
    ) -> FloatTensor<Self> {
        weight_gradient_by_cgemm::<R, Self>(a, u, w, scale)
    }
}

/// [`ModeMixBackend::weight_gradient`] as one CGEMM written at `w`'s strides
/// (its mode sum by [`CgemmProblem::launch_mode_sum`]); the gradient is
/// a tensor of `w`'s shape and strides. Layouts the CGEMM cannot describe,
/// and broadcast ones (a zero stride would write one value from many), take
/// the default's dense result.
fn weight_gradient_by_cgemm<R: CubeRuntime, B: Backend<FloatTensorPrimitive = CubeTensor<R>>>(
    a: CubeTensor<R>,
    u: CubeTensor<R>,
    w: CubeTensor<R>,
    scale: &[f32],
) -> CubeTensor<R> {
    let a = into_contiguous(cast_to(a, DType::F32));
    let u = into_contiguous(cast_to(u, DType::F32));
    let [batch, cin, cout, modes] = ModeMix::GradWeight.extents(&a.meta.shape().to_vec(), &u.meta.shape().to_vec());
    let w_shape = w.meta.shape().to_vec();
    assert_eq!(
        w_shape[..2],
        [cin, cout],
        "a weight gradient of {cin}×{cout} for a weight of {w_shape:?}"
    );
    let shared = w_shape[2] == 1 && modes != 1;
    let distinct = |s: &Strides| s.row > 0 && s.col > 0 && (shared || s.mode > 0);
    let per_mode = spectral::grad_weight(batch, cin, cout, modes);
    let layout = weight_strides(&w, shared).filter(distinct);
    let problem = CgemmProblem {
        c: layout.unwrap_or(per_mode.c),
        mode_scale: scale.to_vec(),
        ..per_mode
    };
    let Some(strides) = layout else {
        // A layout one stride per dim cannot describe: dense, summed by Burn where shared.
        let out = empty(&a, vec![cin, cout, modes, 2]);
        problem.launch(&a.client, &a.handle, &u.handle, &out.handle);
        return if shared { sum_modes::<B>(out) } else { out };
    };
    let extent = span(strides, cin, cout, if shared { 1 } else { modes });
    let handle = a.client.empty(2 * extent * DType::F32.size());
    if shared {
        problem.launch_mode_sum(&a.client, &a.handle, &u.handle, &handle);
    } else {
        problem.launch(&a.client, &a.handle, &u.handle, &handle);
    }
    CubeTensor::new(
        a.client.clone(),
        handle,
        (*w.meta).clone(),
        a.device.clone(),
        DType::F32,
    )
}

/// The contraction as one CGEMM launch, f32 throughout. A weight is read
/// at its strides (Burn's CUDA allocator pads its (re, im) pairs), spectra
/// densely.
fn mode_mix_by_cgemm<R: CubeRuntime>(a: CubeTensor<R>, b: CubeTensor<R>, mix: ModeMix) -> CubeTensor<R> {
    let a = into_contiguous(cast_to(a, DType::F32));
    let b = cast_to(b, DType::F32);
    let (a_shape, b_shape) = (a.meta.shape().to_vec(), b.meta.shape().to_vec());
    let [batch, cin, cout, modes] = mix.extents(&a_shape, &b_shape);
    let shared = is_shared(mix, &a_shape, &b_shape);
    let (b, problem) = match mix {
        ModeMix::Forward | ModeMix::GradInput => {
            let (weight, strides) = weight_operand(b, cout, modes, shared);
            let problem = match mix {
                ModeMix::Forward => spectral::forward(batch, cin, cout, modes, strides),
                _ => spectral::grad_input(batch, cin, cout, modes, strides),
            };
            (weight, problem)
        }
        ModeMix::GradWeight => (into_contiguous(b), spectral::grad_weight(batch, cin, cout, modes)),
    };
    let out = empty(&a, mix.output_shape(&a_shape, &b_shape));
    problem.launch(&a.client, &a.handle, &b.handle, &out.handle);
    out
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
        let p = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(p));
        p.sum_dim(0).reshape([inputs]).into_primitive().tensor()
    });
    ChainOutput { y, kept, input_sum }
}

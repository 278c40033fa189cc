//! [`ModeMixBackend`] on `Fusion`: each contraction, the chain and the
//! weight gradient as one custom op (f32 outputs, as the inner kernels give).

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_fusion::{Fusion, FusionBackend};

use super::{register, register_one};
use crate::mode_mix::{chain_channels, ChainExtras, ChainOutput, ModeMix, ModeMixBackend};

impl<B: FusionBackend + ModeMixBackend> ModeMixBackend for Fusion<B> {
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        let shape = mix.output_shape(&a.shape, &b.shape);
        register_one::<B>("fno_mode_mix", vec![a, b], (shape, DType::F32), move |t| {
            let [a, b] = <[_; 2]>::try_from(t).expect("two operands");
            B::mode_mix(a, b, mix)
        })
    }

    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        let (batch, modes) = (x.shape[0], x.shape[2]);
        let weight_shapes = weights.each_ref().map(|w| w.shape.to_vec());
        let c = chain_channels(x.shape[1], &weight_shapes, mixes);
        let spectrum = |channels: usize| (vec![batch, channels, modes, 2], DType::F32);
        let mut outputs = vec![spectrum(c[3])];
        if extras.keep {
            outputs.extend([spectrum(c[1]), spectrum(c[2])]);
        }
        if extras.input_sum.is_some() {
            outputs.push((vec![c[0]], DType::F32));
        }
        let mut inputs = vec![x];
        inputs.extend(weights);
        inputs.extend(bias);
        let out = register::<B>("fno_mode_mix_chain", inputs, outputs, move |t| {
            let mut t = t.into_iter();
            let x = t.next().expect("x");
            let weights = [(); 3].map(|_| t.next().expect("three weights"));
            let bias = t.next();
            let out = B::mode_mix_chain(x, weights, mixes, bias, extras);
            let kept = out.kept.into_iter().flatten();
            std::iter::once(out.y).chain(kept).chain(out.input_sum).collect()
        });
        let mut out = out.into_iter();
        let y = out.next().expect("the chain's output");
        let kept = extras
            .keep
            .then(|| [(); 2].map(|_| out.next().expect("two kept results")));
        ChainOutput {
            y,
            kept,
            input_sum: out.next(),
        }
    }

    fn weight_gradient(
        a: FloatTensor<Self>,
        u: FloatTensor<Self>,
        w: FloatTensor<Self>,
        scale: &[f32],
    ) -> FloatTensor<Self> {
        let shape = w.shape.to_vec();
        let scale = scale.to_vec();
        register_one::<B>("fno_weight_gradient", vec![a, u, w], (shape, DType::F32), move |t| {
            let [a, u, w] = <[_; 3]>::try_from(t).expect("three operands");
            B::weight_gradient(a, u, w, &scale)
        })
    }
}

//! Blocks recomputed in the backward pass (`Fno::forward_recomputed`): the
//! same prediction and the same gradients of every parameter as the plain
//! backward pass, on the reference path and the kernel path.

use burn::backend::{Autodiff, NdArray};
use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use fno_models::config::DomainPadding;
use fno_models::{Fno, FnoConfig, ModelError};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_testing::{fresh_seed, relative_l2, uniform};

/// Every parameter's gradient, in the module's order.
struct Collect<'a> {
    grads: &'a GradientsParams,
    out: Vec<Option<Vec<f64>>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let g = self.grads.get::<B::InnerBackend, D>(param.id);
        self.out
            .push(g.map(|g| g.into_data().convert::<f64>().to_vec().unwrap()));
    }
}

fn collect<B: AutodiffBackend>(model: &Fno<B>, grads: &GradientsParams) -> Vec<Option<Vec<f64>>>
where
    Fno<B>: AutodiffModule<B>,
{
    let mut visitor = Collect { grads, out: Vec::new() };
    burn::module::Module::visit(model, &mut visitor);
    visitor.out
}

/// The loss `Σ (fno(x) − t)²`, and the parameters' gradients by the plain
/// backward pass and by the recomputing one.
fn both_ways<B, const D: usize>(config: &FnoConfig, shape: [usize; D], imp: SpectralImpl, seed: u64)
where
    B: AutodiffBackend + SpectralConvBackend,
    B::InnerBackend: SpectralConvBackend,
{
    let device = Default::default();
    B::seed(&device, seed);
    let model = Fno::<B>::new(config, &device).unwrap().with_spectral_impl(imp);
    let mut out_shape = shape;
    out_shape[1] = config.out_channels;
    let tensor = |shape: [usize; D], seed| {
        let n = shape.iter().product();
        Tensor::<B, D>::from_data(TensorData::new(uniform(n, seed), shape), &device)
    };
    let (x, t) = (tensor(shape, seed + 1), tensor(out_shape, seed + 2));
    let loss = |y: Tensor<B, D>| (y - t.clone()).powi_scalar(2).sum();

    let plain_loss = loss(model.forward(x.clone()).unwrap());
    let plain = GradientsParams::from_grads(plain_loss.clone().backward(), &model);
    let (y, tape) = model.forward_recomputed(x).unwrap();
    let recomputed_loss = loss(y);
    let mut stages = 0;
    let recomputed = tape
        .backward(&model, recomputed_loss.clone().backward(), &mut || stages += 1)
        .unwrap();

    let value = |l: Tensor<B, 1>| l.into_data().convert::<f64>().to_vec::<f64>().unwrap()[0];
    let (a, b) = (value(plain_loss), value(recomputed_loss));
    assert!((a - b).abs() <= 1e-6 * a.abs(), "losses {a} and {b}");
    assert_eq!(
        stages,
        2 * (config.n_layers + 1),
        "a rerun and a backward pass per block and the lifting"
    );
    let (want, got) = (collect(&model, &plain), collect(&model, &recomputed));
    assert_eq!(want.len(), got.len());
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        let (w, g) = (w.as_ref().expect("every parameter has a gradient"), g.as_ref().unwrap());
        let e = relative_l2(g, w);
        assert!(e <= 1e-5, "parameter {i}: gradients {e:e} apart");
    }
}

#[test]
fn recomputed_blocks_give_the_plain_gradients_on_the_reference_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    // neuraloperator's defaults (linear skip, channel MLP with soft gating), padded.
    let mut config = FnoConfig::new(&[5, 4], 1, 2, 6);
    config.n_layers = 3;
    config.domain_padding = Some(DomainPadding::All(0.25));
    both_ways::<Autodiff<NdArray>, 4>(&config, [2, 1, 12, 8], SpectralImpl::Reference, seed);
    // Pre-activation with group norms, a tanh stabilizer and identity skips, 1-D.
    let mut config = FnoConfig::new(&[5], 2, 1, 4);
    config.n_layers = 2;
    config.preactivation = true;
    config.norm = Some("group_norm".into());
    config.stabilizer = Some("tanh".into());
    config.fno_skip = Some("identity".into());
    both_ways::<Autodiff<NdArray>, 3>(&config, [3, 2, 16], SpectralImpl::Reference, seed);
}

#[test]
fn recomputed_blocks_give_the_plain_gradients_on_the_kernel_path() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let mut config = FnoConfig::new(&[4, 3, 3], 1, 1, 4);
    config.n_layers = 2;
    both_ways::<Autodiff<fno_ops::Wgpu>, 5>(&config, [2, 1, 8, 6, 6], SpectralImpl::Unfused, seed);
}

#[test]
fn recomputing_a_model_with_dropout_is_refused() {
    let mut config = FnoConfig::new(&[4], 1, 1, 4);
    config.channel_mlp_dropout = 0.1;
    let device = Default::default();
    let model = Fno::<Autodiff<NdArray>>::new(&config, &device).unwrap();
    let x = Tensor::<Autodiff<NdArray>, 3>::zeros([1, 1, 8], &device);
    match model.forward_recomputed(x) {
        Err(ModelError::Config(why)) => assert!(why.contains("channel_mlp_dropout"), "{why}"),
        other => panic!("expected a configuration error, got {:?}", other.map(|_| ())),
    }
}

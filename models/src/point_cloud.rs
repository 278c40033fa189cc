//! An FNO over point clouds: the spectral convolutions are non-uniform
//! ([`fno_ops::nonuniform_spectral_conv`]: type 1 NUFFT at the input points, a
//! complex weight per mode, type 2 at the output points), the rest as the grid
//! FNO's (1×1 lifting, skips, GELU, channel-MLP projection). Values live at
//! points, `[B, C, M]`; the points' coordinates (radians) join the inputs as
//! channels, as the grid FNO's positional embedding does.

use burn::module::{Module, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use fno_ops::{gelu, nonuniform_spectral_conv, MatmulPrecision, NufftBackend, PointCloud, SpectralConvBackend};

use crate::fno::{ChannelMlp, Pointwise};

/// The non-uniform spectral convolution as a layer: `weight: [Cin, Cout, K, 2]`
/// over `modes` (`K = Π modes`, FINUFFT's order −N/2 … N/2−1 per dimension).
#[derive(Module, Debug)]
pub struct NonUniformSpectralConv<B: Backend> {
    pub weight: Param<Tensor<B, 4>>,
    modes: Vec<usize>,
    eps: f64,
}

impl<B: SpectralConvBackend + NufftBackend> NonUniformSpectralConv<B> {
    /// neuraloperator's initialisation of spectral weights: normal with
    /// standard deviation `sqrt(2 / (Cin + Cout))`; transforms to tolerance `eps`.
    pub fn new(cin: usize, cout: usize, modes: &[usize], eps: f64, device: &B::Device) -> Self {
        let k: usize = modes.iter().product();
        let std = (2.0 / (cin + cout) as f64).sqrt();
        NonUniformSpectralConv {
            weight: Param::from_tensor(Tensor::random(
                [cin, cout, k, 2],
                Distribution::Normal(0.0, std),
                device,
            )),
            modes: modes.to_vec(),
            eps,
        }
    }

    /// `[B, Cin, M_in]` at `points_in` → `[B, Cout, M_out]` at `points_out`.
    pub fn forward(&self, x: Tensor<B, 3>, points_in: &PointCloud, points_out: &PointCloud) -> Tensor<B, 3> {
        nonuniform_spectral_conv(x, self.weight.val(), points_in, points_out, &self.modes, self.eps)
    }
}

/// The point-cloud FNO's shape.
#[derive(Clone, Debug)]
pub struct PointFnoConfig {
    pub modes: Vec<usize>,
    pub in_channels: usize,
    pub out_channels: usize,
    pub hidden_channels: usize,
    pub n_layers: usize,
    /// The NUFFTs' tolerance.
    pub eps: f64,
}

/// lifting → `n_layers` × (non-uniform spectral convolution + 1×1 skip, GELU
/// between layers) → channel-MLP projection, at the points given.
#[derive(Module, Debug)]
pub struct PointFno<B: Backend> {
    pub lifting: Pointwise<B>,
    pub spectral: Vec<NonUniformSpectralConv<B>>,
    pub skips: Vec<Pointwise<B>>,
    pub projection: ChannelMlp<B>,
}

impl<B: SpectralConvBackend + NufftBackend> PointFno<B> {
    pub fn new(config: &PointFnoConfig, device: &B::Device) -> Self {
        let (dims, hidden) = (config.modes.len(), config.hidden_channels);
        PointFno {
            lifting: Pointwise::new(config.in_channels + dims, hidden, true, device),
            spectral: (0..config.n_layers)
                .map(|_| NonUniformSpectralConv::new(hidden, hidden, &config.modes, config.eps, device))
                .collect(),
            skips: (0..config.n_layers)
                .map(|_| Pointwise::new(hidden, hidden, false, device))
                .collect(),
            projection: ChannelMlp::new(&[hidden, 2 * hidden, config.out_channels], 0.0, device),
        }
    }

    /// The spectral weights, complex pairs (for optimizers that treat them so).
    pub fn complex_params(&self) -> Vec<ParamId> {
        self.spectral.iter().map(|s| s.weight.id).collect()
    }

    /// `x: [B, Cin, M]` at `points` → `[B, Cout, M]` there.
    pub fn forward(&self, x: Tensor<B, 3>, points: &PointCloud) -> Tensor<B, 3> {
        let [batch, _, m] = x.dims();
        let device = x.device();
        let (d, precision) = (points.dims(), MatmulPrecision::F32);
        let coords: Vec<f32> = points.coords().iter().map(|&c| c as f32).collect();
        // [M, d] → [B, d, M]: the coordinates as channels.
        let coords = Tensor::<B, 2>::from_floats(burn::tensor::TensorData::new(coords, [m, d]), &device)
            .transpose()
            .unsqueeze_dim::<3>(0)
            .expand([batch, d, m]);
        let mut h = self.lifting.forward(Tensor::cat(vec![x, coords], 1), precision);
        let last = self.spectral.len().saturating_sub(1);
        for (i, (spectral, skip)) in self.spectral.iter().zip(&self.skips).enumerate() {
            h = spectral.forward(h.clone(), points, points) + skip.forward(h, precision);
            if i < last {
                h = gelu(h);
            }
        }
        self.projection.forward(h, precision)
    }
}

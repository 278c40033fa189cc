//! The spectral weights' form as neuraloperator 2.0 builds it from an FNO's
//! configuration: dense, or a tensorly-torch Tucker, CP or tensor-train
//! factorization (TFNO) of the `[Cin, Cout, *modes]` weight (`[C, *modes]` when
//! separable), with tensorly's ranks ([`crate::rank`]) and tltorch's
//! initialisation. The model holds the stored tensors as parameters and
//! contracts through them ([`fno_ops::factorized`]); checkpoints store them
//! under tltorch's state-dict names.

use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor, TensorData};
use fno_ops::{Factorization, WeightForm};

/// Per stored tensor, the standard deviation of each of its real and
/// imaginary parts at initialisation, or `None` for CP's weights (all one).
/// tltorch's `normal_(0, std)` with neuraloperator's `std = sqrt(2 / (Cin +
/// Cout))`, spread over the tensors so that the product has that std; a complex
/// draw puts `σ/√2` on each part.
fn part_stds(form: &WeightForm, std: f64) -> Vec<Option<f64>> {
    let order = form.shape.len() as f64;
    let count = form.tensors().len();
    let rank_product: f64 = form.ranks.iter().map(|&r| r as f64).product();
    let per_tensor = match form.factorization {
        Factorization::Dense => std,
        Factorization::Tucker => (std / rank_product.sqrt()).powf(1.0 / (order + 1.0)),
        Factorization::Cp => (std / (form.ranks[0] as f64).sqrt()).powf(1.0 / order),
        // tltorch divides by the product of every TT rank, both 1s included.
        Factorization::TensorTrain => (std / rank_product).powf(1.0 / order),
    };
    let part = per_tensor * std::f64::consts::FRAC_1_SQRT_2;
    (0..count)
        .map(|i| (form.factorization != Factorization::Cp || i > 0).then_some(part))
        .collect()
}

/// Freshly drawn stored tensors of one spectral weight of `form` with `h`
/// channels in and out (each `[shape₀, rest·2]`, see [`WeightForm::storage_shape`]).
pub(crate) fn initial_tensors<B: Backend>(form: &WeightForm, h: usize, device: &B::Device) -> Vec<Tensor<B, 2>> {
    let std = (2.0 / (2 * h) as f64).sqrt();
    form.tensors()
        .iter()
        .zip(part_stds(form, std))
        .map(|((_, shape), part)| {
            let values = WeightForm::storage_shape(shape).iter().product();
            let flat = match part {
                Some(s) => Tensor::random([values], Distribution::Normal(0.0, s), device),
                None => {
                    let ones: Vec<f32> = (0..values).map(|i| (i % 2 == 0) as u8 as f32).collect();
                    Tensor::from_data(TensorData::new(ones, [values]), device)
                }
            };
            stored_tensor(flat, shape)
        })
        .collect()
}

/// The flat values of a stored tensor of complex shape `shape` as
/// `[shape₀, rest·2]`, one dense block: allocated flat, so no allocator pads
/// its rows (CUDA's pitches long rows, and a pitched factor is copied
/// wherever a product merges its rows).
pub(crate) fn stored_tensor<B: Backend>(flat: Tensor<B, 1>, shape: &[usize]) -> Tensor<B, 2> {
    flat.reshape(WeightForm::storage_shape(shape))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::Rank;
    use crate::FnoConfig;

    fn form(factorization: &str, rank: f64) -> WeightForm {
        let cfg = FnoConfig {
            factorization: Some(factorization.into()),
            rank: Rank::Fraction(rank),
            ..FnoConfig::from_json(
                r#"{"n_modes": [16, 16], "in_channels": 1, "out_channels": 1, "hidden_channels": 64}"#,
            )
            .unwrap()
        };
        cfg.weight_form().unwrap()
    }

    #[test]
    fn configurations_give_tensorly_ranks_and_tltorch_stds() {
        // (64, 64, 16, 9): tensorly's ranks at 0.1.
        let tucker = form("tucker", 0.1);
        assert_eq!(tucker.shape, vec![64, 64, 16, 9]);
        assert_eq!(tucker.ranks, vec![35, 35, 9, 5]);
        assert_eq!(form("cp", 0.1).ranks, vec![386]);
        assert_eq!(form("tt", 0.1).ranks, vec![1, 37, 23, 7, 1]);
        assert!(form("dense", 0.1).ranks.is_empty());

        let std: f64 = 0.125;
        let tucker_std = (std / (35.0f64 * 35.0 * 9.0 * 5.0).sqrt()).powf(0.2) / 2f64.sqrt();
        assert!(part_stds(&tucker, std)
            .iter()
            .all(|s| (s.unwrap() - tucker_std).abs() < 1e-15));
        let cp = part_stds(&form("cp", 0.1), std);
        assert_eq!(cp[0], None);
        assert!((cp[1].unwrap() - (std / 386f64.sqrt()).powf(0.25) / 2f64.sqrt()).abs() < 1e-15);
        let tt = part_stds(&form("tt", 0.1), std);
        assert!((tt[2].unwrap() - (std / (37.0 * 23.0 * 7.0)).powf(0.25) / 2f64.sqrt()).abs() < 1e-15);

        let k = tucker.keys("fno_blocks.convs.0.weight");
        assert_eq!(k[0], ("fno_blocks.convs.0.weight.core".into(), vec![35, 35, 9, 5, 2]));
        assert_eq!(
            k[4],
            ("fno_blocks.convs.0.weight.factors.factor_3".into(), vec![9, 5, 2])
        );
    }

    #[test]
    fn cp_weights_start_at_one_and_factors_at_their_std() {
        type B = burn::backend::NdArray<f64>;
        let cp = form("cp", 0.1);
        let tensors = initial_tensors::<B>(&cp, 64, &Default::default());
        let weights: Vec<f64> = tensors[0].to_data().to_vec().unwrap();
        assert_eq!(weights.len(), 2 * 386);
        assert!(weights.chunks(2).all(|p| p == [1.0, 0.0]));
        let factor: Vec<f64> = tensors[1].to_data().to_vec().unwrap();
        let sd = (factor.iter().map(|v| v * v).sum::<f64>() / factor.len() as f64).sqrt();
        let want = part_stds(&cp, 0.125)[1].unwrap();
        assert!((sd / want - 1.0).abs() < 0.05, "{sd} vs {want}");
    }
}

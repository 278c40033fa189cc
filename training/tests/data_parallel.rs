//! Data-parallel gradients: replicas that each take a share of the batch and
//! sum their gradients through burn-collective every step get the whole
//! batch's gradients (a loss summed over samples, as our losses are) and
//! train to the parameters one replica reaches on the whole batch
//! (FusedAdamW), and to each other's exactly.

use burn::backend::{Autodiff, NdArray};
use burn::collective::{self, CollectiveConfig, PeerId};
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use fno_training::data_parallel::{broadcast_parameters, shard, sum_gradients};
use fno_training::optim::FusedAdamW;

type B = Autodiff<NdArray>;

const ROWS: usize = 12;
const STEPS: usize = 4;

#[derive(Module, Debug)]
struct Toy<B: Backend> {
    linear: Linear<B>,
    scale: Param<Tensor<B, 1>>,
}

fn fixed(n: usize, f: f64) -> Vec<f64> {
    (0..n).map(|i| (i as f64 * f).sin() * 0.4).collect()
}

fn param<const D: usize>(v: Vec<f64>, shape: [usize; D]) -> Param<Tensor<B, D>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(v, shape), &Default::default()))
}

/// Fixed weights: Burn initialises a parameter lazily, on each clone's first use.
fn toy() -> Toy<B> {
    let mut linear = LinearConfig::new(6, 4).init::<B>(&Default::default());
    linear.weight = param(fixed(24, 0.7), [6, 4]);
    linear.bias = Some(param(fixed(4, 1.3), [4]));
    Toy {
        linear,
        scale: param(fixed(4, 0.5), [4]),
    }
}

/// Rows `rows` of the batch: inputs `[n, 6]` and targets `[n, 4]`.
fn batch(rows: std::ops::Range<usize>) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let n = rows.len();
    let x = rows
        .clone()
        .flat_map(|r| (0..6).map(move |c| ((r * 6 + c) as f64 * 0.37).sin()));
    let y = rows.flat_map(|r| (0..4).map(move |c| ((r * 4 + c) as f64 * 0.11).cos()));
    let device = Default::default();
    (
        Tensor::from_data(TensorData::new(x.collect(), [n, 6]), &device),
        Tensor::from_data(TensorData::new(y.collect(), [n, 4]), &device),
    )
}

/// A tensor's values.
fn values<K: Backend, const D: usize>(t: Tensor<K, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().unwrap()
}

/// What a replica ends with: its first step's gradients (after the exchange),
/// its parameters after the last step and each step's loss (summed over the
/// replicas along with the gradients).
struct Trained {
    first_gradients: Vec<f64>,
    params: Vec<f64>,
    losses: Vec<f64>,
}

/// `STEPS` AdamW steps on rows `rows`, the gradients summed with the other
/// peers' where `peer` is given.
fn train(rows: std::ops::Range<usize>, peer: Option<PeerId>) -> Trained {
    let (x, y) = batch(rows);
    let mut model = toy();
    let mut optim = FusedAdamW::new(1e-6, 1e-2).init::<B, Toy<B>>(None);
    let mut first_gradients = Vec::new();
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let prediction = model.linear.forward(x.clone()) * model.scale.val().unsqueeze::<2>();
        let loss = (prediction - y.clone()).powi_scalar(2).sum();
        let mut grads = GradientsParams::from_grads(loss.backward(), &model);
        let mut loss = loss.inner();
        if let Some(peer) = peer {
            (grads, loss) = sum_gradients(grads, &model, peer, loss).unwrap();
        }
        losses.push(values(loss)[0]);
        if step == 0 {
            let bias = model.linear.bias.as_ref().unwrap().id;
            first_gradients = [
                values(grads.get::<NdArray, 2>(model.linear.weight.id).unwrap()),
                values(grads.get::<NdArray, 1>(bias).unwrap()),
                values(grads.get::<NdArray, 1>(model.scale.id).unwrap()),
            ]
            .concat();
        }
        model = optim.step(1e-2 / (1 + step) as f64, model, grads);
    }
    let params = [
        values(model.linear.weight.val()),
        values(model.linear.bias.as_ref().unwrap().val()),
        values(model.scale.val()),
    ]
    .concat();
    Trained {
        first_gradients,
        params,
        losses,
    }
}

/// Each of `peers` replicas trains on its share of the rows in a thread of its own.
fn replicas(peers: usize, exchange: bool) -> Vec<Trained> {
    let share = ROWS / peers;
    let threads: Vec<_> = (0..peers)
        .map(|i| {
            std::thread::spawn(move || {
                let peer = PeerId::from(i as u32);
                if exchange {
                    let config = CollectiveConfig::default().with_num_devices(peers);
                    collective::register::<NdArray>(peer, Default::default(), config).unwrap();
                }
                let params = train(i * share..(i + 1) * share, exchange.then_some(peer));
                if exchange {
                    collective::finish_collective::<NdArray>(peer).unwrap();
                }
                params
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn largest_difference(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0, f64::max)
}

#[test]
fn replicas_summing_gradients_train_as_one_on_the_whole_batch() {
    let _turn = crate::train::ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let whole = train(0..ROWS, None);
    for peers in [2, 3] {
        collective::reset_collective::<NdArray>();
        let trained = replicas(peers, true);
        for (i, t) in trained.iter().enumerate() {
            let off = largest_difference(&t.first_gradients, &whole.first_gradients);
            assert!(
                off < 1e-6,
                "{peers} peers: replica {i}'s gradients are {off:.2e} from the whole batch's"
            );
            assert_eq!(
                t.params, trained[0].params,
                "{peers} peers: replica {i} differs from replica 0"
            );
            let off = largest_difference(&t.losses, &whole.losses);
            assert!(
                off < 1e-6,
                "{peers} peers: replica {i}'s summed losses are {off:.2e} off"
            );
            let off = largest_difference(&t.params, &whole.params);
            assert!(
                off < 1e-5,
                "{peers} peers: replica {i} is {off:.2e} from one replica on the whole batch"
            );
        }
    }
    // Without the exchange each replica fits its own rows: the test sees the difference.
    let apart = replicas(2, false);
    assert!(largest_difference(&apart[0].params, &whole.params) > 1e-3);
}

#[test]
fn replicas_start_from_the_root_replicas_parameters() {
    let _turn = crate::train::ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    collective::reset_collective::<NdArray>();
    let peers = 3;
    let params = |model: &Toy<B>| {
        [
            values(model.linear.weight.val()),
            values(model.linear.bias.as_ref().unwrap().val()),
            values(model.scale.val()),
        ]
        .concat()
    };
    let threads: Vec<_> = (0..peers)
        .map(|i| {
            std::thread::spawn(move || {
                let peer = PeerId::from(i as u32);
                let config = CollectiveConfig::default().with_num_devices(peers);
                collective::register::<NdArray>(peer, Default::default(), config).unwrap();
                // Each replica starts elsewhere.
                let mut own = toy();
                own.scale = param(fixed(4, 0.5 + i as f64), [4]);
                let before = params(&own);
                let model = broadcast_parameters(own, peer, i == 0).unwrap();
                collective::finish_collective::<NdArray>(peer).unwrap();
                let trainable = model.scale.val().is_require_grad();
                (before, params(&model), trainable)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let root = &results[0].0;
    assert_ne!(&results[1].0, root, "the replicas did start apart");
    for (i, (_, after, trainable)) in results.iter().enumerate() {
        assert_eq!(after, root, "replica {i} after the broadcast");
        assert!(trainable, "replica {i}'s parameters still take gradients");
    }
}

#[test]
fn shards_cover_a_batch_in_order_and_differ_by_one_at_most() {
    for len in 0..20 {
        for world in 1..6 {
            let shards: Vec<_> = (0..world).map(|rank| shard(len, rank, world)).collect();
            assert_eq!(shards[0].start, 0);
            assert_eq!(shards[world - 1].end, len);
            for pair in shards.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{len} in {world}: {shards:?}");
                assert!(pair[0].len() == pair[1].len() || pair[0].len() == pair[1].len() + 1);
            }
        }
    }
    assert_eq!(shard(10, 1, 4), 3..6);
}

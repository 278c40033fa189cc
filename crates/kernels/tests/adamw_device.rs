//! The AdamW kernel on wgpu (lavapipe in CI) against its f64 oracle: three
//! tensors of different lengths in one call (one longer than the launch's
//! threads, so they stride), a first step (no moments yet) and a later one,
//! with weight decay, of real values and of complex pairs (whose second
//! moments agree within each pair), the later one of a gradient still
//! carrying a loss scale.

use cubecl::prelude::*;
use fno_kernels::adamw::{adamw, adamw_cpu, AdamWBuffers, AdamWStep};
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

use crate::wgpu_client;

#[test]
fn adamw_steps_match_the_oracle() {
    let client = wgpu_client();
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let upload = |x: &[f32]| client.create_from_slice(f32::as_bytes(x));
    let lens = [1000, 6, 600_000];
    for (time, with_moments, pairs) in [(1, false, false), (7, true, false), (1, false, true), (7, true, true)] {
        let step = AdamWStep {
            lr: 3e-3,
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-6,
            weight_decay: 1e-2,
            time,
            pairs,
            // A loss scale's inverse on the later steps: applied first.
            grad_scale: if with_moments { 1.0 / 1024.0 } else { 1.0 },
        };
        let inputs: Vec<[Vec<f32>; 4]> = lens
            .iter()
            .enumerate()
            .map(|(k, &len)| {
                let s = seed + 4 * k as u64;
                let v = uniform_f32(len, s + 3).iter().map(|x| x * x).collect();
                [uniform_f32(len, s), uniform_f32(len, s + 1), uniform_f32(len, s + 2), v]
            })
            .collect();
        let handles: Vec<_> = inputs.iter().map(|t| t.clone().map(|v| upload(&v))).collect();
        let outs: Vec<[_; 3]> = lens
            .iter()
            .map(|&len| [(); 3].map(|_| upload(&vec![f32::NAN; len])))
            .collect();
        let buffers: Vec<_> = (0..lens.len())
            .map(|k| AdamWBuffers {
                param: &handles[k][0],
                grad: &handles[k][1],
                moments: with_moments.then_some((&handles[k][2], &handles[k][3])),
                out: [&outs[k][0], &outs[k][1], &outs[k][2]],
                len: lens[k],
            })
            .collect();
        adamw(&client, &step, &buffers);
        for (k, [p, g, m, v]) in inputs.iter().enumerate() {
            let moments = (f64s(m), f64s(v));
            let (want_p, want_m, want_v) = adamw_cpu(
                &step,
                &f64s(p),
                &f64s(g),
                with_moments.then_some((&moments.0[..], &moments.1[..])),
            );
            let [got_p, got_m, got_v] = outs[k]
                .clone()
                .map(|h| f64s(f32::from_bytes(&client.read_one(h).unwrap())));
            if pairs && !with_moments {
                assert!(
                    got_v.chunks(2).all(|p| p[0] == p[1]),
                    "a complex value's parts got different second moments"
                );
            }
            for (name, got, want) in [
                ("parameter", got_p, want_p),
                ("moment 1", got_m, want_m),
                ("moment 2", got_v, want_v),
            ] {
                let e = relative_l2(&got, &want);
                assert!(
                    e < 1e-6,
                    "tensor {k}, step {time} (pairs {pairs}): {name} error {e:e} (seed {seed})"
                );
            }
        }
    }
}

//! The AdamW kernel on wgpu (lavapipe in CI) against its f64 oracle: a first
//! step (no moments yet) and a later one, with weight decay, of real values
//! and of complex pairs (whose second moments agree within each pair), the
//! later one of a gradient still carrying a loss scale.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::adamw::{adamw, adamw_cpu, AdamWStep};
use fno_kernels::testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn adamw_steps_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let len = 1000;
    let (p, g) = (uniform_f32(len, seed), uniform_f32(len, seed + 1));
    let m = uniform_f32(len, seed + 2);
    let v: Vec<f32> = uniform_f32(len, seed + 3).iter().map(|x| x * x).collect();
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
        let upload = |x: &[f32]| client.create_from_slice(f32::as_bytes(x));
        let (hp, hg, hm, hv) = (upload(&p), upload(&g), upload(&m), upload(&v));
        let out = [(); 3].map(|_| upload(&vec![f32::NAN; len]));
        adamw(
            &client,
            &step,
            (&hp, &hg),
            with_moments.then_some((&hm, &hv)),
            (&out[0], &out[1], &out[2]),
            len,
        );
        let moments = (f64s(&m), f64s(&v));
        let (want_p, want_m, want_v) = adamw_cpu(
            &step,
            &f64s(&p),
            &f64s(&g),
            with_moments.then_some((&moments.0[..], &moments.1[..])),
        );
        let [got_p, got_m, got_v] = out.map(|h| f64s(f32::from_bytes(&client.read_one(h).unwrap())));
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
                "step {time} (pairs {pairs}): {name} error {e:e} (seed {seed})"
            );
        }
    }
}

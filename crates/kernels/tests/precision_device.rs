//! The conversions kernels make between the f32 they compute in and the
//! values their buffers store, against the host's (the `half` crate's
//! round-to-nearest-even): ties, subnormals, overflow, NaN, signed zero.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::precision::{load_value, store_value, Bf16InF32, Native, Precision, Storage, Stored};
use fno_testing::{fresh_seed, normal_f32};

/// Stores each f32 as `S` holds it, and reads it back as f32.
#[cube(launch_unchecked)]
fn store_and_load<S: Storage>(input: &Array<f32>, stored: &mut Array<S::Elem>, loaded: &mut Array<f32>) {
    let i = ABSOLUTE_POS;
    if i < input.len() {
        stored[i] = store_value::<f32, S>(input[i]);
        loaded[i] = load_value::<f32, S>(stored[i]);
    }
}

/// Edge values of both half formats, then N(0, 1) draws scaled over decades.
fn values(seed: u64) -> Vec<f32> {
    let ulp_bf16 = 2f32.powi(-7);
    let ulp_f16 = 2f32.powi(-10);
    let mut v = vec![
        0.0,
        -0.0,
        1.0 + ulp_bf16 / 2.0,       // a tie: to even (1.0)
        1.0 + 3.0 * ulp_bf16 / 2.0, // a tie: to even (1 + 2 ulp)
        1.0 + ulp_f16 / 2.0,
        1.0 + 3.0 * ulp_f16 / 2.0,
        65504.0,
        65520.0, // rounds to f16 infinity
        1e5,
        -1e5,
        6e-8, // f16 subnormal
        1e-40,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    v.extend(
        normal_f32(1000, seed)
            .iter()
            .enumerate()
            .map(|(i, x)| x * 10f32.powi(i as i32 % 9 - 4)),
    );
    v
}

fn round_trip<S: Storage>(client: &ComputeClient<WgpuRuntime>, stored: Stored, input: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = input.len();
    let in_h = client.create_from_slice(f32::as_bytes(input));
    let stored_h = client.empty(n * stored.bytes());
    let loaded_h = client.empty(n * 4);
    unsafe {
        store_and_load::launch_unchecked::<S, WgpuRuntime>(
            client,
            CubeCount::Static(n.div_ceil(64) as u32, 1, 1),
            CubeDim::new_1d(64),
            ArrayArg::from_raw_parts(in_h, n),
            ArrayArg::from_raw_parts(stored_h.clone(), n),
            ArrayArg::from_raw_parts(loaded_h.clone(), n),
        );
    }
    let kept = stored.decode(&client.read_one(stored_h).unwrap());
    let loaded = f32::from_bytes(&client.read_one(loaded_h).unwrap()).to_vec();
    (kept, loaded)
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn kernel_conversions_round_as_the_host() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let input = values(seed);
    for stored in [Stored::F16, Stored::BF16InF32] {
        let (kept, loaded) = match stored {
            Stored::F16 => round_trip::<Native<half::f16>>(&client, stored, &input),
            _ => round_trip::<Bf16InF32>(&client, stored, &input),
        };
        let host = stored.round(&input);
        for (i, x) in input.iter().enumerate() {
            assert!(
                same(kept[i], host[i]) && same(loaded[i], host[i]),
                "{stored:?} {x:e} (seed {seed}): kernel stores {:e}, reads back {:e}, host {:e}",
                kept[i],
                loaded[i],
                host[i]
            );
        }
    }
    let nan = round_trip::<Bf16InF32>(&client, Stored::BF16InF32, &[f32::NAN]).1[0];
    assert!(nan.is_nan(), "bf16 rounding kept NaN as {nan}");
}

#[test]
fn precisions_parse_and_resolve() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    for p in Precision::ALL {
        assert_eq!(p.to_string().parse::<Precision>(), Ok(p));
    }
    assert!("fp16".parse::<Precision>().unwrap_err().contains("f32, f16 or bf16"));
    assert_eq!(Precision::F16.stored_on(&client), Stored::F16);
    // WGSL has no bf16 buffers.
    assert_eq!(Precision::BF16.stored_on(&client), Stored::BF16InF32);
}

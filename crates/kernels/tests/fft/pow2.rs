//! Power-of-two lengths: every length to 2^16 and radix cap, inner axes and
//! several axes at once, norms, random shapes, and a round trip.

use super::*;
use fno_testing::{relative_l2_f32, uniform};

#[test]
fn every_power_of_two_1d() {
    let seed = drawn_seed();
    let mut all = Vec::new();
    // Every kind on every other length (each new kernel costs a compilation
    // on lavapipe), C2C forward on all.
    for log2 in 1..=16 {
        let n = 1usize << log2;
        let batch = (1usize << 15 >> log2).clamp(1, 4) + 1;
        let cases = [
            FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward),
            FftDesc::new(&[batch, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
        ];
        let kinds = if log2 % 2 == 1 || log2 == 16 { 4 } else { 1 };
        all.extend(cases.into_iter().take(kinds));
    }
    check_all("every_power_of_two_1d", seed, all, DEFAULT);
    // Radix 16 below 1024 points, where the default is 8, and radix 32 (the
    // 4·8 composite butterfly), on fewer cases: every kernel compiles anew on lavapipe.
    let capped: Vec<(FftDesc, usize)> = (1..=9)
        .flat_map(|log2| {
            let n = 1usize << log2;
            [
                (FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Forward), 16),
                (
                    FftDesc::new(&[3, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
                    16,
                ),
                (FftDesc::new(&[3, n], &[-1], FftKind::C2C, Direction::Inverse), 32),
            ]
        })
        .collect();
    for cap in [16, 32] {
        let cases: Vec<FftDesc> = capped.iter().filter(|c| c.1 == cap).map(|c| c.0.clone()).collect();
        let options = DeviceOptions {
            max_radix: Some(cap),
            ..PLANE
        };
        check_all(
            &format!("every_power_of_two_1d, radix cap {cap}"),
            seed,
            cases,
            &[options],
        );
    }
}

#[test]
fn inner_axes_and_multi_dimensional() {
    let cases = vec![
        FftDesc::new(&[2, 64, 3], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[3, 128, 16], &[-2], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[5, 32, 32], &[-2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 32], &[1, 2, 3], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 32], &[-3, -2, -1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 16, 8, 17], &[-3, -2, -1], FftKind::C2R, Direction::Inverse),
        // The real axis is the last one listed, even when it is not the last dimension.
        FftDesc::new(&[4, 64, 8], &[-1, -2], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[4, 33, 8], &[-1, -2], FftKind::C2R, Direction::Inverse),
        FftDesc::new(&[8, 2048, 2], &[1], FftKind::C2C, Direction::Forward),
        FftDesc::new(&[2, 4096, 4], &[1], FftKind::R2C, Direction::Forward),
        FftDesc::new(&[2, 1024], &[0, 1], FftKind::C2C, Direction::Inverse),
    ];
    check_all(
        "inner_axes_and_multi_dimensional",
        drawn_seed(),
        cases,
        PLANE_SEPARATE_OR_WIDE_COLUMNS,
    );
}

#[test]
fn normalisations() {
    let client = client();
    let mut seed = drawn_seed();
    for norm in [Norm::Backward, Norm::Forward, Norm::Ortho] {
        for desc in [
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::C2C, Direction::Forward),
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::C2C, Direction::Inverse),
            FftDesc::new(&[2, 16, 32], &[-2, -1], FftKind::R2C, Direction::Forward),
            FftDesc::new(&[2, 16, 17], &[-2, -1], FftKind::C2R, Direction::Inverse),
        ] {
            let desc = desc.norm(norm);
            let e = check_with(&client, &desc, seed, DeviceOptions::default());
            assert!(e <= BOUND, "{desc:?} (seed {seed}): {e:.3e}");
            seed += 1;
        }
    }
}

/// The most elements of a random shape.
const MAX_RANDOM_ELEMENTS: usize = 1 << 20;

/// Twelve random shapes, axes, kinds and directions (drawn from the printed
/// seed), in a plane launch and in separate ones.
#[test]
fn random_shapes_and_axes() {
    let seed = drawn_seed();
    let mut draws = uniform(64 * 32, seed).into_iter();
    let mut next = move || draws.next().expect("enough draws for 12 shapes");
    let mut cases = Vec::new();
    while cases.len() < 12 {
        let rank = 1 + (next().abs() * 3.99) as usize;
        let shape: Vec<usize> = (0..rank)
            .map(|_| {
                if next() > 0.0 {
                    1usize << (next().abs() * 6.99) as usize
                } else {
                    1 + (next().abs() * 99.99) as usize
                }
            })
            .collect();
        // Up to 2^20 elements: lavapipe cannot allocate buffers of the
        // largest shapes drawn (4 axes near 100: 170 MB).
        if shape.iter().product::<usize>() > MAX_RANDOM_ELEMENTS {
            continue;
        }
        let mut axes: Vec<isize> = (0..rank as isize).filter(|_| next() > -0.3).collect();
        if axes.is_empty() {
            axes.push(rank as isize - 1);
        }
        if next() > 0.0 {
            axes.reverse();
        }
        let kind = match (next().abs() * 2.99) as usize {
            0 => FftKind::C2C,
            1 => FftKind::R2C,
            _ => FftKind::C2R,
        };
        let last = *axes.last().unwrap() as usize;
        let mut desc = match kind {
            FftKind::C2C => {
                let dir = if next() > 0.0 {
                    Direction::Forward
                } else {
                    Direction::Inverse
                };
                FftDesc::new(&shape, &axes, kind, dir)
            }
            FftKind::R2C => FftDesc::new(&shape, &axes, kind, Direction::Forward),
            FftKind::C2R => {
                let mut s = shape.clone();
                let n = s[last].max(2);
                s[last] = n / 2 + 1;
                let lengths: Vec<usize> = axes
                    .iter()
                    .map(|&a| if a as usize == last { n } else { shape[a as usize] })
                    .collect();
                FftDesc::new(&s, &axes, kind, Direction::Inverse).lengths(&lengths)
            }
        };
        if kind == FftKind::R2C && shape[last] < 2 {
            desc.shape[last] = 2;
        }
        cases.push(desc);
    }
    check_all("random_shapes_and_axes", seed, cases, PLANE_OR_SEPARATE);
}

#[test]
fn inverse_of_forward_is_identity() {
    let client = client();
    let seed = drawn_seed();
    for (i, (shape, axes)) in [
        (vec![3usize, 64, 32], vec![-2isize, -1]),
        (vec![2, 8, 16, 4096], vec![-1]),
        (vec![4, 8, 8, 8], vec![1, 2, 3]),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = seed + i as u64;
        let fwd = FftPlan::new(FftDesc::new(&shape, &axes, FftKind::R2C, Direction::Forward)).unwrap();
        let lengths: Vec<usize> = axes
            .iter()
            .map(|&a| shape[(a + shape.len() as isize) as usize % shape.len()])
            .collect();
        let inv =
            FftPlan::new(FftDesc::new(fwd.output_shape(), &axes, FftKind::C2R, Direction::Inverse).lengths(&lengths))
                .unwrap();
        let x = uniform_f32(fwd.input_floats(), seed);
        let x_h = client.create_from_slice(f32::as_bytes(&x));
        let spec = client.create_from_slice(f32::as_bytes(&vec![POISON; fwd.output_floats()]));
        let back = client.create_from_slice(f32::as_bytes(&vec![POISON; inv.output_floats()]));
        fwd.on_device(&client).unwrap().execute(&x_h, &spec).unwrap();
        inv.on_device(&client).unwrap().execute(&spec, &back).unwrap();
        let y = f32::from_bytes(&client.read_one(back).unwrap()).to_vec();
        assert!(
            y.iter().all(|v| v.is_finite()),
            "{shape:?} {axes:?} (seed {seed}): unwritten or non-finite output"
        );
        let err = relative_l2_f32(&y, &x);
        assert!(err <= BOUND, "{shape:?} {axes:?} (seed {seed}): {err:.3e}");
    }
}

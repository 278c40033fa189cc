//! Half-precision buffers (f16, bf16): the f32 plans with inputs, outputs
//! and intermediate buffers in half, against the f64 oracle of the input as
//! stored, N(0, 1) inputs; relative L2 within 1e-3 (f16) and 1e-2 (bf16).
//! lavapipe has no bf16 buffers: bf16 runs there as f32 rounded to bf16.

use super::bluestein::BLUESTEIN;
use super::rader::rader_cases;
use super::resident::{resident_cases, RESIDENT};
use super::windows::{any_length_window_cases, window_cases};
use super::*;

const HALF: [Precision; 2] = [Precision::F16, Precision::BF16];

/// [`check_all`] of every case in each half precision, the worst error of each printed.
fn check_half(test: &str, seed: u64, cases: impl IntoIterator<Item = FftDesc>, options: &[DeviceOptions]) {
    check_half_on(&crate::wgpu_clients(), test, seed, cases, options);
}

/// [`check_half`] with the cases spread over `clients`' devices.
pub(super) fn check_half_on<R: Runtime>(
    clients: &[ComputeClient<R>],
    test: &str,
    seed: u64,
    cases: impl IntoIterator<Item = FftDesc>,
    options: &[DeviceOptions],
) {
    let cases: Vec<FftDesc> = cases.into_iter().collect();
    for precision in HALF {
        let in_precision = cases.iter().map(|desc| desc.clone().precision(precision));
        check_all_on(clients, &format!("{test} {precision}"), seed, in_precision, options);
    }
}

#[test]
fn half_powers_of_two_every_kind() {
    let cases = (1..=12).flat_map(|k| every_kind(1 << k));
    check_half(
        "half_powers_of_two_every_kind",
        drawn_seed(),
        cases,
        &[DeviceOptions::default()],
    );
}

#[test]
fn half_any_length_every_kind() {
    let lengths = [3, 5, 7, 12, 17, 31, 85, 97, 100, 127, 210, 421, 1000, 2187];
    let seed = drawn_seed();
    let cases = lengths.into_iter().flat_map(every_kind);
    check_half("half_any_length_every_kind", seed, cases, &[DeviceOptions::default()]);
    // Primes through Rader's algorithm (the default) and Bluestein's.
    check_half(
        "half_primes",
        seed,
        rader_cases(),
        &[DeviceOptions::default(), BLUESTEIN],
    );
}

#[test]
fn half_windows_axes_and_four_step() {
    let cases = window_cases().into_iter().chain(any_length_window_cases());
    check_half(
        "half_windows_axes_and_four_step",
        drawn_seed(),
        cases,
        &[DeviceOptions::default()],
    );
}

/// Resident cubes stage their next tile's input in shared memory as it lies
/// in global memory: half values there.
#[test]
fn half_resident_and_plane() {
    let planes = [
        FftDesc::new(&[3, 64, 64], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[16, 9]),
        FftDesc::new(&[3, 16, 9], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[16, 9])
            .lengths(&[64, 64]),
        FftDesc::new(&[2, 48, 40], &[-2, -1], FftKind::C2C, Direction::Inverse),
    ];
    let seed = drawn_seed();
    check_half("half_resident", seed, resident_cases(false), &[RESIDENT]);
    check_half("half_plane", seed, planes, &[ALWAYS_PLANE, SEPARATE]);
}

/// Input and output in different precisions, as a mixed-precision spectral
/// convolution runs them: f32 activations to a `half` spectrum (truncated
/// forward transforms) and back (zero-padded inverses), over one and several
/// launches (the scratch between them in half).
pub(super) fn mixed_cases(half: Precision) -> Vec<FftDesc> {
    let forward = [
        FftDesc::new(&[2, 3, 64, 64], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[16, 9]),
        FftDesc::new(&[2, 3, 85, 85], &[-2, -1], FftKind::R2C, Direction::Forward).modes(&[12, 7]),
        FftDesc::new(&[2, 8, 16, 12], &[-3, -2, -1], FftKind::R2C, Direction::Forward).modes(&[5, 8, 5]),
        FftDesc::new(&[2, 1 << 14], &[-1], FftKind::C2C, Direction::Forward).modes(&[301]),
    ];
    let inverse = [
        FftDesc::new(&[2, 3, 16, 9], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[16, 9])
            .lengths(&[64, 64]),
        FftDesc::new(&[2, 3, 12, 7], &[-2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[12, 7])
            .lengths(&[85, 85]),
        FftDesc::new(&[2, 5, 8, 5], &[-3, -2, -1], FftKind::C2R, Direction::Inverse)
            .modes(&[5, 8, 5])
            .lengths(&[8, 16, 12]),
        FftDesc::new(&[2, 301], &[-1], FftKind::C2C, Direction::Inverse)
            .modes(&[301])
            .lengths(&[1 << 14]),
    ];
    forward
        .into_iter()
        .map(|desc| desc.precisions(Precision::F32, half))
        .chain(inverse.into_iter().map(|desc| desc.precisions(half, Precision::F32)))
        .collect()
}

/// [`mixed_cases`] in f16 and bf16, plane and separate axes.
#[test]
fn mixed_input_and_output_precisions() {
    let seed = drawn_seed();
    for half in HALF {
        check_all(
            &format!("mixed_input_and_output_precisions {half}"),
            seed,
            mixed_cases(half),
            &[DeviceOptions::default(), SEPARATE],
        );
    }
}

/// Buffers are sized by the stored value: a half plan rejects an f32-sized
/// buffer's half (too short) and names the precision.
#[test]
fn half_buffers_are_checked_in_their_bytes() {
    let client = client();
    let desc = FftDesc::new(&[2, 64], &[-1], FftKind::C2C, Direction::Forward).precision(Precision::F16);
    let device = device_with(&client, &desc, DeviceOptions::default());
    assert_eq!(
        (device.input_stored(), device.output_stored()),
        (Stored::F16, Stored::F16)
    );
    let short = client.empty(2 * 64 * 2 * 2 - 2);
    let output = client.empty(2 * 64 * 2 * 2);
    let err = device.execute(&short, &output).unwrap_err().to_string();
    assert!(err.contains("f16") && err.contains("512 (256 values of f16)"), "{err}");
}

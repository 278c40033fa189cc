//! Row checksums of the CGEMM (`cgemm/checksum.rs`) on wgpu (lavapipe in CI):
//! fault-free products of every spectral shape flag nothing; bits flipped in
//! the output are detected where they matter (else harmless), and the repair
//! launch computes the faulty rows again.

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::cgemm::{spectral, CgemmProblem, ModeBias, OperandPrecisions};
use fno_kernels::fault::{draw_below, FaultCounts, FaultRecord, FaultTolerance};
use fno_kernels::precision::Precision;
use fno_testing::oracle;
use fno_testing::{fresh_seed, normal_f32, relative_l2};

/// The spectral convolution's three contractions on one shape, plain,
/// scaled per mode and with a bias at one mode.
fn problems(batch: usize, cin: usize, cout: usize, modes: usize) -> Vec<CgemmProblem> {
    let dense = spectral::dense_weight(cout, modes, false);
    let mut all = Vec::new();
    for problem in [
        spectral::forward(batch, cin, cout, modes, dense),
        spectral::grad_input(batch, cin, cout, modes, dense),
        spectral::grad_weight(batch, cin, cout, modes),
        spectral::forward(batch, cin, cout, modes, spectral::dense_weight(cout, modes, true)),
    ] {
        let scaled = CgemmProblem {
            mode_scale: (0..modes.min(3)).map(|i| 1.0 + i as f32).collect(),
            ..problem.clone()
        };
        let biased = CgemmProblem {
            bias: Some(ModeBias {
                mode: modes / 2,
                factor: 2.5,
            }),
            ..scaled.clone()
        };
        all.extend([problem, scaled, biased]);
    }
    all
}

/// A problem's operands on the device, its f64 oracle, and its output as
/// the product wrote it.
struct Product {
    problem: CgemmProblem,
    a: Handle,
    b: Handle,
    c: Handle,
    bias: Option<Handle>,
    want: Vec<f64>,
}

impl Product {
    fn new<R: Runtime>(client: &ComputeClient<R>, problem: &CgemmProblem, a: Vec<f32>, b: Vec<f32>) -> Self {
        let (_, _, ec) = problem.extents();
        let [sa, sb, sc] =
            [problem.precisions.a, problem.precisions.b, problem.precisions.c].map(|p| p.stored_on(client));
        let (a, b) = (sa.round(&a), sb.round(&b));
        let bias = normal_f32(problem.q, 7);
        let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
        let want = oracle::cgemm(problem, &f64s(&a), &f64s(&b), Some(&f64s(&bias)));
        let (a, b) = (
            client.create_from_slice(&sa.encode(&a)),
            client.create_from_slice(&sb.encode(&b)),
        );
        let c = client.create_from_slice(&sc.encode(&vec![f32::NAN; 2 * ec]));
        let bias = problem.bias.map(|_| client.create_from_slice(f32::as_bytes(&bias)));
        match &bias {
            Some(h) => problem.launch_biased(client, &a, &b, &c, h),
            None => problem.launch(client, &a, &b, &c),
        }
        Product {
            problem: problem.clone(),
            a,
            b,
            c,
            bias,
            want,
        }
    }

    fn check<R: Runtime>(&self, client: &ComputeClient<R>, tolerance: FaultTolerance, record: &FaultRecord) {
        let bias = self.bias.as_ref();
        self.problem
            .check(client, &self.a, &self.b, &self.c, bias, tolerance, record);
    }

    /// Relative L2 error of the output against the oracle.
    fn error<R: Runtime>(&self, client: &ComputeClient<R>) -> f64 {
        let sc = self.problem.precisions.c.stored_on(client);
        let got: Vec<f64> = sc
            .decode(&client.read_one(self.c.clone()).unwrap())
            .iter()
            .map(|&v| v as f64)
            .collect();
        relative_l2(&got, &self.want)
    }
}

fn operands(problem: &CgemmProblem, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let (ea, eb, _) = problem.extents();
    (normal_f32(2 * ea, seed), normal_f32(2 * eb, seed + 1))
}

/// Random, constant and wide-range operands, f32 and half-precision
/// spectra, reductions split among cubes: no row flagged in either mode,
/// and the output is the product's.
#[test]
fn checked_products_flag_no_fault_free_row() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let shapes = [(3, 5, 7, 9), (16, 8, 3, 33), (2, 64, 64, 5), (3000, 3, 2, 3)];
    let mut checked = 0;
    for (s, &(batch, cin, cout, modes)) in shapes.iter().enumerate() {
        for problem in problems(batch, cin, cout, modes) {
            let half = CgemmProblem {
                precisions: OperandPrecisions {
                    a: Precision::F16,
                    b: Precision::F32,
                    c: Precision::F16,
                },
                ..problem.clone()
            };
            for problem in [problem, half] {
                let (a, b) = operands(&problem, seed + s as u64);
                let constant = |v: &[f32]| vec![0.75f32; v.len()];
                // Magnitudes from 1e-2 to 1e2 in one row (an f16 output overflows
                // beyond: a non-finite output from finite operands counts as a fault).
                let wide = |v: &[f32]| -> Vec<f32> {
                    v.iter()
                        .enumerate()
                        .map(|(i, x)| x * 10f32.powi((i % 5) as i32 - 2))
                        .collect()
                };
                for (a, b) in [(a.clone(), b.clone()), (constant(&a), constant(&b)), (wide(&a), b)] {
                    for tolerance in [FaultTolerance::Detect, FaultTolerance::Correct] {
                        let record = FaultRecord::new(&client);
                        let product = Product::new(&client, &problem, a.clone(), b.clone());
                        product.check(&client, tolerance, &record);
                        assert_eq!(
                            record.counts(&client),
                            FaultCounts::default(),
                            "{problem:?} {tolerance:?} (seed {seed})"
                        );
                        let bound = if problem.precisions.c == Precision::F16 {
                            2e-3
                        } else {
                            1e-5
                        };
                        let e = product.error(&client);
                        assert!(e < bound, "{problem:?} {tolerance:?} (seed {seed}): error {e:e}");
                        checked += 1;
                    }
                }
            }
        }
    }
    println!("{checked} checked products, no fault flagged");
}

/// Single bits flipped in random output elements (half the trials in the
/// exponent's and the mantissa's top bits): a flip the check misses leaves
/// the output within the check's round-off bound (harmless); under
/// `Correct` every detected row is computed again and the output is the
/// product's. Several faulty rows in one product are each found and fixed.
#[test]
fn output_faults_are_detected_and_corrected() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let mut state = seed;
    let mut below = |n: u64| draw_below(&mut state, n);
    let (mut detected, mut harmless) = (0, 0);
    for (s, problem) in problems(6, 12, 10, 17).into_iter().enumerate() {
        let (a, b) = operands(&problem, seed + s as u64);
        for trial in 0..8 {
            let faults = if trial == 7 { 3 } else { 1 };
            // Distinct rows: elements of distinct (p, k).
            let mut rows = Vec::new();
            while rows.len() < faults {
                let (p, k) = (below(problem.p as u64) as usize, below(problem.k as u64) as usize);
                if !rows.contains(&(p, k)) {
                    rows.push((p, k));
                }
            }
            for tolerance in [FaultTolerance::Detect, FaultTolerance::Correct] {
                let record = FaultRecord::new(&client);
                let product = Product::new(&client, &problem, a.clone(), b.clone());
                let mut bits = Vec::new();
                for &(p, k) in &rows {
                    let q = below(problem.q as u64) as usize;
                    let element = p * problem.c.row + q * problem.c.col + k * problem.c.mode;
                    let bit = if trial < 4 {
                        20 + below(12) as u32
                    } else {
                        below(32) as u32
                    };
                    problem
                        .inject_output_fault(&client, &product.c, element, below(2) == 1, bit, &record)
                        .unwrap();
                    bits.push(bit);
                }
                product.check(&client, tolerance, &record);
                let counts = record.counts(&client);
                let what = format!("{problem:?} {tolerance:?} rows {rows:?} bits {bits:?} (seed {seed})");
                assert_eq!(counts.injected, faults as u64, "{what}");
                assert!(counts.detected <= faults as u64, "{what}: {counts:?}");
                let e = product.error(&client);
                match tolerance {
                    FaultTolerance::Correct => {
                        assert_eq!(counts.corrected, counts.detected, "{what}");
                        if counts.detected == faults as u64 {
                            assert!(e < 1e-5, "{what}: corrected output off by {e:e}");
                        }
                    }
                    _ => assert_eq!(counts.corrected, 0, "{what}"),
                }
                // Within the check's round-off bound (`CGEMM_TOLERANCE_FACTOR`).
                if counts.detected == 0 {
                    assert!(e < 1e-4, "{what}: a missed fault moved the output by {e:e}");
                    harmless += 1;
                }
                detected += counts.detected;
            }
        }
    }
    println!("{detected} faults detected, {harmless} products with only harmless flips");
    assert!(detected > 0);
}

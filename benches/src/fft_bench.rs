//! Times our FFT plans on one device and prints one JSON line per case, for
//! `fft_compare.py` to set beside cuFFT (torch.fft) measured in the same run.
//!
//! Usage: `fft_bench [cuda|wgpu] [--quick] [--sizes pow2|any|smooth|resident|truncated|fno|radix|odd|rader|plane] [--only case:n,...] [--plane auto|always|never] [--primes rader|bluestein] [--column-signals N] [--max-radix N] [--shared-limit BYTES] [--prefetch auto|always|never] [--resident-cubes N] [--odd-real twins|widen] [--shared-layout modelled|plain] [--butterfly-pairs N] [--convolution-row-threads N] [--unit-strides runtime|compiled] [--planning rules|measured] [--precision f32|f16|bf16] [--tensor-cores auto|never]`.
//! `--plane` chooses when the last two axes run as one launch (default auto);
//! `--primes` how primes with a 7-smooth predecessor (211, 421) run (default rader);
//! `--column-signals N` the fewest signals side by side in a column tile;
//! `--max-radix N` the largest power-of-two radix of a pass (default 8 below
//! 1024 points, 16 from there);
//! `--prefetch` when stage cubes stay resident and fill their next tile
//! while transforming one (default auto), `--resident-cubes N` how many;
//! `--odd-real` whether odd-length real transforms pair two signals per
//! complex transform (twins, default) or widen each;
//! `--butterfly-pairs N` the most output pairs a thread computes of a
//! butterfly of an odd first pass from radix 17 on, split over threads
//! (default 12, 6 on resident cubes; 0 splits none);
//! `--convolution-row-threads N` the threads a cube of Rader's rows aims for
//! (default 128);
//! `--unit-strides compiled` compiles contiguous axes' stride into the
//! stage kernels (default: runtime);
//! `--planning measured` lowers each case with `FftPlan::on_device_measured`
//! (times the candidates the rules cannot rank; default: rules);
//! `--precision` what the buffers hold (default f32; half precision computes
//! in f32 and stores f16 or bf16, GB/s still count f32 bytes);
//! `--tensor-cores never` keeps half-precision C2C signals of 256 points
//! off the tensor cores (default auto: on them where the device has them);
//! `--sizes fno` the 2D transforms of an FNO layer (B16 C64 128² and 256²);
//! `--fault-tolerance` times each case unchecked, detecting and correcting
//! faults by checksums, in turn, and prints the ratios.
//! `pow2` (default): batched 1D C2C and R2C with 2^26 elements, rfft2 of
//! 64²…512², and R2C keeping N/4 modes. `any`: the same batched C2C/R2C on
//! lengths with large prime factors (85, 141, 211, 421, 4099: Bluestein),
//! 7-smooth ones (1000, 3·2^k: mixed radix), and rfft2 on the Darcy grids.
//! `radix`: batched C2C and R2C on the primes 11…73 and lengths with such a
//! factor (85, 141, 11·64, 47·64, …), each prime's own butterfly where
//! `MAX_PRIME_RADIX` allows, Rader's or Bluestein's algorithm beyond.
//! `smooth`: batched C2C and R2C on 7-smooth lengths (3·2^k, 360, 1215, …).
//! `resident`: batched C2C on the 7-smooth lengths from 6144 to 12960 whose
//! rows run on resident cubes, one signal a cube (and R2C 12288 and 13824,
//! whose packed halves do).
//! `odd`: R2C and C2R of odd lengths, 1D, 2D and FNO layers on odd grids.
//! `rader`: batched C2C, R2C and C2R on primes whose Rader convolution runs
//! in two passes.
//! `plane`: rfft2 and irfft2 on square grids from 48² to 155², smooth and
//! not, whose image fits one plane launch.
//! `truncated`: few retained modes of rows (R2C) and of inner-axis columns
//! (C2C), each as a direct DFT and as an FFT, to place the planner's choice.

use std::time::Instant;

use cubecl::prelude::*;
use fno_kernels::fft::{
    DeviceOptions, DirectDft, Direction, FaultTolerance, FftDesc, FftKind, FftPlan, ModeOrder, OddReal, PlaneFusion,
    Planning, PrimeAlgorithm, SharedLayout, TensorCores, TilePrefetch, UnitStrides,
};
use fno_kernels::precision::Precision;
use fno_testing::uniform_f32;

struct Case {
    name: &'static str,
    desc: FftDesc,
    /// Bytes a transform must move: input read once, output written once.
    bytes: usize,
    prune: bool,
    direct: DirectDft,
}

fn cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let mut out = Vec::new();
    for log2 in 6..=12 {
        let n = 1usize << log2;
        let batch = total / n;
        out.push(Case {
            name: "fft_c2c_1d",
            desc: FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward),
            bytes: 2 * total * 8,
            prune: true,
            direct: DirectDft::Auto,
        });
        // Truncated C2C with and without last-pass pruning: what pruning saves.
        for (name, prune) in [("fft_c2c_1d_modes_n/8", false), ("fft_c2c_1d_modes_n/8_pruned", true)] {
            out.push(Case {
                name,
                desc: FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward).modes(&[n / 8]),
                bytes: total * 8 + batch * (n / 8) * 8,
                prune,
                direct: DirectDft::Auto,
            });
        }
        out.push(Case {
            name: "rfft_1d",
            desc: FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward),
            bytes: total * 4 + batch * (n / 2 + 1) * 8,
            prune: true,
            direct: DirectDft::Auto,
        });
        out.push(Case {
            name: "rfft_1d_modes_n/4",
            desc: FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward).modes(&[n / 4]),
            bytes: total * 4 + batch * (n / 4) * 8,
            prune: true,
            direct: DirectDft::Auto,
        });
    }
    for log2 in 6..=9 {
        let n = 1usize << log2;
        let batch = total / (n * n);
        out.push(Case {
            name: "rfft2",
            desc: FftDesc::new(&[batch, n, n], &[-2, -1], FftKind::R2C, Direction::Forward),
            bytes: total * 4 + batch * n * (n / 2 + 1) * 8,
            prune: true,
            direct: DirectDft::Auto,
        });
    }
    out
}

/// Batched 1D C2C and R2C of `n`, about `total` elements per case.
fn batched_1d(n: usize, total: usize) -> [Case; 2] {
    let batch = (total / n).max(1);
    [
        Case {
            name: "fft_c2c_1d",
            desc: FftDesc::new(&[batch, n], &[-1], FftKind::C2C, Direction::Forward),
            bytes: 2 * batch * n * 8,
            prune: false,
            direct: DirectDft::Auto,
        },
        Case {
            name: "rfft_1d",
            desc: FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward),
            bytes: batch * n * 4 + batch * (n / 2 + 1) * 8,
            prune: false,
            direct: DirectDft::Auto,
        },
    ]
}

/// Lengths that are not powers of two: large prime factors and 7-smooth ones.
fn any_size_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let mut out = Vec::new();
    let three_pow2 = (5..=12).map(|k| 3usize << k);
    for n in [85usize, 141, 211, 421, 1000, 4099].into_iter().chain(three_pow2) {
        out.extend(batched_1d(n, total));
    }
    for n in [85usize, 141, 211, 421] {
        out.push(rfft2_case(n, total));
    }
    out
}

/// A batched rfft2 of `n`² grids, about `total` samples.
fn rfft2_case(n: usize, total: usize) -> Case {
    let batch = (total / (n * n)).max(1);
    Case {
        name: "rfft2",
        desc: FftDesc::new(&[batch, n, n], &[-2, -1], FftKind::R2C, Direction::Forward),
        bytes: batch * n * n * 4 + batch * n * (n / 2 + 1) * 8,
        prune: false,
        direct: DirectDft::Auto,
    }
}

/// Batched C2C and R2C of 7-smooth lengths, `any`'s 3·2^k and products of 2,
/// 3, 5 and 7 whose passes have unequal butterfly counts (some pass fills its
/// threads' last round only in part), and rfft2 on such grids.
fn smooth_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let three_pow2 = (5..=12).map(|k| 3usize << k);
    let others = [
        360usize, 504, 720, 1000, 1008, 1176, 1215, 1296, 1512, 1620, 2592, 3024, 3240, 3645, 5040, 6912, 7168, 10240,
    ];
    let mut lengths: Vec<usize> = three_pow2.chain(others).collect();
    lengths.sort_unstable();
    let mut out: Vec<Case> = lengths.into_iter().flat_map(|n| batched_1d(n, total)).collect();
    for n in [96usize, 360, 384, 504] {
        out.push(rfft2_case(n, total));
    }
    out
}

/// Batched C2C on 7-smooth lengths whose stage takes one signal a resident
/// cube (tiles from 48 KB to what fits twice in shared memory), their plans
/// of three passes on up to 512 threads, and R2C of twice two of them.
fn resident_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let c2c = [
        6144usize, 6400, 6720, 6912, 7168, 7680, 7776, 8000, 8192, 8640, 9072, 9216, 9408, 9600, 10080, 10240, 10368,
        10752, 12096, 12288, 12960,
    ];
    let mut out: Vec<Case> = c2c
        .into_iter()
        .map(|n| {
            let [c2c, _] = batched_1d(n, total);
            c2c
        })
        .collect();
    out.extend([12288usize, 13824].into_iter().map(|n| {
        let [_, r2c] = batched_1d(n, total);
        r2c
    }));
    out
}

/// Batched R2C and C2R of odd lengths, whole and 2D, and FNO layers on odd
/// grids: where two real signals share one complex transform
/// (`--odd-real twins`) instead of each widening to its own.
fn odd_real_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let mut out = Vec::new();
    for n in [47usize, 85, 141, 211, 421, 1215, 4099] {
        let batch = (total / n).max(1);
        let [_, r2c] = batched_1d(n, total);
        out.push(r2c);
        out.push(irfft_1d_case(n, batch));
    }
    for n in [85usize, 141, 211, 421] {
        let batch = (total / (n * n)).max(1);
        let rfft2 = rfft2_case(n, total);
        let bytes = rfft2.bytes;
        out.push(rfft2);
        out.push(irfft2_case(n, batch, bytes));
    }
    for (batch, channels, n, m) in [(32, 32, 85, 24), (16, 64, 141, 32), (16, 64, 211, 48), (8, 64, 421, 48)] {
        out.extend(fno_layer_cases(batch, channels, n, m));
    }
    out
}

/// Whole rfft2 and irfft2 on the square grids whose image fits a plane launch
/// (both axes in one cube), smooth and not: where `--plane always` and
/// `--plane never` place the planner's rule.
fn plane_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let mut out = Vec::new();
    for n in [
        48usize, 64, 75, 85, 96, 100, 105, 112, 120, 128, 135, 141, 147, 150, 155,
    ] {
        let rfft2 = rfft2_case(n, total);
        out.push(irfft2_case(n, (total / (n * n)).max(1), rfft2.bytes));
        out.push(rfft2);
    }
    out
}

/// Batched C2C and R2C on every prime from 11 to 73 and on lengths with such a
/// factor: where a prime's own butterfly beats Rader's or Bluestein's algorithm.
fn prime_radix_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let primes = (11usize..=73).filter(|&p| (2..p).all(|d| p % d != 0));
    let composites = [85usize, 141, 11 << 6, 13 * 96, 47 << 6, 61 * 48];
    primes.chain(composites).flat_map(|n| batched_1d(n, total)).collect()
}

/// Batched C2C, R2C and C2R on primes whose Rader convolution (of `p − 1`, a
/// 7-smooth length) splits into two radices up to 32 (193 = 12·16 + 1 …
/// 811 = 27·30 + 1): the planner runs those up to 24 as two passes, and 541,
/// 701, 757 and 811 (radices of 25 to 30) in three.
fn rader_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let primes = [193usize, 257, 281, 337, 379, 421, 433, 541, 577, 701, 757, 811];
    primes
        .into_iter()
        .flat_map(|n| {
            let batch = (total / n).max(1);
            let [c2c, r2c] = batched_1d(n, total);
            [c2c, r2c, irfft_1d_case(n, batch)]
        })
        .collect()
}

/// A batched irfft2 to `n`² grids, moving `bytes`.
fn irfft2_case(n: usize, batch: usize, bytes: usize) -> Case {
    Case {
        name: "irfft2",
        desc: FftDesc::new(&[batch, n, n / 2 + 1], &[-2, -1], FftKind::C2R, Direction::Inverse).lengths(&[n, n]),
        bytes,
        prune: false,
        direct: DirectDft::Auto,
    }
}

/// A batched C2R of `n` real samples from `n/2 + 1` bins.
fn irfft_1d_case(n: usize, batch: usize) -> Case {
    Case {
        name: "irfft_1d",
        desc: FftDesc::new(&[batch, n / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[n]),
        bytes: batch * n * 4 + batch * (n / 2 + 1) * 8,
        prune: false,
        direct: DirectDft::Auto,
    }
}

/// Truncated rows (R2C keeping `m` bins) and columns (C2C over an inner axis of
/// 32 signals keeping the centred `m` modes), direct and as an FFT.
fn truncated_cases(total_log2: u32) -> Vec<Case> {
    let total = 1usize << total_log2;
    let mut out = Vec::new();
    for n in [85usize, 141, 211, 256, 421, 1000, 4099] {
        for m in [8usize, 16, 24, 48, 96] {
            for direct in [DirectDft::Always, DirectDft::Never] {
                if m <= n / 2 + 1 {
                    let batch = (total / n).max(1);
                    out.push(Case {
                        name: "rfft_1d_modes",
                        desc: FftDesc::new(&[batch, n], &[-1], FftKind::R2C, Direction::Forward).modes(&[m]),
                        bytes: batch * n * 4 + batch * m * 8,
                        prune: false,
                        direct,
                    });
                }
                if m <= n {
                    let batch = (total / (2 * n * 32)).max(1);
                    out.push(Case {
                        name: "fft_c2c_col_modes",
                        desc: FftDesc::new(&[batch, n, 32], &[1], FftKind::C2C, Direction::Forward).modes(&[m]),
                        bytes: batch * (n + m) * 32 * 8,
                        prune: false,
                        direct,
                    });
                }
            }
        }
    }
    out
}

/// The 2D transforms of an FNO layer's spectral convolution as the ops call
/// them (B16 C64, n_modes (m, m) of an n² grid, neuraloperator's mode orders):
/// the truncating rfft2 and the zero-padding irfft2.
fn fno_cases() -> Vec<Case> {
    [(128usize, 32usize), (256, 64)]
        .into_iter()
        .flat_map(|(n, m)| fno_layer_cases(16, 64, n, m))
        .collect()
}

/// The truncated rfft2 and zero-padded irfft2 of one FNO layer on `[batch,
/// channels, n, n]` keeping `m` rows and `m/2 + 1` bins.
fn fno_layer_cases(batch: usize, channels: usize, n: usize, m: usize) -> [Case; 2] {
    let stored = [m, m / 2 + 1];
    let bytes = batch * channels * (n * n * 4 + stored[0] * stored[1] * 8);
    [
        Case {
            name: "fno_rfft2",
            desc: FftDesc::new(&[batch, channels, n, n], &[-2, -1], FftKind::R2C, Direction::Forward)
                .modes(&stored)
                .mode_order(ModeOrder::Shifted),
            bytes,
            prune: false,
            direct: DirectDft::Auto,
        },
        Case {
            name: "fno_irfft2",
            desc: FftDesc::new(
                &[batch, channels, stored[0], stored[1]],
                &[-2, -1],
                FftKind::C2R,
                Direction::Inverse,
            )
            .modes(&stored)
            .lengths(&[n, n])
            .mode_order(ModeOrder::ShiftedOddLower),
            bytes,
            prune: false,
            direct: DirectDft::Auto,
        },
    ]
}

/// Relative L2 error of the device result against the f64 oracle, on a small batch.
fn verify<R: Runtime>(client: &ComputeClient<R>, desc: &FftDesc, options: DeviceOptions) -> f64 {
    let mut small = desc.clone();
    small.shape[0] = small.shape[0].min(3);
    let plan = FftPlan::new(small).expect("valid case");
    let device = plan.on_device_with(client, options).unwrap();
    let (from, to) = (device.input_stored(), device.output_stored());
    let x = from.round(&uniform_f32(plan.input_floats(), 7));
    let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = plan.execute_cpu(&wide).unwrap();
    let input = client.create_from_slice(&from.encode(&x));
    let output = client.create_from_slice(&to.encode(&vec![f32::NAN; plan.output_floats()]));
    device.execute(&input, &output).unwrap();
    let got = to.decode(&client.read_one(output).unwrap());
    let num: f64 = got.iter().zip(&want).map(|(g, w)| (*g as f64 - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    if got.iter().any(|g| !g.is_finite()) {
        return f64::INFINITY;
    }
    (num / den).sqrt()
}

fn bench<R: Runtime>(
    client: ComputeClient<R>,
    device_name: &str,
    cases: Vec<Case>,
    reps: usize,
    only: Option<&str>,
    // Choices from the command line; each case sets its own pruning and DFT choice.
    base: DeviceOptions,
    planning: Planning,
) {
    // Options the library rejects (a radix cap that is not a power of two, too
    // little shared memory) end the run with its message instead of a panic.
    let probe = FftPlan::new(FftDesc::new(&[1, 8], &[-1], FftKind::C2C, Direction::Forward)).expect("valid case");
    if let Err(e) = probe.on_device_with(&client, base) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    println!("{{\"case\": \"env\", \"device\": \"{device_name}\"}}");
    for case in cases {
        // Labelled by the last axis's length (an inverse's output grid).
        let lengths = case.desc.lengths.as_ref().unwrap_or(&case.desc.shape);
        let label = format!("{}:{}", case.name, lengths[lengths.len() - 1]);
        if only.is_some_and(|o| !o.split(',').any(|x| x == label)) {
            continue;
        }
        let options = DeviceOptions {
            prune: case.prune,
            direct_dft: case.direct,
            ..base
        };
        let err = verify(&client, &case.desc, options);
        // f32 plans at 1e-5; half plans at issue 48's bounds (f16 1e-3, bf16 1e-2).
        let bound = match case.desc.output_precision {
            Precision::F32 => 1e-5,
            Precision::F16 => 1e-3,
            Precision::BF16 => 1e-2,
        };
        assert!(
            err < bound,
            "{} {:?}: relative error {err:.3e} against the oracle",
            case.name,
            case.desc.shape
        );
        let plan = FftPlan::new(case.desc.clone()).expect("valid case");
        // Lowering time: uploads, and for measured plans the candidates'
        // compilations (the rule's kernels compiled already by `verify`) and timings.
        let planned = Instant::now();
        let device = plan
            .on_device_planned(&client, options, planning)
            .expect("supported case");
        let plan_ms = planned.elapsed().as_secs_f64() * 1e3;
        // The timed candidates as [cube size of Rader's rows (0: the default),
        // strides compiled (1) or not, the plane option ("Auto" or "Never"), ms].
        let measured: Vec<String> = device
            .measurements()
            .iter()
            .map(|m| {
                format!(
                    "[{}, {}, \"{:?}\", {:.5}]",
                    m.options.convolution_row_threads.unwrap_or(0),
                    u8::from(m.options.unit_strides == UnitStrides::Compiled),
                    m.options.plane,
                    m.ms
                )
            })
            .collect();
        let measured = format!("[{}]", measured.join(", "));
        let input = client.create_from_slice(&device.input_stored().encode(&uniform_f32(plan.input_floats(), 7)));
        let output = client.empty(plan.output_floats() * device.output_stored().bytes());
        for _ in 0..3 {
            device.execute(&input, &output).unwrap();
        }
        cubecl::future::block_on(client.sync()).unwrap();
        // Median of several timed groups of `reps` back-to-back executions.
        let mut times = Vec::new();
        for _ in 0..7 {
            let start = Instant::now();
            for _ in 0..reps {
                device.execute(&input, &output).unwrap();
            }
            cubecl::future::block_on(client.sync()).unwrap();
            times.push(start.elapsed().as_secs_f64() * 1e3 / reps as f64);
        }
        times.sort_by(f64::total_cmp);
        let ms = times[times.len() / 2];
        let shape = &case.desc.shape;
        // Columns transform axis 1 of [batch, n, 32]; the other cases their
        // trailing axes, of which the last has length n (an inverse's output grid).
        let column = case.name == "fft_c2c_col_modes";
        let n = if column { shape[1] } else { lengths[lengths.len() - 1] };
        let batch: usize = if column {
            shape[0]
        } else {
            shape[..shape.len() - case.desc.axes.len()].iter().product()
        };
        let modes = case.desc.modes.as_ref().map(|m| m[0]).unwrap_or(0);
        let recipe = device.recipe();
        println!(
            "{{\"case\": \"{}\", \"precision\": \"{}\", \"n\": {n}, \"batch\": {batch}, \"modes\": {modes}, \"direct\": \"{:?}\", \"launches\": {}, \"radices\": {:?}, \"threads\": {:?}, \"signals_per_cube\": {:?}, \"one_row\": {}, \"plane_threads\": {:?}, \"tensor_core_launches\": {}, \"measured\": {measured}, \"plan_ms\": {plan_ms:.1}, \"ms\": {ms:.5}, \"gbps\": {:.1}, \"rel_err\": {err:.2e}}}",
            case.name,
            case.desc.output_precision,
            case.direct,
            recipe.launches.len(),
            recipe.stages().map(|cfg| &cfg.radices).collect::<Vec<_>>(),
            recipe.stages().map(|cfg| cfg.threads_per_signal).collect::<Vec<_>>(),
            recipe.stages().map(|cfg| cfg.signals_per_cube).collect::<Vec<_>>(),
            recipe.stages().filter(|cfg| cfg.one_tile_row).count(),
            recipe.planes().map(|cfg| cfg.threads()).collect::<Vec<_>>(),
            recipe.tensor_cores().count(),
            // Bytes counted in f32: the same figure in every precision, so GB/s compare times.
            case.bytes as f64 / ms / 1e6
        );
        drop((input, output));
        client.memory_cleanup();
    }
}

/// Times each case's plan unchecked, detecting and correcting faults
/// (default lowering otherwise), groups of `reps` executions taken in turn
/// so that the three share the device's state; prints one JSON line a case
/// with the medians and the checked plans' ratios to the unchecked one.
fn bench_fault_tolerance<R: Runtime>(client: ComputeClient<R>, cases: Vec<Case>, reps: usize, only: Option<&str>) {
    println!("{{\"case\": \"env\", \"fault_tolerance\": true}}");
    let modes = [FaultTolerance::Off, FaultTolerance::Detect, FaultTolerance::Correct];
    for case in cases {
        let lengths = case.desc.lengths.as_ref().unwrap_or(&case.desc.shape);
        let label = format!("{}:{}", case.name, lengths[lengths.len() - 1]);
        if only.is_some_and(|o| !o.split(',').any(|x| x == label)) {
            continue;
        }
        let options = DeviceOptions {
            prune: case.prune,
            direct_dft: case.direct,
            ..DeviceOptions::default()
        };
        let devices: Vec<_> = modes
            .iter()
            .map(|&mode| {
                let desc = case.desc.clone().fault_tolerance(mode);
                // The unchecked plans are verified by the plain benchmark.
                if mode != FaultTolerance::Off {
                    let err = verify(&client, &desc, options);
                    assert!(
                        err < 1e-5,
                        "{label} {mode:?}: relative error {err:.3e} against the oracle"
                    );
                }
                FftPlan::new(desc)
                    .and_then(|plan| plan.on_device_with(&client, options))
                    .expect("supported case")
            })
            .collect();
        let plan = devices[0].plan();
        let input = client.create_from_slice(&devices[0].input_stored().encode(&uniform_f32(plan.input_floats(), 7)));
        let output = client.empty(plan.output_floats() * devices[0].output_stored().bytes());
        for device in &devices {
            for _ in 0..3 {
                device.execute(&input, &output).unwrap();
            }
        }
        cubecl::future::block_on(client.sync()).unwrap();
        let mut times = vec![Vec::new(); devices.len()];
        for _ in 0..7 {
            for (device, times) in devices.iter().zip(&mut times) {
                let start = Instant::now();
                for _ in 0..reps {
                    device.execute(&input, &output).unwrap();
                }
                cubecl::future::block_on(client.sync()).unwrap();
                times.push(start.elapsed().as_secs_f64() * 1e3 / reps as f64);
            }
        }
        let ms: Vec<f64> = times
            .iter_mut()
            .map(|t| {
                t.sort_by(f64::total_cmp);
                t[t.len() / 2]
            })
            .collect();
        let flagged: Vec<u64> = devices.iter().map(|d| d.fault_counts().detected).collect();
        let batch: usize = case.desc.shape[..case.desc.shape.len() - case.desc.axes.len()]
            .iter()
            .product();
        let modes = case.desc.modes.as_ref().map(|m| m[0]).unwrap_or(0);
        println!(
            "{{\"case\": \"{}\", \"n\": {}, \"batch\": {batch}, \"modes\": {modes}, \"shape\": {:?}, \"ms_off\": {:.5}, \"ms_detect\": {:.5}, \"ms_correct\": {:.5}, \"detect_ratio\": {:.4}, \"correct_ratio\": {:.4}, \"launches_off\": {}, \"launches_checked\": {}, \"false_positives\": {}}}",
            case.name,
            lengths[lengths.len() - 1],
            case.desc.shape,
            ms[0],
            ms[1],
            ms[2],
            ms[1] / ms[0],
            ms[2] / ms[0],
            devices[0].recipe().launches.len(),
            devices[1].recipe().launches.len(),
            flagged[1] + flagged[2],
        );
        drop((devices, input, output));
        client.memory_cleanup();
    }
}

/// The value of `--name N`, a positive integer, if given.
fn positive_option(args: &[String], name: &str) -> Option<usize> {
    count_option(args, name, 1)
}

/// The value of `--name N` for an integer `N ≥ least`; anything else exits
/// with an error.
fn count_option(args: &[String], name: &str, least: usize) -> Option<usize> {
    let value = args.iter().position(|a| a == name).and_then(|i| args.get(i + 1))?;
    match value.parse::<usize>() {
        Ok(n) if n >= least => Some(n),
        _ => {
            eprintln!("error: {name} {value:?} is not an integer of at least {least}");
            std::process::exit(2);
        }
    }
}

/// The value of `--name WORD` among `choices` (the first is the default when
/// the flag is absent); an unknown word exits with an error.
fn choice_option<T: Copy>(args: &[String], name: &str, choices: &[(&str, T)]) -> T {
    let Some(value) = args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)) else {
        return choices[0].1;
    };
    match choices.iter().find(|(word, _)| word == value) {
        Some(&(_, choice)) => choice,
        None => {
            let expected: Vec<&str> = choices.iter().map(|(word, _)| *word).collect();
            eprintln!(
                "error: unknown {name} {value:?} (expected one of {})",
                expected.join(", ")
            );
            std::process::exit(2);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let plane = choice_option(
        &args,
        "--plane",
        &[
            ("auto", PlaneFusion::Auto),
            ("always", PlaneFusion::Always),
            ("never", PlaneFusion::Never),
        ],
    );
    let primes = choice_option(
        &args,
        "--primes",
        &[
            ("rader", PrimeAlgorithm::Rader),
            ("bluestein", PrimeAlgorithm::Bluestein),
        ],
    );
    let prefetch = choice_option(
        &args,
        "--prefetch",
        &[
            ("auto", TilePrefetch::Auto),
            ("always", TilePrefetch::Always),
            ("never", TilePrefetch::Never),
        ],
    );
    let odd_real = choice_option(
        &args,
        "--odd-real",
        &[("twins", OddReal::Twins), ("widen", OddReal::Widen)],
    );
    let shared_layout = choice_option(
        &args,
        "--shared-layout",
        &[("modelled", SharedLayout::Modelled), ("plain", SharedLayout::Plain)],
    );
    let unit_strides = choice_option(
        &args,
        "--unit-strides",
        &[("runtime", UnitStrides::Runtime), ("compiled", UnitStrides::Compiled)],
    );
    let planning = choice_option(
        &args,
        "--planning",
        &[("rules", Planning::Rules), ("measured", Planning::Measured)],
    );
    let tensor_cores = choice_option(
        &args,
        "--tensor-cores",
        &[("auto", TensorCores::Auto), ("never", TensorCores::Never)],
    );
    let base = DeviceOptions {
        plane,
        tensor_cores,
        primes,
        prefetch,
        resident_cubes: positive_option(&args, "--resident-cubes"),
        column_signals: positive_option(&args, "--column-signals"),
        max_radix: positive_option(&args, "--max-radix"),
        shared_limit: positive_option(&args, "--shared-limit"),
        butterfly_pairs: count_option(&args, "--butterfly-pairs", 0),
        convolution_row_threads: positive_option(&args, "--convolution-row-threads"),
        unit_strides,
        odd_real,
        shared_layout,
        ..DeviceOptions::default()
    };
    let precision = choice_option(
        &args,
        "--precision",
        &[
            ("f32", Precision::F32),
            ("f16", Precision::F16),
            ("bf16", Precision::BF16),
        ],
    );
    let (total_log2, reps) = if quick { (20, 3) } else { (26, 20) };
    // `--only fft_c2c_1d:4096,rfft2:256` restricts the cases (for profiling).
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str);
    let cases = match args.iter().position(|a| a == "--sizes").and_then(|i| args.get(i + 1)) {
        None => cases(total_log2),
        Some(s) if s == "pow2" => cases(total_log2),
        Some(s) if s == "any" => any_size_cases(total_log2),
        Some(s) if s == "truncated" => truncated_cases(total_log2),
        Some(s) if s == "fno" => fno_cases(),
        Some(s) if s == "radix" => prime_radix_cases(total_log2),
        Some(s) if s == "odd" => odd_real_cases(total_log2),
        Some(s) if s == "smooth" => smooth_cases(total_log2),
        Some(s) if s == "resident" => resident_cases(total_log2),
        Some(s) if s == "rader" => rader_cases(total_log2),
        Some(s) if s == "plane" => plane_cases(total_log2),
        Some(other) => {
            eprintln!(
                "error: unknown --sizes {other:?} (expected pow2, any, smooth, resident, truncated, fno, radix, odd, rader or plane)"
            );
            std::process::exit(2);
        }
    };
    let cases: Vec<Case> = cases
        .into_iter()
        .map(|case| Case {
            desc: case.desc.precision(precision),
            ..case
        })
        .collect();
    // `--fault-tolerance all`: each case unchecked, detecting and correcting,
    // timed in turn in this run (fft/fault.rs).
    let checked = args.iter().any(|a| a == "--fault-tolerance");
    if checked {
        match args.get(1).map(String::as_str) {
            #[cfg(feature = "wgpu")]
            Some("wgpu") => {
                use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
                return bench_fault_tolerance(WgpuRuntime::client(&WgpuDevice::default()), cases, reps, only);
            }
            #[cfg(feature = "cuda")]
            Some("cuda") | None => {
                use cubecl::cuda::{CudaDevice, CudaRuntime};
                return bench_fault_tolerance(CudaRuntime::client(&CudaDevice { index: 0 }), cases, reps, only);
            }
            _ => {}
        }
    }
    match args.get(1).map(String::as_str) {
        #[cfg(feature = "wgpu")]
        Some("wgpu") => {
            use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
            bench(
                WgpuRuntime::client(&WgpuDevice::default()),
                "wgpu",
                cases,
                reps,
                only,
                base,
                planning,
            )
        }
        #[cfg(feature = "cuda")]
        Some("cuda") | None => {
            use cubecl::cuda::{CudaDevice, CudaRuntime};
            bench(
                CudaRuntime::client(&CudaDevice { index: 0 }),
                "cuda",
                cases,
                reps,
                only,
                base,
                planning,
            )
        }
        other => {
            eprintln!("error: unknown or uncompiled backend {other:?} (expected cuda or wgpu)");
            std::process::exit(2);
        }
    }
}

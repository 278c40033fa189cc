//! Lengths of any size: every length to 32 and samples of each kind to 1024
//! (mixed radix, Rader, Bluestein), the whole table to 1024 (ignored), mixed
//! radix plans whose first pass trades places, and long primes and prime
//! powers (four-step, Bluestein).

use super::*;

/// Lengths of every kind above 32 to 1024: primes (Rader's algorithm where
/// p − 1 is 7-smooth: 97, 211, 421; Bluestein's: 509, 1021), products of
/// primes up to `MAX_PRIME_RADIX` (77, 121, 143, 289: mixed radix), 7-smooth
/// odd and even lengths (mixed radix 2/3/4/5/7/8/16), powers of each radix,
/// twice a prime, and the neighbours of 1024.
const SAMPLED_TO_1024: [usize; 22] = [
    49, 60, 77, 81, 97, 121, 128, 143, 210, 211, 243, 289, 343, 420, 421, 509, 625, 768, 1000, 1021, 1023, 1024,
];

/// Every length to 32 and a sample of each kind of length to 1024, forward
/// (mixed-radix plans where the prime factors allow, the others through Rader
/// or Bluestein). Each
/// length is a new kernel, and lavapipe compiles a kernel in one to two
/// seconds without a warm shader cache (a fresh CI machine has none), so the
/// whole table of lengths and kinds is the ignored
/// [`every_length_to_1024_every_kind`] (run with `--ignored`).
#[test]
fn every_length_to_32_and_sampled_to_1024_forward() {
    let lengths = (1..=32).chain(SAMPLED_TO_1024);
    let cases = lengths.map(|n| FftDesc::new(&[2, n], &[-1], FftKind::C2C, Direction::Forward));
    check_all(
        "every_length_to_32_and_sampled_to_1024_forward",
        drawn_seed(),
        cases,
        DEFAULT,
    );
}

/// Inverse, R2C and C2R on every length to 8 and on lengths of each kind
/// above: prime (a butterfly of its own: 17, 31; Rader: 421; Bluestein: 1021), 7-smooth odd and
/// even (mixed radix, packed or widened real transforms), twice a prime (packed).
#[test]
fn sampled_lengths_every_kind() {
    let lengths = (1..=8).chain([12, 16, 17, 31, 85, 141, 210, 243, 254, 421, 1000, 1021]);
    check_all(
        "sampled_lengths_every_kind",
        drawn_seed(),
        lengths.flat_map(|n| every_kind(n).into_iter().skip(1)),
        RUNTIME_OR_COMPILED_STRIDES,
    );
}

/// Set in the child processes of [`every_length_to_1024_every_kind`]: the
/// lengths `first-last` that one child checks.
const LENGTHS_ENV: &str = "FNO_TEST_LENGTHS";
/// Lengths a child process checks.
const LENGTHS_PER_PROCESS: usize = 64;

/// The whole table: every kind on every length 1..=1024 (run with
/// `--ignored`). lavapipe keeps each compiled pipeline for the life of the
/// process, and the table's thousands of kernels in one process exhausted a
/// 24 GB machine, so the test runs itself again in child processes of
/// `LENGTHS_PER_PROCESS` lengths each, as many at once as there are cores,
/// prints each child's worst error as it finishes, and the table's at the end.
#[test]
#[ignore]
fn every_length_to_1024_every_kind() {
    const TABLE: std::ops::RangeInclusive<usize> = 1..=1024;
    if let Ok(lengths) = std::env::var(LENGTHS_ENV) {
        let (first, last) = lengths
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
            .unwrap_or_else(|| panic!("{LENGTHS_ENV}={lengths:?} is not first-last"));
        check_all(
            &format!("every_length_{first}_to_{last}_every_kind"),
            drawn_seed(),
            (first..=last).flat_map(every_kind),
            DEFAULT,
        );
        return;
    }
    let chunks: Vec<(usize, usize)> = TABLE
        .step_by(LENGTHS_PER_PROCESS)
        .map(|first| (first, (first + LENGTHS_PER_PROCESS - 1).min(*TABLE.end())))
        .collect();
    let at_once = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let worst_errors = std::sync::Mutex::new(Vec::new());
    let exe = std::env::current_exe().unwrap();
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            scope.spawn(|| {
                while let Some(&(first, last)) = chunks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    let started = std::time::Instant::now();
                    let child = std::process::Command::new(&exe)
                        .args(["every_length_to_1024_every_kind", "--ignored", "--nocapture"])
                        .env(LENGTHS_ENV, format!("{first}-{last}"))
                        .output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&child.stdout);
                    let worst = stdout
                        .lines()
                        .find(|l| l.contains("worst relative"))
                        .unwrap_or("no report");
                    // "…: N cases, worst relative L2 error E (case)"
                    let cases_and_error = worst.split_once(": ").and_then(|(_, rest)| {
                        let cases = rest.split_whitespace().next()?.parse::<usize>().ok()?;
                        let error = rest
                            .split("error ")
                            .nth(1)?
                            .split_whitespace()
                            .next()?
                            .parse::<f64>()
                            .ok()?;
                        Some((cases, error))
                    });
                    worst_errors.lock().unwrap().extend(cases_and_error);
                    println!(
                        "lengths {first}..={last}: {} in {:.0} s; {worst}",
                        if child.status.success() { "passed" } else { "FAILED" },
                        started.elapsed().as_secs_f64()
                    );
                    if !child.status.success() {
                        let stderr = String::from_utf8_lossy(&child.stderr);
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("lengths {first}..={last}:\n{stdout}{stderr}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let worst_errors = worst_errors.into_inner().unwrap();
    let cases: usize = worst_errors.iter().map(|(cases, _)| cases).sum();
    let worst = worst_errors.iter().map(|(_, e)| *e).fold(0.0, f64::max);
    assert_eq!(cases, 4 * TABLE.count(), "every length and kind reported");
    println!("every_length_to_1024_every_kind: {cases} cases, worst relative L2 error {worst:.3e}");
}

/// The rows of [`ragged_first_passes_trade_places_on_rows`] and the radices
/// the default rules give them (asserted in `planner.rs`).
pub(super) fn ragged_plans() -> [(FftDesc, Vec<usize>); 6] {
    let rows = |n: usize, kind: FftKind| FftDesc::new(&[3, n], &[-1], kind, Direction::Forward);
    [
        (rows(384, FftKind::C2C), vec![8, 6, 8]),
        (rows(1296, FftKind::C2C), vec![12, 9, 12]),
        (rows(504, FftKind::C2C), vec![12, 6, 7]),
        (rows(768, FftKind::R2C), vec![8, 6, 8]),
        (rows(192, FftKind::C2C), vec![3, 8, 8]),
        (
            FftDesc::new(&[2, 384, 9], &[1], FftKind::C2C, Direction::Forward),
            vec![6, 8, 8],
        ),
    ]
}

/// Rows whose first pass would leave at least half of its threads idle in its
/// last round start with a pass that fills whole rounds (384 = 6·8·8 on 48
/// threads runs as 8·6·8, 1296 = 9·12·12 on 108 as 12·9·12, R2C 768 packs
/// into 384); a last round a third idle (192 = 3·8·8 on 24) and column tiles
/// keep the plan. With the plans whose bits spread by thread-rounds (504 =
/// 12·6·7, 756 = 9·12·7), every kind and window against the oracle.
#[test]
fn ragged_first_passes_trade_places_on_rows() {
    let rows = |n: usize, kind: FftKind| FftDesc::new(&[3, n], &[-1], kind, Direction::Forward);
    let mut cases: Vec<FftDesc> = ragged_plans().into_iter().map(|(desc, _)| desc).collect();
    cases.extend([
        FftDesc::new(&[3, 504], &[-1], FftKind::C2C, Direction::Inverse),
        FftDesc::new(&[3, 1008 / 2 + 1], &[-1], FftKind::C2R, Direction::Inverse).lengths(&[1008]),
        rows(384, FftKind::C2C).modes(&[40]),
        rows(756, FftKind::C2C),
        rows(1512, FftKind::R2C),
    ]);
    check_all("ragged_first_passes_trade_places_on_rows", drawn_seed(), cases, DEFAULT);
}

/// Large primes (Bluestein as two four-step FFTs), prime powers (mixed radix,
/// four-step) and lengths up to 2^20 against the f64 oracle.
#[test]
fn large_primes_and_prime_powers() {
    let client = client();
    let mut seed = drawn_seed();
    let mut errors = Vec::new();
    for n in [4099usize, 65537, 19683, 15625, 16807, 1 << 20, 1_048_573] {
        for desc in every_kind(n) {
            let desc = FftDesc {
                shape: [&[1], &desc.shape[1..]].concat(),
                ..desc
            };
            let e = check_with(&client, &desc, seed, DeviceOptions::default());
            let name = format!("{desc:?}");
            assert!(e <= LONG_BOUND, "{name} (seed {seed}): {e:.3e}");
            errors.push((name, e));
            seed += 1;
        }
    }
    report("large_primes_and_prime_powers", &errors);
}

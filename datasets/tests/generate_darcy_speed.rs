//! The Darcy generator's speed target: 1000 samples at 16² from a 76² solve in
//! under a minute on CI's 2 cores. Alone in its test binary, so no other test
//! competes for the cores (test binaries run one after another).

use fno_datasets::generate::{darcy, DarcyConfig};

#[test]
fn a_thousand_darcy_samples_at_16_from_76_take_under_a_minute() {
    let started = std::time::Instant::now();
    let cfg = DarcyConfig {
        n: 1000,
        resolution: 16,
        fine_resolution: 76,
        ..DarcyConfig::default()
    };
    let data = darcy::generate(&cfg, &mut |_, _| {}).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("1000 Darcy samples, 16² from 76²: {seconds:.1} s");
    assert_eq!(data.outputs.shape, [1000, 1, 16, 16]);
    assert!(seconds < 60.0, "took {seconds:.1} s");
}

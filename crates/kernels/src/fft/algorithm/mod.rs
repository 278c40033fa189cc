//! The FFT's algorithms by name, laid out as rustfft's `src/algorithm/`: each
//! file holds one algorithm's rules and tables, with a test file of the same
//! name under `tests/fft/`. The mixed-radix Stockham passes every stage runs
//! are in `stage/`, the four-step split in `lowering/four_step.rs`.

pub(crate) mod bluestein;
pub(crate) mod rader;

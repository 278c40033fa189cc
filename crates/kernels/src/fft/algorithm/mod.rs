//! The FFT's algorithms by name, laid out as rustfft's `src/algorithm/`: each
//! file holds one algorithm (its rules, tables, and kernel where it has one of
//! its own), with a test file of the same name under `tests/fft/`. The
//! mixed-radix Stockham passes every stage runs are in `stage/`, the
//! four-step split in `lowering/four_step.rs`.

pub(crate) mod bluestein;
pub(crate) mod direct_dft;
pub(crate) mod rader;
pub(crate) mod tensor_core;

//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod args_fuzz;
mod data_cli;
mod fft_cli;
mod infer_cli;
mod nufft_cli;
mod numbers_cli;
mod output_cli;
mod readme;
mod train_cli;

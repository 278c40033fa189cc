//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod common;
mod device_memory;
mod factorized;
mod fusion;
mod kernel_paths;
mod loss;
mod mode_chain;
mod mode_mix;
mod neuralop_fixture;
mod nonuniform;
mod pointwise;
mod precise_matmul;
mod reference;

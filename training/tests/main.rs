//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod data_parallel;
mod losses;
mod optim;
mod train;

//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod fusion;
mod neuralop_checkpoint;
mod neuralop_configurations;
mod point_cloud;
mod recompute;
mod torch_checkpoint;

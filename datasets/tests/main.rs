//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod batch;
mod formats;
mod generate_burgers;
mod generate_darcy;
mod generate_darcy_speed;
mod generate_navier_stokes;
#[cfg(feature = "hdf5")]
mod hdf5;
mod hostile_files;
mod matlab;
mod torch_pt;

//! PDE datasets: file formats and (later) generators, normalisers and batchers.

pub mod npy;

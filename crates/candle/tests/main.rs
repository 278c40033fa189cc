#[cfg(feature = "cuda")]
mod cuda;
mod model;
mod spectral;

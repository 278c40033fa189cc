#[cfg(feature = "cuda")]
mod cuda;
mod dependencies;
mod model;
mod spectral;

//! The ops built of Burn's tensor ops on any backend: the reference path of
//! the spectral convolution ([`spectral`]) and the bodies of the backend
//! traits' defaults.

pub(crate) mod loss;
pub(crate) mod mode_mix;
pub(crate) mod pointwise;
pub mod spectral;

//! What can be wrong with a configuration, a checkpoint or an input.

use crate::spec::SpectralError;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Checkpoint(String),
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Spectral(#[from] SpectralError),
}

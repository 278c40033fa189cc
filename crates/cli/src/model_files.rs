//! What `--checkpoint` names: a checkpoint file (ours, a safetensors export,
//! or neuraloperator's `NAME_state_dict.pt`), or a neuraloperator Trainer's
//! save directory, whose best model is taken before its last.

use std::path::{Path, PathBuf};

use fno_models::neuralop_files::read_metadata;
use fno_models::FnoConfig;

/// The state dicts a Trainer's save directory may hold, by preference.
const TRAINER_MODELS: [&str; 2] = ["best_model", "model"];
const STATE_DICT: &str = "_state_dict.pt";
const METADATA: &str = "_metadata.pkl";

/// A checkpoint read from disk.
pub struct Checkpoint {
    /// The file read (inside the directory, where one was named).
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// The configuration of the `NAME_metadata.pkl` beside a `NAME_state_dict.pt`.
    pub metadata: Option<FnoConfig>,
}

/// Reads the checkpoint `path` names; says which file a directory gave.
pub fn read_checkpoint(path: &Path) -> Result<Checkpoint, String> {
    let path = match path.is_dir() {
        true => {
            let found = TRAINER_MODELS
                .iter()
                .map(|name| path.join(format!("{name}{STATE_DICT}")))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "{}: a directory without best_model{STATE_DICT} or model{STATE_DICT} \
                         (what a neuraloperator Trainer saves)",
                        path.display()
                    )
                })?;
            eprintln!("checkpoint: {}", found.display());
            found
        }
        false => path.to_path_buf(),
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let beside = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(STATE_DICT))
        .map(|name| path.with_file_name(format!("{name}{METADATA}")))
        .filter(|p| p.is_file());
    let metadata = match beside {
        Some(p) => {
            let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Some(read_metadata(&bytes).map_err(|e| format!("{}: {e}", p.display()))?)
        }
        None => None,
    };
    Ok(Checkpoint { path, bytes, metadata })
}

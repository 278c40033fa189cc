//! What `--checkpoint` names: a checkpoint file (ours, a safetensors export,
//! or neuraloperator's `NAME_state_dict.pt`), or a neuraloperator Trainer's
//! save directory, whose best model is taken before its last.

use std::path::{Path, PathBuf};

use clap::builder::PossibleValuesParser;
use clap::Args;
use fno_models::config::INVERSE_SHIFTS;
use fno_models::neuralop_files::read_metadata;
use fno_models::FnoConfig;

/// `--inverse-shift`, for the commands that read a model's checkpoint.
#[derive(Args, Debug)]
pub struct ShiftArg {
    /// How the blocks shift their modes back before the inverse FFT:
    /// fftshift (neuraloperator 2.0.0) or ifftshift (its main branch); they
    /// differ on grids odd in a dim other than the last [default: the
    /// model's: main's for a file with main's init kwargs, else 2.0.0's].
    #[arg(long, value_parser = PossibleValuesParser::new(INVERSE_SHIFTS.map(|(name, _)| name)))]
    pub inverse_shift: Option<String>,
}

impl ShiftArg {
    pub fn apply(&self, config: &mut FnoConfig) {
        if let Some(shift) = &self.inverse_shift {
            config.inverse_shift = Some(shift.clone());
        }
    }
}

/// The state dicts a Trainer's save directory may hold, by preference.
const TRAINER_MODELS: [&str; 2] = ["best_model", "model"];
const STATE_DICT: &str = "_state_dict.pt";
const METADATA: &str = "_metadata.pkl";

/// A checkpoint read from disk.
pub struct Checkpoint {
    /// The file read (inside the directory, where one was named).
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// The configuration `--config` names, else that of the
    /// `NAME_metadata.pkl` beside a `NAME_state_dict.pt`; `None`: the file's own.
    pub config: Option<FnoConfig>,
}

impl Checkpoint {
    /// The configuration to build the model with, `shift` applied (to the
    /// file's own configuration, decoded here, where no other is given).
    pub fn config_with(&self, shift: &ShiftArg) -> Result<Option<FnoConfig>, String> {
        if shift.inverse_shift.is_none() {
            return Ok(self.config.clone());
        }
        let (mut config, _) = fno_models::checkpoint::checked_tensors(&self.bytes, self.config.as_ref())
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        shift.apply(&mut config);
        Ok(Some(config))
    }
}

/// Reads `--config`, a JSON configuration.
fn read_config(path: &Path) -> Result<FnoConfig, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
    FnoConfig::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads the checkpoint `path` names, and the configuration `config` names;
/// says which file a directory gave.
pub fn read_checkpoint(path: &Path, config: Option<&Path>) -> Result<Checkpoint, String> {
    let given = config.map(read_config).transpose()?;
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
    let config = match (given, beside) {
        (Some(given), _) => Some(given),
        (None, Some(p)) => {
            let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Some(read_metadata(&bytes).map_err(|e| format!("{}: {e}", p.display()))?)
        }
        (None, None) => None,
    };
    Ok(Checkpoint { path, bytes, config })
}

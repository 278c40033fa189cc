//! `fno export`: a checkpoint `fno infer` reads, written for neuraloperator
//! (`NAME_state_dict.pt` + `NAME_metadata.pkl`, what `FNO.from_checkpoint`
//! loads) or as our safetensors checkpoint (the configuration inside).

use std::path::PathBuf;

use burn::backend::NdArray;
use clap::{Args, ValueEnum};
use fno_datasets::output::check_output_path;
use fno_models::neuralop_files::write_checkpoint;
use fno_models::Fno;

use crate::model_files::{read_checkpoint, ShiftArg};

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The checkpoint: anything `fno infer --checkpoint` takes.
    checkpoint: PathBuf,
    /// neuraloperator: a directory receiving NAME_state_dict.pt and
    /// NAME_metadata.pkl; safetensors: a .safetensors file.
    out: PathBuf,
    /// What to write.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// The files' NAME (neuraloperator's `save_name`).
    #[arg(long, default_value = "model")]
    name: String,
    /// FNO configuration (JSON), for checkpoints that carry none.
    #[arg(long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    shift: ShiftArg,
    /// Replace files already there.
    #[arg(long)]
    overwrite: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Neuraloperator,
    Safetensors,
}

pub fn run(args: ExportArgs) -> Result<(), String> {
    let outputs: Vec<PathBuf> = match args.format {
        ExportFormat::Neuraloperator => {
            let safe = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
            if args.name.is_empty() || !args.name.chars().all(safe) || args.name.starts_with('.') {
                return Err(format!(
                    "--name {:?}: letters, digits, '_', '-' and '.' only",
                    args.name
                ));
            }
            if args.out.exists() && !args.out.is_dir() {
                return Err(format!("{}: not a directory", args.out.display()));
            }
            ["state_dict.pt", "metadata.pkl"]
                .map(|end| args.out.join(format!("{}_{end}", args.name)))
                .into()
        }
        ExportFormat::Safetensors => {
            check_output_path("OUT", &args.out, &["safetensors"])?;
            vec![args.out.clone()]
        }
    };
    if let Some(there) = outputs.iter().find(|p| p.exists()).filter(|_| !args.overwrite) {
        return Err(format!("{} exists; pass --overwrite to replace it", there.display()));
    }
    let file = read_checkpoint(&args.checkpoint, args.config.as_deref())?;
    let config = file.config_with(&args.shift)?;
    let label = file.path.display().to_string();
    let model = Fno::<NdArray>::load_checkpoint(&file.bytes, config.as_ref(), &Default::default())
        .map_err(|e| format!("{label}: {e}"))?;
    let contents = match args.format {
        ExportFormat::Neuraloperator => {
            let (state_dict, metadata) =
                write_checkpoint(&model.state_dict(), model.config(), &args.name).map_err(|e| e.to_string())?;
            std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
            vec![state_dict, metadata]
        }
        ExportFormat::Safetensors => vec![model.save_safetensors()],
    };
    for (path, bytes) in outputs.iter().zip(contents) {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

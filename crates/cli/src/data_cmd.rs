//! `fno data …`: inspect dataset files.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct DataArgs {
    #[command(subcommand)]
    command: DataCommand,
}

#[derive(Subcommand, Debug)]
enum DataCommand {
    /// Keys, shapes, dtypes and value ranges of a dataset file (.pt, .npz,
    /// .npy, .safetensors), and its metadata.
    Info { file: PathBuf },
}

pub fn run(args: DataArgs) -> Result<(), String> {
    match args.command {
        DataCommand::Info { file } => info(&file),
    }
}

fn info(file: &PathBuf) -> Result<(), String> {
    let (tensors, metadata) = fno_datasets::read_tensors(file).map_err(|e| e.to_string())?;
    println!("{}", file.display());
    let width = tensors.keys().map(String::len).max().unwrap_or(0);
    for (name, t) in &tensors {
        let (lo, hi) = t.array.range();
        println!(
            "  {name:<width$}  {:<8} {:<20} min {lo:<12.6} max {hi:.6}",
            t.dtype,
            format!("{:?}", t.array.shape)
        );
    }
    for (key, value) in &metadata {
        println!("  {key}: {value}");
    }
    Ok(())
}

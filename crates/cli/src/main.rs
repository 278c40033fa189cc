//! The `fno` command.

mod args;
mod data_cmd;
mod demo_cmd;
mod export_cmd;
mod fft_cmd;
mod infer_cmd;
mod kernel_cache;
mod memory;
mod model_files;
mod nufft_cmd;
mod progress;
mod train_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "fno",
    version,
    about = "Fourier neural operators in Rust: fast FFT kernels, inference and tools"
)]
#[command(after_help = "Kernels compiled for CUDA are kept in ~/.cache/fno/kernels \
(FNO_KERNEL_CACHE=DIR sets another place, FNO_KERNEL_CACHE=off none).")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// numpy.fft-compatible transforms of .npy files, with built-in truncation
    /// (forward, --modes) and zero-padding (inverse, --modes with --n).
    Fft(fft_cmd::FftArgs),
    /// Non-uniform FFTs (FINUFFT's types 1 and 2) of .npy files: values at
    /// arbitrary points to Fourier modes and back.
    Nufft(nufft_cmd::NufftArgs),
    /// Low-pass an embedded batch of 2D fields through truncated FFTs on the
    /// chosen backend and check the result against the CPU oracle.
    Demo(demo_cmd::DemoArgs),
    /// Run an FNO checkpoint (ours, a neuraloperator export, its NAME_state_dict.pt
    /// or a Trainer's save directory) on the inputs of a data file; predictions
    /// in the data's units.
    Infer(infer_cmd::InferArgs),
    /// Train an FNO (default: neuraloperator's Darcy settings on generated
    /// Darcy 16² data); checkpoints, metrics and a predictions plot go to the
    /// run directory.
    Train(train_cmd::TrainArgs),
    /// Evaluate a checkpoint of `fno train` on a data file.
    Eval(train_cmd::EvalArgs),
    /// Datasets: generate Darcy, Burgers and Navier–Stokes data; inspect files.
    Data(data_cmd::DataArgs),
    /// Write a checkpoint for neuraloperator (NAME_state_dict.pt and
    /// NAME_metadata.pkl, what FNO.from_checkpoint loads) or as our safetensors.
    Export(export_cmd::ExportArgs),
}

fn main() -> ExitCode {
    // Vulkan loaders probing window systems complain on stderr when this is unset
    // (headless machines); a private runtime dir keeps errors to one line.
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        let dir = std::env::temp_dir().join("fno-xdg-runtime");
        if std::fs::create_dir_all(&dir).is_ok() {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
            }
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    kernel_cache::install();
    let result = match cli.command {
        Command::Fft(args) => fft_cmd::run(args),
        Command::Nufft(args) => nufft_cmd::run(args),
        Command::Demo(args) => demo_cmd::run(args),
        Command::Infer(args) => infer_cmd::run(args),
        Command::Data(args) => data_cmd::run(args),
        Command::Train(args) => train_cmd::run_train(args),
        Command::Eval(args) => train_cmd::run_eval(args),
        Command::Export(args) => export_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// A clap error as one line: a negative number where a count or size goes
/// said so, otherwise clap's message up to its usage hint, joined.
fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(v)) => Some(v.clone()),
        _ => None,
    };
    if let (Some(arg), Some(value)) = (text(ContextKind::InvalidArg), text(ContextKind::InvalidValue)) {
        if value.starts_with('-') && value[1..].parse::<f64>().is_ok() {
            let flag = arg.split_whitespace().next().unwrap_or(&arg).to_string();
            return format!("error: {flag}: {value} is negative, where a count or size is expected");
        }
    }
    let rendered = e.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    lines.join(" ")
}

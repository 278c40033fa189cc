//! `fno data …`: generate and inspect dataset files.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use fno_datasets::generate::{GenerateSpec, Pde};
use fno_datasets::PdeDataset;

use crate::progress::Progress;

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct DataArgs {
    #[command(subcommand)]
    command: DataCommand,
}

#[derive(Subcommand, Debug)]
enum DataCommand {
    /// Keys, shapes, dtypes and value ranges of a dataset file (.pt, .npz,
    /// .npy, .safetensors, .mat; .h5 in builds with the `hdf5` feature), and
    /// its metadata.
    Info { file: PathBuf },
    /// Generate a benchmark data set, deterministic from the seed, on all cores;
    /// the format follows OUT's extension (.safetensors, .npz; .h5 with the
    /// `hdf5` feature).
    Generate(GenerateArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum PdeArg {
    /// −∇·(a∇u) = 1 on (0,1)², a thresholded from a GRF (α 2, τ 3) to 12/3;
    /// inputs a, outputs u on R² nodes, boundary included.
    Darcy,
    /// u_t + u u_x = ν u_xx on the periodic unit interval, u0 ~ N(0, 625(−Δ+25)⁻²);
    /// inputs u0, outputs u(t = TIME) on R points.
    Burgers,
    /// 2-D vorticity on the unit torus with forcing 0.1(sin 2π(x+y) + cos 2π(x+y)),
    /// w0 ~ GRF(α 2.5, τ 7); inputs w0, outputs w at t = EVERY, 2·EVERY, …, TIME as channels.
    NavierStokes,
}

#[derive(Args, Debug)]
#[command(allow_negative_numbers = true)]
struct GenerateArgs {
    pde: PdeArg,
    /// Number of samples.
    #[arg(long)]
    n: usize,
    /// Points per side of the saved grid.
    #[arg(long)]
    res: usize,
    /// Points per side of the solve, subsampled to RES [default: Darcy ≥ 64 and
    /// ≥ 2·RES with (FINE − 1) a multiple of (RES − 1), e.g. 16 → 76; Burgers 8192;
    /// Navier–Stokes RES].
    #[arg(long)]
    fine: Option<usize>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Viscosity ν [default: Burgers 0.1, Navier–Stokes 1e-3].
    #[arg(long)]
    viscosity: Option<f64>,
    /// Final time [default: Burgers 1, Navier–Stokes 10].
    #[arg(long)]
    time: Option<f64>,
    /// Navier–Stokes: time between output snapshots [default: 1].
    #[arg(long)]
    every: Option<f64>,
    /// Time step [default: 1e-4].
    #[arg(long)]
    dt: Option<f64>,
    /// Output file.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: DataArgs) -> Result<(), String> {
    match args.command {
        DataCommand::Info { file } => info(&file),
        DataCommand::Generate(args) => generate(&args),
    }
}

fn generate(args: &GenerateArgs) -> Result<(), String> {
    fno_datasets::check_output(&args.out).map_err(|e| e.to_string())?;
    let pde = match args.pde {
        PdeArg::Darcy => Pde::Darcy,
        PdeArg::Burgers => Pde::Burgers,
        PdeArg::NavierStokes => Pde::NavierStokes,
    };
    let spec = GenerateSpec {
        fine: args.fine,
        viscosity: args.viscosity,
        time: args.time,
        dt: args.dt,
        every: args.every,
        ..GenerateSpec::new(pde, args.n, args.res, args.seed)
    };
    spec.check().map_err(|e| e.to_string())?;
    // The values in f32 and, while saved, the file's bytes beside them.
    let values = spec.stored_values();
    crate::memory::check_fits("this data set", crate::memory::product([values, 4, 2]))?;
    let grid = if pde == Pde::Burgers {
        format!("{}", args.res)
    } else {
        format!("{}²", args.res)
    };
    let bar = Progress::new(format!("{} {grid}", pde.name()), "samples", args.n);
    let data = spec
        .generate(&mut |done, _| bar.update(done, ""))
        .map_err(|e| e.to_string())?;
    bar.finish();
    fno_datasets::save(&args.out, &data).map_err(|e| e.to_string())?;
    print_written(&args.out, &data);
    Ok(())
}

fn print_written(path: &Path, data: &PdeDataset) {
    println!(
        "wrote {}: inputs x {:?}, outputs y {:?}",
        path.display(),
        data.inputs.shape,
        data.outputs.shape
    );
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

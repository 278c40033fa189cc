//! Training configurations (TOML): the model under neuraloperator's argument
//! names, where the data come from, the optimiser and the run's bookkeeping.
//! Unknown keys are errors, so a typo never silently trains something else.

use std::path::{Path, PathBuf};

use fno_datasets::generate::{GenerateSpec, Pde};
use fno_kernels::pools::MemoryMode;
use fno_models::FnoConfig;
use fno_ops::MatmulPrecision;
use serde::{Deserialize, Serialize};

use crate::loss::Loss;
use crate::schedule::Schedule;
use crate::TrainError;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    pub model: FnoConfig,
    pub data: DataConfig,
    #[serde(default)]
    pub optim: OptimConfig,
    #[serde(default)]
    pub run: RunConfig,
}

/// A data set: a file (any format `fno_datasets::load` reads) or a generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSource {
    /// Name in metrics and logs (default: the file stem or the generator's label).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub file: Option<PathBuf>,
    #[serde(default)]
    pub generate: Option<GenerateSpec>,
    /// Keep the first `samples` samples.
    #[serde(default)]
    pub samples: Option<usize>,
    /// Keep every `stride`-th grid point.
    #[serde(default)]
    pub stride: Option<usize>,
    #[serde(default)]
    pub input_key: Option<String>,
    #[serde(default)]
    pub output_key: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub train: DataSource,
    /// Evaluated every `eval_every` epochs; the first decides the best checkpoint.
    pub tests: Vec<DataSource>,
    /// Normalise inputs / outputs with a `UnitGaussianNormalizer` fitted on the
    /// training set (neuraloperator's Darcy set: outputs only).
    #[serde(default)]
    pub encode_input: bool,
    #[serde(default = "yes")]
    pub encode_output: bool,
    /// `channel-wise` or `pixel-wise`.
    #[serde(default = "channel_wise")]
    pub encoding: String,
}

/// Missing keys take [`OptimConfig::default`]'s values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimConfig {
    pub epochs: usize,
    pub batch_size: usize,
    pub lr: f64,
    pub weight_decay: f64,
    /// AdamW's epsilon (neuraloperator's AdamW: 1e-6).
    pub eps: f64,
    pub schedule: Schedule,
    pub loss: Loss,
    /// Clip the global gradient norm to this value.
    #[serde(default)]
    pub grad_clip_norm: Option<f64>,
}

impl Default for OptimConfig {
    /// neuraloperator's Darcy example: AdamW lr 5e-3, wd 1e-4, batch 8, H1,
    /// StepLR halving five times over the run.
    fn default() -> Self {
        OptimConfig {
            epochs: 20,
            batch_size: 8,
            lr: 5e-3,
            weight_decay: 1e-4,
            eps: 1e-6,
            schedule: Schedule::Step {
                step_size: 4,
                gamma: 0.5,
            },
            loss: Loss::H1,
            grad_clip_norm: None,
        }
    }
}

/// Missing keys take [`RunConfig::default`]'s values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Where checkpoints, metrics and the plot go.
    pub out_dir: PathBuf,
    /// Seeds the initialisation and the shuffling.
    pub seed: u64,
    pub eval_every: usize,
    /// Write `last.safetensors` every this many epochs (and at the end).
    pub checkpoint_every: usize,
    /// Test samples drawn in `predictions.png`.
    pub plot_samples: usize,
    /// `"f32"` or `"tf32"`: the 1×1 convolutions' products (see
    /// [`MatmulPrecision`]; TF32 only where the device has tensor cores for it).
    pub matmul_precision: MatmulPrecision,
    /// Data-parallel replicas, one per device: a count or `"all"` (every
    /// device of the backend). The batch is split among them; the results
    /// are those of one device to round-off (docs/data_parallel.md).
    pub devices: DeviceCount,
    /// `"fast"`, `"balanced"` or `"small"`: how the GPU's memory pools trade
    /// memory for speed (see [`MemoryMode`]); `"small"` also reruns each FNO
    /// block in the backward pass instead of keeping its activations.
    #[serde(with = "by_name")]
    pub memory: MemoryMode,
}

/// A setting written in TOML by its name (its `Display` and `FromStr`).
mod by_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    pub fn serialize<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(value)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr<Err = String>,
        D: Deserializer<'de>,
    {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

/// How many devices data-parallel training uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "CountOrAll", into = "CountOrAll")]
pub enum DeviceCount {
    /// This many (positive).
    Count(usize),
    /// Every device of the backend.
    All,
}

impl Default for DeviceCount {
    fn default() -> Self {
        DeviceCount::Count(1)
    }
}

impl std::str::FromStr for DeviceCount {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "all" => Ok(DeviceCount::All),
            _ => text
                .parse::<usize>()
                .map_err(|_| format!("a device count or \"all\", not {text:?}"))
                .and_then(|n| DeviceCount::try_from(CountOrAll::Count(n))),
        }
    }
}

/// A device count as TOML writes it: a number or "all".
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum CountOrAll {
    Count(usize),
    Word(String),
}

impl TryFrom<CountOrAll> for DeviceCount {
    type Error = String;

    fn try_from(value: CountOrAll) -> Result<Self, String> {
        match value {
            CountOrAll::Count(0) => Err("devices must be positive".into()),
            CountOrAll::Count(n) => Ok(DeviceCount::Count(n)),
            CountOrAll::Word(w) if w == "all" => Ok(DeviceCount::All),
            CountOrAll::Word(w) => Err(format!("devices must be a count or \"all\", not {w:?}")),
        }
    }
}

impl From<DeviceCount> for CountOrAll {
    fn from(count: DeviceCount) -> Self {
        match count {
            DeviceCount::Count(n) => CountOrAll::Count(n),
            DeviceCount::All => CountOrAll::Word("all".into()),
        }
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            out_dir: PathBuf::from("fno-runs/darcy16"),
            seed: 0,
            eval_every: 1,
            checkpoint_every: 1,
            plot_samples: 3,
            matmul_precision: MatmulPrecision::F32,
            devices: DeviceCount::default(),
            memory: MemoryMode::default(),
        }
    }
}

fn yes() -> bool {
    true
}

fn channel_wise() -> String {
    "channel-wise".into()
}

impl TrainConfig {
    /// The embedded default: neuraloperator's Darcy settings (16×16 modes,
    /// hidden 24, 4 layers, projection ratio 2, AdamW 5e-3 / 1e-4, batch 8,
    /// H1) on Darcy data generated on first use: 1000 training samples at 16²,
    /// 50 test samples at 16² and 50 at 32² (zero-shot super-resolution).
    pub fn darcy_default() -> Self {
        let mut model = FnoConfig::new(&[16, 16], 1, 1, 24);
        model.n_layers = 4;
        model.projection_channel_ratio = 2.0;
        let generated = |n, res, seed| DataSource {
            name: Some(format!("darcy{res}")),
            file: None,
            generate: Some(GenerateSpec::new(Pde::Darcy, n, res, seed)),
            samples: None,
            stride: None,
            input_key: None,
            output_key: None,
        };
        TrainConfig {
            model,
            data: DataConfig {
                train: generated(1000, 16, 0),
                tests: vec![generated(50, 16, 1), generated(50, 32, 2)],
                encode_input: false,
                encode_output: true,
                encoding: channel_wise(),
            },
            optim: OptimConfig::default(),
            run: RunConfig::default(),
        }
    }

    /// Reads a TOML file; relative data paths are taken from its directory.
    pub fn from_file(path: &Path) -> Result<Self, TrainError> {
        let bad = |reason: String| TrainError::Config(format!("{}: {reason}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let mut cfg: TrainConfig = toml::from_str(&text).map_err(|e| bad(moved_keys(&text, e.to_string())))?;
        let base = path.parent().unwrap_or(Path::new(""));
        for source in std::iter::once(&mut cfg.data.train).chain(&mut cfg.data.tests) {
            if let Some(file) = &mut source.file {
                if file.is_relative() {
                    *file = base.join(&*file);
                }
            }
        }
        cfg.validate().map_err(bad)?;
        Ok(cfg)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("configurations serialise")
    }

    /// Checks everything that can be checked before any data are read.
    pub fn validate(&self) -> Result<(), String> {
        self.model.validate().map_err(|e| format!("model: {e}"))?;
        if self.run.memory == MemoryMode::Small && self.model.channel_mlp_dropout > 0.0 {
            return Err(format!(
                "run.memory = \"small\" reruns each block in the backward pass, which dropout's random masks \
                 would change: set model.channel_mlp_dropout = 0 (got {}) or another memory mode",
                self.model.channel_mlp_dropout
            ));
        }
        let o = &self.optim;
        if o.epochs == 0 || o.batch_size == 0 {
            return Err("optim: epochs and batch_size must be positive".into());
        }
        if !(o.lr > 0.0 && o.lr.is_finite() && o.weight_decay >= 0.0 && o.eps > 0.0) {
            return Err(format!(
                "optim: need lr > 0, weight_decay ≥ 0, eps > 0 (got {}, {}, {})",
                o.lr, o.weight_decay, o.eps
            ));
        }
        if o.grad_clip_norm.is_some_and(|c| c.is_nan() || c <= 0.0) {
            return Err("optim: grad_clip_norm must be positive".into());
        }
        o.schedule.validate().map_err(|e| format!("optim: {e}"))?;
        if self.run.eval_every == 0 || self.run.checkpoint_every == 0 {
            return Err("run: eval_every and checkpoint_every must be positive".into());
        }
        if !matches!(self.data.encoding.as_str(), "channel-wise" | "pixel-wise") {
            return Err(format!(
                "data: encoding must be channel-wise or pixel-wise, got {:?}",
                self.data.encoding
            ));
        }
        if self.data.tests.is_empty() {
            return Err("data: at least one test set is needed".into());
        }
        for source in std::iter::once(&self.data.train).chain(&self.data.tests) {
            source.validate().map_err(|e| format!("data: {e}"))?;
        }
        Ok(())
    }
}

impl DataSource {
    /// Exactly one of `file` and `generate`; positive sample counts and strides.
    pub fn validate(&self) -> Result<(), String> {
        if self.file.is_some() == self.generate.is_some() {
            return Err("each set needs exactly one of `file` and `generate`".into());
        }
        if self.stride == Some(0) || self.samples == Some(0) {
            return Err("samples and stride must be positive".into());
        }
        Ok(())
    }

    pub fn label(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match (&self.file, &self.generate) {
            (Some(file), _) => file
                .file_stem()
                .map_or("data".into(), |s| s.to_string_lossy().into_owned()),
            (None, Some(spec)) => spec.label(),
            (None, None) => "data".into(),
        }
    }
}

/// A parse error, or where a key that moved lives now.
fn moved_keys(text: &str, error: String) -> String {
    let old_precision = toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get("run")?.get("precision").cloned());
    match old_precision {
        Some(value) => format!(
            "run.precision moved to the model: write fno_block_precision = {value} under [model] \
             (\"f32\" or \"full\", \"mixed\", \"half\")"
        ),
        None => error,
    }
}

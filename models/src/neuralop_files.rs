//! neuraloperator's own checkpoint files: the `NAME_state_dict.pt` that
//! `BaseModel.save_checkpoint` and its Trainer write (`torch.save` of the
//! state dict, whose `_metadata` entry holds the model's init kwargs) and the
//! `NAME_metadata.pkl` beside it (`torch.save` of those kwargs), read by
//! `fno_formats::torch` without executing anything.

use fno_formats::torch::{self, Value};

use crate::checkpoint::{SafeTensorsFile, StoredTensor};
use crate::config::FnoConfig;
use crate::ModelError;

fn bad(m: impl Into<String>) -> ModelError {
    ModelError::Checkpoint(m.into())
}

/// The model classes whose kwargs are an [`FnoConfig`].
const FNO_CLASSES: &[&str] = &["FNO", "TFNO"];

/// A state dict's tensors under their keys, complex ones as (re, im) pairs
/// with a trailing 2 and named in [`SafeTensorsFile::complex`]; its init
/// kwargs, where it holds them, as the `config` metadata (JSON).
pub fn read_state_dict(bytes: &[u8]) -> Result<SafeTensorsFile, ModelError> {
    let root = torch::read_bytes(bytes).map_err(bad)?;
    let Value::Dict(entries) = &root else {
        return Err(bad("a torch.save file that holds no state dict (no dict at its top)"));
    };
    let mut file = SafeTensorsFile::default();
    for (key, value) in entries {
        let (Value::Str(key), Value::Tensor(t)) = (key, value) else {
            continue;
        };
        let mut shape = t.shape.clone();
        if t.complex {
            shape.push(2);
            file.complex.insert(key.clone());
        }
        let data = t.data.clone();
        file.tensors.insert(key.clone(), StoredTensor { shape, data });
    }
    if file.tensors.is_empty() {
        return Err(bad("the torch.save file holds no tensors at its top level: not a model's state dict"));
    }
    // The first `_metadata`: neuraloperator's entry; torch's own (module
    // versions), the dict's state, comes after it.
    if let Some(kwargs) = root.get("_metadata") {
        file.metadata.insert("config".into(), config_of_kwargs(kwargs)?.to_json());
    }
    Ok(file)
}

/// The configuration in a `NAME_metadata.pkl` (a `torch.save` of the init kwargs).
pub fn read_metadata(bytes: &[u8]) -> Result<FnoConfig, ModelError> {
    config_of_kwargs(&torch::read_bytes(bytes).map_err(bad)?)
}

/// neuraloperator's init kwargs as our configuration: its bookkeeping
/// entries checked and dropped, the activation's function by its name.
fn config_of_kwargs(kwargs: &Value) -> Result<FnoConfig, ModelError> {
    let Value::Dict(entries) = kwargs else {
        return Err(bad("the model's metadata is not a dict of init kwargs"));
    };
    let mut config = serde_json::Map::new();
    for (key, value) in entries {
        let Value::Str(key) = key else {
            return Err(bad("the model's init kwargs have a key that is not a string"));
        };
        match (key.as_str(), value) {
            ("_version", _) => {}
            ("_name", Value::Str(name)) if FNO_CLASSES.contains(&name.as_str()) => {}
            ("_name", name) => return Err(bad(format!("the checkpoint is of a neuraloperator {name:?}, not an FNO"))),
            ("args", Value::List(args)) if args.is_empty() => {}
            ("args", _) => return Err(bad("the model was built with positional arguments, which are not read")),
            ("conv_module", Value::Global(g)) if g == "neuralop.layers.spectral_convolution.SpectralConv" => {}
            ("conv_module", other) => return Err(bad(format!("conv_module {other:?} is not SpectralConv"))),
            ("non_linearity", Value::Global(g)) => {
                let name = g.rsplit('.').next().expect("a name");
                config.insert(key.clone(), serde_json::Value::String(name.to_string()));
            }
            _ => {
                config.insert(key.clone(), json(value).map_err(|e| bad(format!("init kwarg {key}: {e}")))?);
            }
        }
    }
    let config: FnoConfig = serde_json::from_value(serde_json::Value::Object(config))
        .map_err(|e| bad(format!("neuraloperator's init kwargs: {e}")))?;
    config.validate()?;
    Ok(config)
}

/// A plain value as JSON (tuples as arrays).
fn json(value: &Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match value {
        Value::None => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Float(f) => J::Number(serde_json::Number::from_f64(*f).ok_or("a number that is not finite")?),
        Value::Str(s) => J::String(s.clone()),
        Value::List(items) => J::Array(items.iter().map(json).collect::<Result<_, _>>()?),
        Value::Dict(entries) => J::Object(
            entries
                .iter()
                .map(|(k, v)| match k {
                    Value::Str(k) => Ok((k.clone(), json(v)?)),
                    _ => Err("a dict with a key that is not a string".to_string()),
                })
                .collect::<Result<_, _>>()?,
        ),
        Value::Global(g) => J::String(g.clone()),
        Value::Tensor(_) => return Err("a tensor where a setting was expected".into()),
    })
}

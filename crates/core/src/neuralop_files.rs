//! neuraloperator's own checkpoint files: the `NAME_state_dict.pt` that
//! `BaseModel.save_checkpoint` and its Trainer write (`torch.save` of the
//! state dict, whose `_metadata` entry holds the model's init kwargs) and the
//! `NAME_metadata.pkl` beside it (`torch.save` of those kwargs), read by
//! `fno_formats::torch` without executing anything; and both written for
//! neuraloperator's `FNO.from_checkpoint` ([`write_checkpoint`]).

use fno_formats::torch::{self, Tensor, Value};
use fno_formats::torch_write;

use crate::config::FnoConfig;
use crate::error::ModelError;
use crate::safetensors_file::{SafeTensorsFile, StoredTensor};
use crate::spec::InverseShift;

fn bad(m: impl Into<String>) -> ModelError {
    ModelError::Checkpoint(m.into())
}

/// Whether `bytes` are a `torch.save` file (a zip) rather than safetensors.
pub fn is_torch_file(bytes: &[u8]) -> bool {
    torch::is_zip(bytes)
}

/// The model classes whose kwargs are an [`FnoConfig`].
const FNO_CLASSES: &[&str] = &["FNO", "TFNO"];

/// A state dict read: its tensors, and the configuration its init kwargs give
/// where it holds them (an error there matters only without another one).
pub struct StateDict {
    pub file: SafeTensorsFile,
    pub config: Option<Result<FnoConfig, ModelError>>,
}

/// A state dict's tensors under their keys, complex ones as (re, im) pairs
/// with a trailing 2 and named in [`SafeTensorsFile::complex`], and the
/// configuration of its `_metadata` entry.
pub fn read_state_dict(bytes: &[u8]) -> Result<StateDict, ModelError> {
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
        return Err(bad(
            "the torch.save file holds no tensors at its top level: not a model's state dict",
        ));
    }
    // The first `_metadata`: neuraloperator's entry; torch's own (module
    // versions), the dict's state, comes after it.
    let config = root.get("_metadata").map(config_of_kwargs);
    Ok(StateDict { file, config })
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
            ("_name", name) => {
                return Err(bad(format!(
                    "the checkpoint is of a neuraloperator {name:?}, not an FNO"
                )))
            }
            ("args", Value::List(args)) if args.is_empty() => {}
            ("args", _) => return Err(bad("the model was built with positional arguments, which are not read")),
            ("conv_module", Value::Global(g)) if g == "neuralop.layers.spectral_convolution.SpectralConv" => {}
            ("conv_module", other) => return Err(bad(format!("conv_module {other:?} is not SpectralConv"))),
            ("non_linearity", Value::Global(g)) => {
                let name = g.rsplit('.').next().expect("a name");
                config.insert(key.clone(), serde_json::Value::String(name.to_string()));
            }
            _ => {
                config.insert(
                    key.clone(),
                    json(value).map_err(|e| bad(format!("init kwarg {key}: {e}")))?,
                );
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

/// neuraloperator's `save_checkpoint` files of a model with these tensors
/// (as fno-models' `Fno::state_dict` gives them) and configuration:
/// `NAME_state_dict.pt` (the tensors, the init kwargs as `_metadata`) and
/// `NAME_metadata.pkl` (the init kwargs), which `FNO.from_checkpoint(dir,
/// NAME)` loads.
pub fn write_checkpoint(
    file: &SafeTensorsFile,
    config: &FnoConfig,
    name: &str,
) -> Result<(Vec<u8>, Vec<u8>), ModelError> {
    let kwargs = kwargs_of_config(config)?;
    let mut entries: Vec<(Value, Value)> = file
        .tensors
        .iter()
        .map(|(key, t)| {
            let complex = file.complex.contains(key);
            let shape = match complex {
                true => t.shape[..t.shape.len() - 1].to_vec(),
                false => t.shape.clone(),
            };
            let dtype = if complex { "complex64" } else { "float32" };
            let tensor = Tensor {
                dtype,
                shape,
                data: t.data.clone(),
                complex,
            };
            (Value::Str(key.clone()), Value::Tensor(tensor))
        })
        .collect();
    entries.push((Value::Str("_metadata".into()), kwargs.clone()));
    let state_dict = torch_write::write(&format!("{name}_state_dict"), &Value::Dict(entries)).map_err(bad)?;
    let metadata = torch_write::write(&format!("{name}_metadata"), &kwargs).map_err(bad)?;
    Ok((state_dict, metadata))
}

/// Our configuration as neuraloperator's init kwargs, with the bookkeeping
/// entries `BaseModel` adds and the activation as torch's function. The
/// inverse shift is said the way neuraloperator's versions do: main's
/// arguments (all of them, as main writes them) for main's shift, none for
/// 2.0.0's, whose `FNO` refuses them.
fn kwargs_of_config(config: &FnoConfig) -> Result<Value, ModelError> {
    let mut config = config.clone();
    if config.inverse_shift() == InverseShift::Ifftshift {
        config.norm_groups.get_or_insert(1);
        config.conv_bias_kernel.get_or_insert(1);
        config.enforce_hermitian_symmetry.get_or_insert(true);
    } else {
        (
            config.norm_groups,
            config.conv_bias_kernel,
            config.enforce_hermitian_symmetry,
        ) = (None, None, None);
    }
    config.inverse_shift = None;
    let json = serde_json::to_value(&config).map_err(|e| bad(e.to_string()))?;
    let serde_json::Value::Object(fields) = json else {
        unreachable!("a configuration is a JSON object")
    };
    let mut entries = Vec::new();
    for (key, value) in fields {
        let value = match (key.as_str(), &value) {
            ("non_linearity", serde_json::Value::String(f)) if f == "gelu" => Value::Global("torch._C._nn.gelu".into()),
            ("non_linearity", other) => return Err(bad(format!("non_linearity {other} has no torch function here"))),
            _ => value_of_json(&value),
        };
        entries.push((Value::Str(key), value));
    }
    entries.push((Value::Str("_version".into()), Value::Str("0.1.0".into())));
    entries.push((Value::Str("args".into()), Value::List(Vec::new())));
    entries.push((Value::Str("_name".into()), Value::Str("FNO".into())));
    Ok(Value::Dict(entries))
}

fn value_of_json(v: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match v {
        J::Null => Value::None,
        J::Bool(b) => Value::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().expect("a JSON number")),
        },
        J::String(s) => Value::Str(s.clone()),
        J::Array(items) => Value::List(items.iter().map(value_of_json).collect()),
        J::Object(fields) => Value::Dict(
            fields
                .iter()
                .map(|(k, v)| (Value::Str(k.clone()), value_of_json(v)))
                .collect(),
        ),
    }
}

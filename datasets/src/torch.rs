//! PyTorch `.pt` files as neuraloperator writes them: `torch.save` of a dict of
//! tensors, read by `fno_formats::torch` (views, every real storage type,
//! hostile files refused); each real tensor is a dataset array.

use std::collections::BTreeMap;
use std::path::Path;

use fno_formats::torch::{self, Value};

use crate::dataset::Array;
use crate::{DataError, StoredTensor};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Every tensor of a `.pt` file holding a dict of tensors (entries that are
/// not tensors are skipped), by key; complex tensors are refused.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, StoredTensor>, DataError> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| err(path, e.to_string()))?;
    let len = file.metadata().map_err(|e| err(path, e.to_string()))?.len();
    let root = torch::read(std::io::BufReader::new(file), len).map_err(|e| err(path, e))?;
    let Value::Dict(entries) = root else {
        return Err(err(path, "expected a dict of tensors at the top level"));
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let (Value::Str(key), Value::Tensor(t)) = (key, value) else {
            continue;
        };
        if t.complex {
            return Err(err(
                path,
                format!("{key}: {} values are not data this loader reads", t.dtype),
            ));
        }
        let array = Array::new(t.shape, t.data).map_err(|e| err(path, format!("{key}: {e}")))?;
        out.insert(
            key,
            StoredTensor {
                dtype: t.dtype.to_string(),
                array,
            },
        );
    }
    Ok(out)
}

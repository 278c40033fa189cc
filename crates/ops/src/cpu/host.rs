//! Moving a CPU backend's tensors to f32 host values and back. On NdArray's
//! f32 tensors both directions share the array's buffer instead of copying
//! it; other backends and dtypes go through `TensorData`.

use std::any::Any;
use std::ops::Deref;

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;
use burn::tensor::{DType, Shape, Tensor, TensorData, TensorPrimitive};

/// A tensor's f32 values in row-major order, and its shape.
pub(crate) struct HostF32 {
    values: Values,
    pub(crate) shape: Vec<usize>,
}

enum Values {
    Owned(Vec<f32>),
    /// A standard-layout NdArray buffer, read in place.
    #[cfg(feature = "ndarray")]
    Shared(ndarray::ArcArray<f32, ndarray::IxDyn>),
}

impl Deref for HostF32 {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match &self.values {
            Values::Owned(v) => v,
            #[cfg(feature = "ndarray")]
            Values::Shared(a) => a.as_slice().expect("standard layout"),
        }
    }
}

impl HostF32 {
    /// The values as a vector of their own: the buffer itself where nothing
    /// else holds it, else a copy.
    pub(crate) fn into_vec(self) -> Vec<f32> {
        match self.values {
            Values::Owned(v) => v,
            #[cfg(feature = "ndarray")]
            Values::Shared(a) => {
                let n = a.len();
                match a.into_owned().into_raw_vec_and_offset() {
                    (v, Some(0) | None) if v.len() == n => v,
                    (v, offset) => {
                        let start = offset.unwrap_or(0);
                        v[start..start + n].to_vec()
                    }
                }
            }
        }
    }
}

/// A backend's float tensor as f32 host values.
pub(crate) fn host<B: Backend>(t: FloatTensor<B>) -> HostF32 {
    #[cfg(feature = "ndarray")]
    let t = match ndarray_host::<B>(t) {
        Ok(values) => return values,
        Err(t) => t,
    };
    let shape = t.shape().to_vec();
    let n: usize = shape.iter().product();
    let flat = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(B::float_reshape(t, Shape::from([n]))));
    let values = flat.into_data().convert::<f32>().into_vec::<f32>().expect("f32 values");
    HostF32 {
        values: Values::Owned(values),
        shape,
    }
}

/// Host values back as a float tensor of `shape` and `dtype` on `device`.
pub(crate) fn device_tensor<B: Backend>(
    values: Vec<f32>,
    shape: &[usize],
    (device, dtype): (&B::Device, DType),
) -> FloatTensor<B> {
    #[cfg(feature = "ndarray")]
    let values = match ndarray_tensor::<B>(values, shape, dtype) {
        Ok(t) => return t,
        Err(values) => values,
    };
    let n = values.len();
    let flat = Tensor::<B, 1>::from_data(TensorData::new(values, [n]), device).cast(dtype);
    B::float_reshape(flat.into_primitive().tensor(), Shape::from(shape.to_vec()))
}

/// An NdArray f32 tensor's buffer, shared (or copied into row-major order);
/// any other tensor back unchanged.
#[cfg(feature = "ndarray")]
fn ndarray_host<B: Backend>(t: FloatTensor<B>) -> Result<HostF32, FloatTensor<B>> {
    use burn::backend::ndarray::NdArrayTensor;
    let mut slot = Some(t);
    let Some(nd) = (&mut slot as &mut dyn Any).downcast_mut::<Option<NdArrayTensor>>() else {
        return Err(slot.expect("tensor"));
    };
    match nd.take() {
        Some(NdArrayTensor::F32(storage)) => {
            let array = storage.into_shared();
            let shape = array.shape().to_vec();
            let values = if array.is_standard_layout() {
                Values::Shared(array)
            } else {
                Values::Owned(array.iter().copied().collect())
            };
            Ok(HostF32 { values, shape })
        }
        other => {
            *nd = other;
            Err(slot.expect("tensor"))
        }
    }
}

/// f32 host values as an NdArray f32 tensor on their own buffer, where `B`
/// is NdArray and `dtype` f32; else the values back.
#[cfg(feature = "ndarray")]
fn ndarray_tensor<B: Backend>(values: Vec<f32>, shape: &[usize], dtype: DType) -> Result<FloatTensor<B>, Vec<f32>> {
    use burn::backend::ndarray::NdArrayTensor;
    let is_ndarray = (&None::<FloatTensor<B>> as &dyn Any).is::<Option<NdArrayTensor>>();
    if !is_ndarray || dtype != DType::F32 {
        return Err(values);
    }
    let array = ndarray::ArcArray::from_shape_vec(ndarray::IxDyn(shape), values).expect("values fill the shape");
    let mut slot = Some(NdArrayTensor::from(array));
    Ok((&mut slot as &mut dyn Any)
        .downcast_mut::<Option<FloatTensor<B>>>()
        .and_then(Option::take)
        .expect("B's float tensor is NdArray's"))
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::ops::FloatTensorOps;
    use burn::tensor::{Shape, Tensor, TensorData};

    use super::{device_tensor, host};

    type B = NdArray<f32>;

    /// NdArray's f32 buffers are read in place, handed back without a copy,
    /// and a row-major reshape keeps them (the vendored burn-ndarray's patch).
    #[test]
    fn buffers_are_shared_not_copied() {
        let device = burn::backend::ndarray::NdArrayDevice::default();
        let values: Vec<f32> = (0..24).map(|v| v as f32 * 0.5).collect();
        let t = Tensor::<B, 3>::from_data(TensorData::new(values.clone(), [2, 3, 4]), &device);
        let t = t.into_primitive().tensor();
        let at = |t| host::<B>(t).as_ptr();
        let first = at(t.clone());
        assert_eq!(
            at(B::float_reshape(t.clone(), Shape::new([6, 4]))),
            first,
            "reshape copied"
        );
        let back = host::<B>(t);
        assert_eq!(&back[..], &values[..]);
        let v = back.into_vec();
        let ptr = v.as_ptr();
        let t = device_tensor::<B>(v, &[4, 6], (&device, burn::tensor::DType::F32));
        assert_eq!(at(t.clone()), ptr, "device_tensor copied");
        // A transposed view is not row-major: read as a row-major copy.
        let tt = host::<B>(B::float_swap_dims(t, 0, 1));
        assert_eq!(tt.shape, [6, 4]);
        assert_eq!(tt[1], values[6]);
    }
}

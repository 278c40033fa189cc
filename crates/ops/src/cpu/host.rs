//! Moving a CPU backend's tensors to f32 host values and back.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;
use burn::tensor::{DType, Shape, Tensor, TensorData, TensorPrimitive};

/// A backend's float tensor as f32 host values, and its shape.
pub(crate) fn host<B: Backend>(t: FloatTensor<B>) -> (Vec<f32>, Vec<usize>) {
    let shape = t.shape().to_vec();
    let n: usize = shape.iter().product();
    let flat = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(B::float_reshape(t, Shape::from([n]))));
    (
        flat.into_data().convert::<f32>().into_vec::<f32>().expect("f32 values"),
        shape,
    )
}

/// Host values back as a float tensor of `shape` and `dtype` on `device`.
pub(crate) fn device_tensor<B: Backend>(
    values: Vec<f32>,
    shape: &[usize],
    (device, dtype): (&B::Device, DType),
) -> FloatTensor<B> {
    let n = values.len();
    let flat = Tensor::<B, 1>::from_data(TensorData::new(values, [n]), device).cast(dtype);
    B::float_reshape(flat.into_primitive().tensor(), Shape::from(shape.to_vec()))
}

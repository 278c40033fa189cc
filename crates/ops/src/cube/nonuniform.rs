//! [`NufftBackend`] on `CubeBackend`: [`fno_kernels::nufft`]'s kernels, plans
//! cached per point cloud and device.

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::nufft::Run;

use super::plan_cache::device_nufft;
use super::tensor::{cast_to, empty, row_pitched_shape};
use crate::nonuniform::{NufftBackend, NufftOp};

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> NufftBackend for CubeBackend<R, F, I, BT> {
    fn nufft(x: FloatTensor<Self>, op: &NufftOp) -> FloatTensor<Self> {
        let x = cast_to(x, DType::F32);
        let shape = x.meta.shape().to_vec();
        let lead = &shape[..shape.len() - op.input_rank()];
        let batch = lead.iter().product();
        let mut run = Run::new(batch).values(op.values).scale(op.scale as f32);
        // Real rows padded by Burn's CUDA allocator are read where they lie.
        let x = match row_pitched_shape(&x).filter(|_| op.input_rank() == 1) {
            Some(stored) => {
                run = run.point_stride(stored[stored.len() - 1]);
                x
            }
            None => into_contiguous(x),
        };
        let plan = device_nufft::<R>(
            &x.client,
            &x.device,
            &op.desc(batch),
            op.points.id(),
            op.points.coords(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let out = empty(&x, op.output_shape(lead));
        plan.run(&run, &x.handle, &out.handle).unwrap_or_else(|e| panic!("{e}"));
        out
    }
}

//! The loss norms and their gradient on `CubeBackend`: one kernel each
//! ([`fno_kernels::sobolev`]; the forward adds a second pass where a row is
//! summed by several cubes). Values other than f32 run the defaults.

use burn::tensor::DType;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::sobolev::SobolevProblem;

use super::tensor::empty;

/// The problem of `x`'s shape, where the kernels take it: f32, 1 to 3 grid axes.
pub(super) fn problem<R: CubeRuntime>(tensors: &[&CubeTensor<R>], derivatives: bool) -> Option<SobolevProblem> {
    let dims = tensors[0].meta.shape().to_vec();
    let f32s = tensors.iter().all(|t| t.dtype == DType::F32);
    (f32s && (3..=5).contains(&dims.len())).then(|| SobolevProblem::new(dims[0] * dims[1], &dims[2..], derivatives))
}

/// `[2, B·C]` norms.
pub(super) fn loss_norms<R: CubeRuntime>(problem: SobolevProblem, x: CubeTensor<R>, y: CubeTensor<R>) -> CubeTensor<R> {
    let (x, y) = (into_contiguous(x), into_contiguous(y));
    let out = empty(&x, vec![2, problem.rows]);
    let scratch = empty(&x, vec![problem.scratch_len().max(1)]);
    problem.launch(&x.client, (&x.handle, &y.handle), &out.handle, &scratch.handle);
    out
}

/// The norms' gradient, shaped as `x`.
pub(super) fn loss_norms_grad<R: CubeRuntime>(
    problem: SobolevProblem,
    x: CubeTensor<R>,
    y: Option<CubeTensor<R>>,
    scale: CubeTensor<R>,
) -> CubeTensor<R> {
    let (x, y, scale) = (into_contiguous(x), y.map(into_contiguous), into_contiguous(scale));
    let out = empty(&x, x.meta.shape().to_vec());
    problem.launch_grad(
        &x.client,
        (&x.handle, y.as_ref().map(|y| &y.handle)),
        &scale.handle,
        &out.handle,
    );
    out
}

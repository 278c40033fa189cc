//! The spectral convolution's per-mode contractions on `CubeBackend`, with
//! the bias at its mode and, under fault tolerance, checked by row checksums
//! (and a fault injected where a test or campaign asks for one).

#[cfg(feature = "fault-injection")]
use std::sync::Mutex;

use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::cgemm::CgemmProblem;
use fno_kernels::fault::FaultTolerance;

use super::plan_cache::fault_record;
use super::tensor::{dtype_of, empty_of};
use crate::spec::SpectralError;

/// A bit the next checked contraction flips in its output: (seed, bit).
#[cfg(feature = "fault-injection")]
static PENDING_FAULT: Mutex<Option<(u64, u32)>> = Mutex::new(None);

/// Flips bit `bit` (0–31) of one f32 output value, element and part drawn
/// from `seed` ([`output_fault_site`](fno_kernels::fault::output_fault_site)), of the next contraction that runs with fault tolerance on,
/// before its check: for tests and campaigns of the spectral convolution's
/// checksums (one pending fault; a second call replaces it). Feature
/// `fault-injection` only.
#[cfg(feature = "fault-injection")]
pub fn inject_contraction_fault(seed: u64, bit: u32) {
    *PENDING_FAULT.lock().expect("pending fault poisoned") = Some((seed, bit));
}

/// `problem`'s product of `a` and `b` (with `bias` where it has one),
/// checked by row checksums under `tolerance`.
pub(super) fn cgemm<R: CubeRuntime>(
    problem: CgemmProblem,
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    out_shape: Vec<usize>,
    bias: Option<&CubeTensor<R>>,
    tolerance: FaultTolerance,
) -> Result<CubeTensor<R>, SpectralError> {
    let out = empty_of(a, out_shape, dtype_of(problem.precisions.c.stored_on(&a.client)));
    let (client, c) = (&a.client, &out.handle);
    let bias = bias.map(|t| &t.handle);
    match bias {
        Some(values) => problem.launch_biased(client, &a.handle, &b.handle, c, values),
        None => problem.launch(client, &a.handle, &b.handle, c),
    }
    if tolerance != FaultTolerance::Off {
        let record = fault_record(client, &a.device)?;
        #[cfg(feature = "fault-injection")]
        if let Some((seed, bit)) = PENDING_FAULT.lock().expect("pending fault poisoned").take() {
            let (_, _, elements) = problem.extents();
            let (element, imaginary) = fno_kernels::fault::output_fault_site(seed, elements);
            problem
                .inject_output_fault(client, c, element, imaginary, bit, &record)
                .map_err(SpectralError::Invalid)?;
        }
        problem.check(client, &a.handle, &b.handle, c, bias, tolerance, &record);
    }
    Ok(out)
}

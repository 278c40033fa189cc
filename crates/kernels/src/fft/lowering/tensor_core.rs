//! When an axis runs on the tensor cores (`super::super::tensor_core`): a
//! half-precision plan's untruncated C2C step over contiguous signals of 256
//! points, on a device with half-precision MMA. The stage kernels stay
//! faster on longer signals (benches/results/2026-11-28_tensor_core_fft_h200.md).

use super::super::algorithm::tensor_core::{MmaHalf, TensorCoreConfig, TENSOR_CORE_LEN};
use super::super::options::TensorCores;
use super::super::plan::{AxisKind, AxisStep};
use super::super::window::Window;
use super::tables::twiddle_table;
use super::{Batch, Buf, Kernel, Lowering};
use crate::precision::Precision;

impl Lowering {
    /// The tensor-core configuration for `step` over `batch`, if it runs there.
    pub(super) fn tensor_core_config(&self, step: &AxisStep, batch: Batch) -> Option<TensorCoreConfig> {
        let mma = self
            .half_mma
            .filter(|_| self.options.tensor_cores == TensorCores::Auto)?;
        let inverse = match step.kind {
            AxisKind::C2C { inverse } => inverse,
            _ => return None,
        };
        let whole = |w: Window| matches!(w, Window::Prefix(len) if len >= step.n);
        let untruncated = step.in_len == step.n && step.out_len == step.n && whole(step.load) && whole(step.store);
        (step.n == TENSOR_CORE_LEN && !batch.column() && untruncated).then(|| TensorCoreConfig::new(inverse, mma))
    }

    /// One launch transforming every signal of `step` on the tensor cores.
    pub(super) fn tensor_core(
        &mut self,
        cfg: TensorCoreConfig,
        step: &AxisStep,
        batch: Batch,
        src: (Buf, usize),
        dst: (Buf, usize),
    ) {
        let kernel = Kernel::TensorCore {
            cfg,
            signals: batch.outer,
            scale: step.scale as f32,
            twiddles: twiddle_table(step.n, step.n),
        };
        self.push(kernel, src, dst);
    }
}

/// The MMA operand type for a plan whose buffers are in `input` and `output`
/// precision: bf16 where either is (its range), f16 where either is, none for f32.
pub(super) fn mma_half(input: Precision, output: Precision) -> Option<MmaHalf> {
    match (input, output) {
        (Precision::BF16, _) | (_, Precision::BF16) => Some(MmaHalf::BF16),
        (Precision::F16, _) | (_, Precision::F16) => Some(MmaHalf::F16),
        (Precision::F32, Precision::F32) => None,
    }
}

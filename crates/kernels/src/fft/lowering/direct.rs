//! An axis as one matrix product between its stored windows (the direct DFT,
//! `algorithm/direct_dft.rs`) where that costs less than an FFT.

use super::super::algorithm::direct_dft::{DftConfig, DftShape, MAX_MATRIX};
use super::super::factor::has_radix_plan;
use super::super::options::DirectDft;
use super::super::plan::AxisStep;
use super::super::stage::Convolution;
use super::single::convolution_for;
use super::{Batch, Buf, Kernel, Lowering};

/// Longest axis a direct DFT serves: its f32 sums run over the whole axis.
const MAX_DIRECT_LEN: usize = 8192;

/// A length without a radix plan runs as a direct DFT when its multiply-adds
/// per signal are at most this many times `m·log2 m` for the length `m` of the
/// convolution it would otherwise run as (Bluestein's, or Rader's `p − 1`).
/// Lengths with a radix plan stay FFTs
/// (benches/results/2026-11-22_direct_dft_h100.md).
const DIRECT_RATIO: f64 = 16.0;

impl Lowering {
    pub(super) fn prefers_direct(&self, step: &AxisStep, dft: &DftShape) -> bool {
        match self.options.direct_dft {
            _ if step.n > MAX_DIRECT_LEN || dft.work() > MAX_MATRIX => false,
            DirectDft::Always => true,
            DirectDft::Never => false,
            DirectDft::Auto if has_radix_plan(step.n) => false,
            DirectDft::Auto => {
                let m = Convolution::pass_len(convolution_for(step.n, self.options.primes), step.n) as f64;
                (dft.work() as f64) <= DIRECT_RATIO * m * m.log2()
            }
        }
    }

    /// One launch: the DFT matrix between the stored windows times every signal.
    pub(super) fn direct(
        &mut self,
        step: &AxisStep,
        dft: DftShape,
        batch: Batch,
        src: (Buf, usize),
        dst: (Buf, usize),
    ) {
        let Batch { outer, inner } = batch;
        let strides = |parts: usize, len: usize| [parts * len * inner, parts, parts * inner];
        let kernel = Kernel::Dft {
            cfg: DftConfig::for_problem(dft.rows, dft.in_parts, dft.out_parts, batch.column()),
            shape: dft,
            matrix: dft.matrix(step),
            signals: outer * inner,
            inner,
            input: strides(dft.in_parts, step.in_len),
            output: strides(dft.out_parts, step.out_len),
        };
        self.push(kernel, src, dst);
    }
}

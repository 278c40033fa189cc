//! Signals too long for one cube: four-step FFTs (columns, twiddles, rows),
//! long real transforms' fold and untangle passes, and Bluestein's
//! convolution of long lengths through two four-step FFTs.

use super::super::algorithm::bluestein::{self, bluestein_length};
use super::super::factor::{four_step_split, has_radix_plan};
use super::super::plan::{AxisStep, FftError};
use super::super::real::HalfSpectrumConfig;
use super::super::stage::{AxisFold, InputForm, OutputForm, PostTwiddle, StageLayout};
use super::super::window::Window;
use super::single::COLUMN_SIGNALS;
use super::tables::twiddle_table;
use super::{Batch, Buf, Kernel, Lowering, Sink, Source, Transform};

/// A contiguous complex scratch sequence of length `len`, read or written whole.
fn scratch_source(buf: (Buf, usize), len: usize) -> Source {
    Source {
        buf,
        form: InputForm::Complex,
        window: Window::Prefix(len),
        stored: len,
        seq_len: len,
        len,
        factor: None,
    }
}

fn scratch_sink(buf: (Buf, usize), len: usize) -> Sink {
    Sink {
        buf,
        form: OutputForm::Complex,
        window: Window::Prefix(len),
        stored: len,
        seq_len: len,
        len,
        factor: None,
        scale: 1.0,
    }
}

impl Lowering {
    /// Lowers a transform too long for one cube.
    pub(super) fn long(
        &mut self,
        step: &AxisStep,
        t: &Transform,
        batch: Batch,
        source: Source,
        sink: Sink,
    ) -> Result<(), FftError> {
        let n = t.n;
        let (src, dst) = (source.buf, sink.buf);
        let complex_floats = |len: usize| 2 * batch.outer * len * batch.inner;
        // Too long for one cube: four-step FFTs, Bluestein's for every length
        // without a radix plan.
        match (!has_radix_plan(n)).then(|| bluestein_length(n)) {
            None => {
                // Packed real transforms fold and untangle in separate passes here.
                let source = if t.input == InputForm::HermitianPacked {
                    let folded = (self.temp(complex_floats(n)), complex_floats(n));
                    let cfg = HalfSpectrumConfig {
                        n,
                        window: step.load,
                        stored: step.in_len,
                        scale_bits: 1f32.to_bits(),
                    };
                    self.push_half_spectrum(true, cfg, batch, src, folded);
                    scratch_source(folded, n)
                } else {
                    source
                };
                if t.output == OutputForm::Untangled {
                    let spectrum = (self.temp(complex_floats(n)), complex_floats(n));
                    self.four_step(n, t.inverse, batch, source, scratch_sink(spectrum, n))?;
                    let cfg = HalfSpectrumConfig {
                        n,
                        window: step.store,
                        stored: step.out_len,
                        scale_bits: sink.scale.to_bits(),
                    };
                    self.push_half_spectrum(false, cfg, batch, spectrum, dst);
                    Ok(())
                } else {
                    self.four_step(n, t.inverse, batch, source, sink)
                }
            }
            // A long chirp-z convolution: two four-step FFTs of length m, the
            // chirp applied on the first load and the last store, the kernel's
            // spectrum on the store between them.
            Some(m) => {
                let chirp = bluestein::chirp(n, t.inverse);
                let w = bluestein::interleave(&chirp);
                let padded = (self.temp(complex_floats(m)), complex_floats(m));
                let mut forward_sink = scratch_sink(padded, m);
                forward_sink.factor = Some(bluestein::kernel_spectrum(&chirp, m));
                self.four_step(
                    m,
                    false,
                    batch,
                    Source {
                        factor: Some(w.clone()),
                        ..source
                    },
                    forward_sink,
                )?;
                self.four_step(
                    m,
                    true,
                    batch,
                    scratch_source(padded, m),
                    Sink {
                        factor: Some(w),
                        ..sink
                    },
                )
            }
        }
    }

    pub(super) fn push_half_spectrum(
        &mut self,
        fold: bool,
        cfg: HalfSpectrumConfig,
        batch: Batch,
        src: (Buf, usize),
        dst: (Buf, usize),
    ) {
        let half = cfg.n;
        let (entries, total) = if fold {
            (half, batch.outer * half * batch.inner)
        } else {
            (half + 1, batch.outer * cfg.stored * batch.inner)
        };
        let kernel = Kernel::HalfSpectrum {
            fold,
            cfg,
            inner: batch.inner,
            total,
            twiddles: twiddle_table(2 * half, entries),
        };
        self.push(kernel, src, dst);
    }

    /// Two launches for a transform of a length `len` with a radix plan, too
    /// long for one cube: `len = n1 · n2`, columns of length n1 (twiddled),
    /// then rows of length n2 whose outputs land transposed (k = k1 + n1·k2).
    pub(super) fn four_step(
        &mut self,
        len: usize,
        inverse: bool,
        batch: Batch,
        src: Source,
        dst: Sink,
    ) -> Result<(), FftError> {
        // Divisors of a length with a radix plan have one. Columns of
        // COLUMN_SIGNALS signals coalesce best; the longest lengths settle for narrower tiles.
        let fits = |n: usize, signals: usize| self.fits(n, n, signals);
        let (n1, n2) = four_step_split(len, |n1| fits(n1, COLUMN_SIGNALS), |n2| fits(n2, 1))
            .or_else(|| four_step_split(len, |n1| fits(n1, 1), |n2| fits(n2, 1)))
            .ok_or_else(|| FftError::Unsupported(format!("length {len} is too long for a two-level FFT")))?;
        let Batch { outer, inner } = batch;
        let column = batch.column();
        let scratch = (self.temp(2 * outer * len * inner), 2 * outer * len * inner);
        let fold_dim = if column { 1 } else { 2 };

        // Step A: columns over n1, signals (outer, n2, inner).
        let mut cfg = self.single_stage_config(
            n1,
            None,
            (src.form, OutputForm::Complex),
            true,
            if column { inner } else { n2 },
            0,
        );
        cfg.inverse = inverse;
        cfg.load = src.window;
        cfg.load_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n2,
            seq_len: src.seq_len,
            len: src.len,
        });
        cfg.post_twiddle = Some(PostTwiddle {
            dim: fold_dim,
            total: len,
            fine_len: n2,
        });
        cfg.load_factor = src.factor.as_ref().map(|_| 0);
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n2,
                nc: inner,
                input: [src.stored * inner, 0, 1, inner],
                output: [len * inner, inner, 1, n2 * inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n2,
                input: [0, src.stored, 0, 1],
                output: [0, len, 1, n2],
            }
        };
        self.push_stage(cfg, layout, src.buf, scratch, src.factor.as_deref().unwrap_or_default());

        // Step B: rows over n2, signals (outer, k1, inner), transposed store.
        let mut cfg = self.single_stage_config(
            n2,
            None,
            (InputForm::Complex, dst.form),
            column,
            if column { inner } else { n1 },
            0,
        );
        cfg.store_signals_fastest = true;
        cfg.signals_per_cube = cfg
            .signals_per_cube
            .max(COLUMN_SIGNALS.min(n1))
            .min(self.shared_limit / (8 * cfg.smem_stride))
            .min(self.max_threads / cfg.threads_per_signal)
            .max(1);
        cfg.inverse = inverse;
        cfg.store = dst.window;
        cfg.store_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n1,
            seq_len: dst.seq_len,
            len: dst.len,
        });
        cfg.scale_bits = dst.scale.to_bits();
        cfg.store_factor = dst.factor.as_ref().map(|_| 0);
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n1,
                nc: inner,
                input: [len * inner, n2 * inner, 1, inner],
                output: [dst.stored * inner, 0, 1, inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n1,
                input: [0, len, n2, 1],
                output: [0, dst.stored, 0, 1],
            }
        };
        self.push_stage(cfg, layout, scratch, dst.buf, dst.factor.as_deref().unwrap_or_default());
        Ok(())
    }
}

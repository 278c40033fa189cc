//! Launching a problem: its buffers and strides bound to the kernel, the
//! staging its operands allow, and a split's partials added.

use super::config::{CgemmConfig, Staging};
use super::kernel::cgemm_kernel;
use super::problem::{CgemmProblem, ModeBias};
use crate::pairs::{pair_aligned, vector_size};
use crate::split_sum::SplitSumProblem;
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

impl CgemmProblem {
    /// Runs on a CubeCL device; buffers hold f32 values (complex interleaved).
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, a: &Handle, b: &Handle, c: &Handle) {
        self.launch_with(self.config(), client, a, b, c)
    }

    /// [`launch`](Self::launch) of a problem with a [`ModeBias`], `bias`
    /// holding its `q` values.
    pub fn launch_biased<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        a: &Handle,
        b: &Handle,
        c: &Handle,
        bias: &Handle,
    ) {
        self.dispatch(self.config(), client, (a, b, c), Some(bias))
    }

    /// [`launch`](Self::launch) with a chosen block shape (for tuning); its
    /// conjugations and scaling must be this problem's.
    pub fn launch_with<R: Runtime>(
        &self,
        cfg: CgemmConfig,
        client: &ComputeClient<R>,
        a: &Handle,
        b: &Handle,
        c: &Handle,
    ) {
        self.dispatch(cfg, client, (a, b, c), None)
    }

    fn dispatch<R: Runtime>(
        &self,
        cfg: CgemmConfig,
        client: &ComputeClient<R>,
        (a, b, c): (&Handle, &Handle, &Handle),
        bias: Option<&Handle>,
    ) {
        assert_eq!(
            (cfg.complex, cfg.conj_a, cfg.conj_b, cfg.scaled, cfg.biased),
            (
                self.complex,
                self.conj_a,
                self.conj_b,
                self.is_scaled(),
                self.bias.is_some()
            ),
            "the configuration belongs to another problem"
        );
        assert_eq!(
            bias.is_some(),
            self.bias.is_some(),
            "a biased problem launches with its bias values, and only it"
        );
        assert!(
            self.complex || !(self.conj_a || self.conj_b),
            "real operands have no conjugate"
        );
        let (ea, eb, ec) = self.extents();
        let count = CubeCount::Static(
            self.k.div_ceil(cfg.modes) as u32,
            (self.p.div_ceil(cfg.block_p()) * cfg.splits) as u32,
            self.q.div_ceil(cfg.block_q()) as u32,
        );
        // Split launches write dense partials [split, p, q, k], then add them.
        let outputs = self.p * self.q * self.k;
        let r_per = self.r.div_ceil(cfg.splits).next_multiple_of(cfg.chunk);
        let partial = (cfg.splits > 1).then(|| client.empty(4 * cfg.width() * cfg.splits * outputs));
        let (target, target_len, c_strides, c_split) = match &partial {
            Some(h) => (h, cfg.splits * outputs, (self.q * self.k, self.k, 1), outputs),
            None => (c, ec, (self.c.row, self.c.col, self.c.mode), 0),
        };
        // Unscaled launches bind A in the scale slot (never read): no upload.
        let scale = if cfg.scaled {
            let factors = client.create_from_slice(f32::as_bytes(&self.mode_scale));
            unsafe { ArrayArg::from_raw_parts(factors, self.mode_scale.len()) }
        } else {
            unsafe { ArrayArg::from_raw_parts(a.clone(), 1) }
        };
        // Unbiased launches bind A in the bias slot too.
        let (bias_values, bias) = match (bias, self.bias) {
            (Some(h), Some(mb)) => (unsafe { ArrayArg::from_raw_parts(h.clone(), self.q) }, mb),
            _ => (
                unsafe { ArrayArg::from_raw_parts(a.clone(), 1) },
                ModeBias { mode: 0, factor: 0.0 },
            ),
        };
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), cfg.width() * len) };
        // Complex operands travel as 8-byte pairs wherever every buffer starts on a pair.
        let pairs = cfg.complex && [a, b, target].into_iter().all(pair_aligned);
        let props = client.properties();
        let staging = Staging {
            pairs,
            async_copy: pairs
                && props.features.copy_async
                && 2 * cfg.shared_bytes() <= props.hardware.max_shared_memory_size,
        };
        // SAFETY: launched without bounds checks: every index the kernel forms
        // stays inside the arrays sized here (see `DeviceFft::launch`).
        unsafe {
            cgemm_kernel::launch_unchecked::<f32, R>(
                client,
                count,
                CubeDim::new_1d(cfg.threads() as u32),
                vector_size(pairs),
                arr(a, ea),
                arr(b, eb),
                arr(target, target_len),
                scale,
                bias_values,
                bias.mode,
                bias.factor,
                self.p,
                self.q,
                self.r,
                self.k,
                self.a.row,
                self.a.col,
                self.a.mode,
                self.b.row,
                self.b.col,
                self.b.mode,
                c_strides.0,
                c_strides.1,
                c_strides.2,
                cfg.splits,
                r_per,
                c_split,
                cfg,
                staging,
            );
        }
        if let Some(partial) = partial {
            let sum = SplitSumProblem {
                splits: cfg.splits,
                p: self.p,
                q: self.q,
                k: self.k,
                width: cfg.width(),
                strides: self.c,
            };
            sum.launch(client, &partial, c);
        }
    }
}

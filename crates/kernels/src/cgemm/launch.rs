//! Launching a problem: its buffers and strides bound to the kernel, the
//! staging its operands allow, and a split's partials added.

use super::config::{CgemmConfig, Staging};
use super::kernel::{
    cgemm_kernel, AtModeLaunch, CgemmDimsLaunch, CgemmStridesLaunch, OperandStridesLaunch, RSplitLaunch,
};
use super::problem::{span, CgemmProblem, ModeBias};
use crate::limits::DeviceLimits;
use crate::pairs::{holds_pairs, vector_size};
use crate::precision::{with_storage, Storage, Stored};
use crate::split_sum::SplitSumProblem;
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

impl CgemmProblem {
    /// Runs on a CubeCL device; buffers hold values (complex interleaved) in
    /// the problem's [`precisions`](CgemmProblem::precisions), as
    /// [`Precision::stored_on`](crate::precision::Precision::stored_on) the device.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, a: &Handle, b: &Handle, c: &Handle) {
        self.launch_with(self.config(&DeviceLimits::of(client)), client, a, b, c)
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
        self.dispatch(
            self.config(&DeviceLimits::of(client)),
            client,
            (a, b, c),
            Some(bias),
            false,
        )
    }

    /// [`launch`](Self::launch) summing over the modes: `C[p, q] = Σ_k C_k[p, q]`
    /// at `self.c`'s row and column strides (its mode stride unused). The
    /// products land as partials and one pass sums them, the split's with the
    /// modes': a shared weight's gradient in one launch pair, in its own layout.
    pub fn launch_mode_sum<R: Runtime>(&self, client: &ComputeClient<R>, a: &Handle, b: &Handle, c: &Handle) {
        self.dispatch(self.config(&DeviceLimits::of(client)), client, (a, b, c), None, true)
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
        self.dispatch(cfg, client, (a, b, c), None, false)
    }

    fn dispatch<R: Runtime>(
        &self,
        cfg: CgemmConfig,
        client: &ComputeClient<R>,
        (a, b, c): (&Handle, &Handle, &Handle),
        bias: Option<&Handle>,
        sum_modes: bool,
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
        let (ea, eb, mut ec) = self.extents();
        if sum_modes {
            ec = span(self.c, self.p, self.q, 1);
        }
        // Rows of p-blocks (times splits) past a grid's y limit fold into x.
        const MAX_Y: usize = 65535;
        let rows = self.p.div_ceil(cfg.block_p()) * cfg.splits;
        let count = CubeCount::Static(
            (self.k.div_ceil(cfg.modes) * rows.div_ceil(MAX_Y)) as u32,
            rows.min(MAX_Y) as u32,
            self.q.div_ceil(cfg.block_q()) as u32,
        );
        // Split launches write dense partials [split, p, q, k], then add them;
        // mode sums write them [split, k, p, q] and add splits and modes alike.
        let outputs = self.p * self.q * self.k;
        let r_per = self.r.div_ceil(cfg.splits).next_multiple_of(cfg.chunk);
        let partial = (cfg.splits > 1 || sum_modes).then(|| client.empty(4 * cfg.width() * cfg.splits * outputs));
        let (target, target_len, c_strides, c_split) = match &partial {
            Some(h) if sum_modes => (h, cfg.splits * outputs, (self.q, 1, self.p * self.q), outputs),
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
        let stored = [self.precisions.a, self.precisions.b, self.precisions.c].map(|p| p.stored_on(client));
        let bytes = stored.map(Stored::bytes);
        assert!(
            partial.is_none() || stored[2] == Stored::F32,
            "split reductions add their partials into an f32 output"
        );
        // Complex operands travel as pairs wherever every buffer starts on a pair.
        let pairs = cfg.complex
            && [(a, bytes[0]), (b, bytes[1]), (target, bytes[2])]
                .into_iter()
                .all(|(h, value_bytes)| holds_pairs(h, 1, value_bytes));
        let props = client.properties();
        let staging = Staging {
            pairs,
            async_copy: pairs
                && props.features.copy_async
                && 2 * cfg.shared_bytes_of(bytes[0], bytes[1]) <= props.hardware.max_shared_memory_size,
        };
        let args = LaunchArgs {
            count,
            cube_dim: CubeDim::new_1d(cfg.threads() as u32),
            buffers: [(a, ea), (b, eb), (target, target_len)].map(|(h, len)| (h.clone(), cfg.width() * len)),
            scale,
            bias: bias_values,
            bias_at: (bias.mode, bias.factor),
            shape: [self.p, self.q, self.r, self.k],
            strides: [
                self.a.row,
                self.a.col,
                self.a.mode,
                self.b.row,
                self.b.col,
                self.b.mode,
                c_strides.0,
                c_strides.1,
                c_strides.2,
            ],
            split: (cfg.splits, r_per, c_split),
            cfg,
            staging,
        };
        with_operand_storage(client, stored, args);
        if let Some(partial) = partial {
            let (splits, k) = match sum_modes {
                true => (cfg.splits * self.k, 1),
                false => (cfg.splits, self.k),
            };
            let sum = SplitSumProblem {
                splits,
                p: self.p,
                q: self.q,
                k,
                width: cfg.width(),
                strides: self.c,
            };
            sum.launch(client, &partial, c);
        }
    }
}

/// What one launch binds, whatever its operands' storage.
struct LaunchArgs<R: Runtime> {
    count: CubeCount,
    cube_dim: CubeDim,
    /// A, B and the output (C or the split partials) with their lengths in values.
    buffers: [(Handle, usize); 3],
    scale: ArrayArg<R>,
    bias: ArrayArg<R>,
    bias_at: (usize, f32),
    shape: [usize; 4],
    strides: [usize; 9],
    split: (usize, usize, usize),
    cfg: CgemmConfig,
    staging: Staging,
}

/// A launch written once for any storage of its three operands (A, B, C).
pub(super) trait OperandJob<R: Runtime> {
    fn launch<SA: Storage, SB: Storage, SC: Storage>(self, client: &ComputeClient<R>);
}

/// Runs `job` with the [`Storage`]s of `stored` (A, B, C).
pub(super) fn with_operand_storage<R: Runtime, J: OperandJob<R>>(
    client: &ComputeClient<R>,
    stored: [Stored; 3],
    job: J,
) {
    with_storage!(stored[0], storage_b, [J], client, stored, job)
}

fn storage_b<R: Runtime, J: OperandJob<R>, SA: Storage>(client: &ComputeClient<R>, stored: [Stored; 3], job: J) {
    with_storage!(stored[1], storage_c, [J, SA], client, stored, job)
}

fn storage_c<R: Runtime, J: OperandJob<R>, SA: Storage, SB: Storage>(
    client: &ComputeClient<R>,
    stored: [Stored; 3],
    job: J,
) {
    with_storage!(stored[2], storage_run, [J, SA, SB], client, job)
}

fn storage_run<R: Runtime, J: OperandJob<R>, SA: Storage, SB: Storage, SC: Storage>(client: &ComputeClient<R>, job: J) {
    job.launch::<SA, SB, SC>(client)
}

impl<R: Runtime> OperandJob<R> for LaunchArgs<R> {
    fn launch<SA: Storage, SB: Storage, SC: Storage>(self, client: &ComputeClient<R>) {
        let LaunchArgs {
            count,
            cube_dim,
            buffers: [(a, ea), (b, eb), (c, ec)],
            scale,
            bias,
            bias_at,
            shape: [p, q, r, k],
            strides: [a_p, a_r, a_k, b_r, b_q, b_k, c_p, c_q, c_k],
            split: (splits, r_per, c_split),
            cfg,
            staging,
        } = self;
        let arr = |h: Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h, len) };
        // SAFETY: launched without bounds checks: every index the kernel forms
        // stays inside the arrays sized here (see `DeviceFft::launch`).
        unsafe {
            cgemm_kernel::launch_unchecked::<f32, SA, SB, SC, R>(
                client,
                count,
                cube_dim,
                vector_size(staging.pairs),
                arr(a, ea),
                arr(b, eb),
                arr(c, ec),
                scale,
                AtModeLaunch::new(bias, bias_at.0, bias_at.1),
                CgemmDimsLaunch::new(p, q, r, k),
                CgemmStridesLaunch::new(
                    OperandStridesLaunch::new(a_p, a_r, a_k),
                    OperandStridesLaunch::new(b_r, b_q, b_k),
                    OperandStridesLaunch::new(c_p, c_q, c_k),
                ),
                RSplitLaunch::new(splits, r_per, c_split),
                cfg,
                staging,
            );
        }
    }
}

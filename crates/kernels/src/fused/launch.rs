//! Launching a problem: its tables uploaded, its buffers and strides bound to
//! the kernel.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::config::{FusedConfig, Schedule};
use super::kernel::{
    fused_kernel, FusedShapeLaunch, FusedStridesLaunch, ModeScalingLaunch, PencilAtLaunch, TransformTablesLaunch,
    WeightStridesLaunch,
};
use super::problem::{entry_floats, FusedSpectralConv};
use crate::cgemm::ModeBias;
use crate::fft::shared_stage_tables;
use crate::fft::stage::StageConfig;
use crate::fft::AxisStep;
use crate::limits::DeviceLimits;
use crate::pairs::{pair_aligned, vector_size};
use crate::precision::Native;

/// The device buffers of one launch (f32): `x`, the weight and `y`; the
/// forward spectrum written on the way if wanted; the bias values if the
/// problem has a [`ModeBias`].
#[derive(Clone, Copy)]
pub struct FusedBuffers<'a> {
    pub x: &'a Handle,
    pub weight: &'a Handle,
    pub y: &'a Handle,
    pub spectrum: Option<&'a Handle>,
    pub bias: Option<&'a Handle>,
}

/// The two transforms' twiddle tables and factors on a device.
pub struct FusedTables {
    pub(super) steps: (AxisStep, AxisStep),
    forward: [(Handle, usize); 2],
    inverse: [(Handle, usize); 2],
}

impl FusedSpectralConv {
    /// Uploads the two transforms' tables for `client`'s device; any problem
    /// with the same transforms launches with them.
    pub fn tables<R: Runtime>(&self, client: &ComputeClient<R>) -> FusedTables {
        let upload = |values: &[f32]| (client.create_from_slice(f32::as_bytes(values)), values.len());
        let upload_stage = |cfg: &StageConfig| {
            let (twiddles, factors) = shared_stage_tables(cfg);
            [upload(&twiddles), upload(&factors)]
        };
        FusedTables {
            steps: self.steps,
            forward: upload_stage(&self.stages.0),
            inverse: upload_stage(&self.stages.1),
        }
    }

    /// Runs on a CubeCL device (f32 buffers). With `spectrum`, also writes the
    /// forward transform of `x`, `[batch, cin, M, inner]` complex, densely;
    /// `bias` holds the [`ModeBias`]'s `cout` values when the problem has one.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, tables: &FusedTables, buffers: FusedBuffers<'_>) {
        self.dispatch(
            self.chosen_config(buffers.spectrum.is_some(), &DeviceLimits::of(client)),
            client,
            tables,
            buffers,
        )
    }

    /// [`launch`](Self::launch) with chosen tiles (for tests and tuning); the
    /// configuration's stages and flags must be this problem's.
    pub fn launch_with<R: Runtime>(
        &self,
        cfg: FusedConfig,
        client: &ComputeClient<R>,
        tables: &FusedTables,
        buffers: FusedBuffers<'_>,
    ) {
        let limits = DeviceLimits::of(client);
        let (forward, inverse) = self.stages_for_cube(cfg.threads());
        let own = FusedConfig {
            forward,
            inverse,
            ..self.config(buffers.spectrum.is_some(), &limits)
        };
        let tiles = |c: &FusedConfig| FusedConfig {
            batch_tile: 0,
            out_tile: 0,
            schedule: Schedule::Streamed,
            ..c.clone()
        };
        assert_eq!(tiles(&cfg), tiles(&own), "the configuration belongs to another problem");
        if let Schedule::Resident { cin, .. } = cfg.schedule {
            assert_eq!(cin, self.cin, "the configuration belongs to another problem");
        }
        assert!(cfg.fits(&limits), "tiles that do not fit: {cfg:?}");
        self.dispatch(cfg, client, tables, buffers)
    }

    fn dispatch<R: Runtime>(
        &self,
        mut cfg: FusedConfig,
        client: &ComputeClient<R>,
        tables: &FusedTables,
        buffers: FusedBuffers<'_>,
    ) {
        assert!(tables.steps == self.steps, "the tables belong to other transforms");
        assert_eq!(
            buffers.bias.is_some(),
            self.bias.is_some(),
            "a biased problem launches with its bias values, and only it"
        );
        let FusedBuffers {
            x,
            weight,
            y,
            spectrum,
            bias,
        } = buffers;
        // A buffer that starts inside a pair (a view at an odd float offset) moves floats one by one.
        cfg.forward.vector_input &= pair_aligned(x);
        cfg.inverse.vector_output &= pair_aligned(y);
        cfg.vector_weight &= pair_aligned(weight);
        let (ex, ew, ey, es) = self.extents();
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // Unscaled and unbiased launches bind the weight in the scale and bias
        // slots, and a launch without a spectrum binds the weight in its slot
        // (never written: the switch is comptime).
        let scale = if cfg.scaled {
            let factors = client.create_from_slice(f32::as_bytes(&self.mode_scale));
            arr(&factors, self.mode_scale.len())
        } else {
            arr(weight, 1)
        };
        let spectrum = match spectrum {
            Some(s) => arr(s, es),
            None => arr(weight, 1),
        };
        let (bias, mode_bias) = match (bias, self.bias) {
            (Some(h), Some(mb)) => (arr(h, self.cout), mb),
            _ => (arr(weight, 1), ModeBias { mode: 0, factor: 0.0 }),
        };
        let count = CubeCount::Static(
            self.inner as u32,
            self.cout.div_ceil(cfg.out_tile) as u32,
            self.batch.div_ceil(cfg.batch_tile) as u32,
        );
        let (xs, ys) = (
            self.x.in_entries(entry_floats(&cfg.forward).0),
            self.y.in_entries(entry_floats(&cfg.inverse).1),
        );
        let table = |t: &(Handle, usize)| arr(&t.0, t.1);
        // SAFETY: launched without bounds checks: every index the kernel forms
        // stays inside the arrays sized here (see `DeviceFft::launch`).
        unsafe {
            fused_kernel::launch_unchecked::<f32, Native<f32>, Native<f32>, R>(
                client,
                count,
                CubeDim::new_1d(cfg.threads() as u32),
                vector_size(cfg.forward.vector_input),
                vector_size(cfg.inverse.vector_output),
                vector_size(cfg.vector_weight),
                arr(x, ex),
                arr(weight, ew),
                arr(y, ey),
                spectrum,
                TransformTablesLaunch::new(table(&tables.forward[0]), table(&tables.forward[1])),
                TransformTablesLaunch::new(table(&tables.inverse[0]), table(&tables.inverse[1])),
                ModeScalingLaunch::new(scale, bias, mode_bias.mode, mode_bias.factor),
                FusedShapeLaunch::new(self.batch, self.cin, self.cout, self.inner),
                FusedStridesLaunch::new(
                    PencilAtLaunch::new(xs[0], xs[1], xs[2], xs[3]),
                    PencilAtLaunch::new(ys[0], ys[1], ys[2], ys[3]),
                    WeightStridesLaunch::new(self.weight.row, self.weight.col, self.weight.mode),
                ),
                cfg,
            );
        }
    }
}

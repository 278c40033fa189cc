//! Lowering an [`FftPlan`] to kernel launches on a CubeCL device.

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::factor::radices;
use super::real::{fold_kernel, untangle_kernel, HalfSpectrumConfig};
use super::stage::{fft_stage_kernel, smem_stride_for, AxisFold, PostTwiddle, StageConfig, StageKind, StageLayout};
use super::{AxisKind, AxisStep, FftError, FftPlan, Window};

/// Threads a row-mode cube aims for.
const ROW_THREADS: usize = 256;
/// Signals a column-mode tile wants side by side, so that each row of the tile
/// is at least 64 contiguous bytes.
const COLUMN_SIGNALS: usize = 8;
/// Static shared memory a cube may take on every backend we target.
const SHARED_LIMIT: usize = 48 * 1024;
const ELEMWISE_THREADS: usize = 256;

/// Where a launch reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buf {
    Input,
    Output,
    /// A scratch buffer of the given number of f32 values.
    Temp(usize, usize),
}

// A plan holds a handful of launches, built once: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Launch {
    Stage {
        cfg: StageConfig,
        layout: StageLayout,
        twiddles: Handle,
        twiddle_floats: usize,
        post: Option<(Handle, usize, Handle, usize)>,
    },
    /// The extra pass of a long real transform: untangle (R2C) or fold (C2R).
    HalfSpectrum {
        fold: bool,
        cfg: HalfSpectrumConfig,
        inner: usize,
        total: usize,
        twiddles: Handle,
        twiddle_floats: usize,
    },
}

struct Pass {
    launch: Launch,
    src: Buf,
    src_floats: usize,
    dst: Buf,
    dst_floats: usize,
}

/// An [`FftPlan`] lowered for one device: twiddle tables uploaded, launches chosen.
pub struct DeviceFft<R: Runtime> {
    client: ComputeClient<R>,
    plan: FftPlan,
    passes: Vec<Pass>,
    temps: Vec<usize>,
}

impl FftPlan {
    /// Lowers the plan for `client`'s device (uploads twiddle tables once).
    pub fn on_device<R: Runtime>(&self, client: &ComputeClient<R>) -> Result<DeviceFft<R>, FftError> {
        self.on_device_with(client, DeviceOptions::default())
    }

    /// [`Self::on_device`] with non-default lowering choices (for measurements).
    pub fn on_device_with<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        options: DeviceOptions,
    ) -> Result<DeviceFft<R>, FftError> {
        DeviceFft::new(client.clone(), self.clone(), options)
    }
}

/// Choices the lowering makes that do not change results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Skip last-pass butterflies whose outputs a truncating store drops. Off by
    /// default: on an H100 the memory-bound standalone FFT ran 1–4% slower with
    /// it (benches/results/2026-11-22_fft_h100.md); kept for compute-bound
    /// callers such as fused kernels, and tested to compute the same function.
    pub prune: bool,
}

/// Exact `exp(-2πi·e/len)` for `e < count`, computed in f64, interleaved f32.
fn twiddle_table(len: usize, count: usize) -> Vec<f32> {
    (0..count)
        .flat_map(|e| {
            // Reduce the angle exactly before the trigonometry.
            let phase = -2.0 * std::f64::consts::PI * ((e % len) as f64) / len as f64;
            [phase.cos() as f32, phase.sin() as f32]
        })
        .collect()
}

struct Lowering<'a, R: Runtime> {
    client: &'a ComputeClient<R>,
    passes: Vec<Pass>,
    temps: Vec<usize>,
    shared_limit: usize,
    max_threads: usize,
    options: DeviceOptions,
}

impl<R: Runtime> Lowering<'_, R> {
    fn upload(&self, values: &[f32]) -> (Handle, usize) {
        (self.client.create_from_slice(f32::as_bytes(values)), values.len())
    }

    fn temp(&mut self, floats: usize) -> Buf {
        self.temps.push(floats);
        Buf::Temp(self.temps.len() - 1, floats)
    }

    /// The largest complex length one cube transforms, `signals` signals at a
    /// time, each with `extra` slots beyond its length.
    fn max_single(&self, signals: usize, extra: usize) -> usize {
        let mut n = 1;
        while 8 * signals * smem_stride_for(2 * n + extra) <= self.shared_limit
            && 2 * n / 8 <= self.max_threads / signals
        {
            n *= 2;
        }
        n
    }

    fn single_stage_config(
        &self,
        n: usize,
        kind: StageKind,
        column: bool,
        signals_hint: usize,
    ) -> Result<StageConfig, FftError> {
        let radix_list =
            radices(n).ok_or_else(|| FftError::Unsupported(format!("length {n} is not a power of two")))?;
        let max_radix = radix_list.iter().copied().max().unwrap_or(1);
        let threads_per_signal = (n / max_radix).max(1);
        let slots = if kind == StageKind::C2R { n + 1 } else { n };
        let stride = smem_stride_for(slots);
        let by_smem = (self.shared_limit / (8 * stride)).max(1);
        let wanted = if column {
            COLUMN_SIGNALS.max(ROW_THREADS / threads_per_signal)
        } else {
            ROW_THREADS / threads_per_signal
        };
        let most = wanted.min(by_smem).min(self.max_threads / threads_per_signal).max(1);
        // Spread the `signals_hint` signals of a row of tiles evenly, so that a
        // last, nearly empty tile does not cost a whole cube.
        let tiles = signals_hint.max(1).div_ceil(most);
        let signals = signals_hint.max(1).div_ceil(tiles);
        Ok(StageConfig {
            n,
            radices: radix_list,
            threads_per_signal,
            signals_per_cube: signals,
            inverse: false,
            kind,
            // Whole sequences unless the caller narrows them.
            load: Window::Prefix(2 * n + 1),
            store: Window::Prefix(2 * n + 1),
            load_signals_fastest: column,
            store_signals_fastest: column,
            smem_stride: stride,
            scale_bits: 1f32.to_bits(),
            post_twiddle: None,
            prune: self.options.prune,
            load_fold: None,
            store_fold: None,
        })
    }

    fn push_stage(&mut self, cfg: StageConfig, layout: StageLayout, src: (Buf, usize), dst: (Buf, usize)) {
        let table_len = if matches!(cfg.kind, StageKind::R2C | StageKind::C2R) {
            2 * cfg.n
        } else {
            cfg.n
        };
        let (twiddles, twiddle_floats) = self.upload(&twiddle_table(table_len, table_len.max(1)));
        let post = cfg.post_twiddle.map(|pt| {
            let coarse_len = pt.total.div_ceil(pt.fine_len);
            let coarse: Vec<f32> = (0..coarse_len)
                .flat_map(|q| {
                    let phase = -2.0 * std::f64::consts::PI * ((q * pt.fine_len) % pt.total) as f64 / pt.total as f64;
                    [phase.cos() as f32, phase.sin() as f32]
                })
                .collect();
            let (c, cf) = self.upload(&coarse);
            let (f, ff) = self.upload(&twiddle_table(pt.total, pt.fine_len));
            (c, cf, f, ff)
        });
        self.passes.push(Pass {
            launch: Launch::Stage {
                cfg,
                layout,
                twiddles,
                twiddle_floats,
                post,
            },
            src: src.0,
            src_floats: src.1,
            dst: dst.0,
            dst_floats: dst.1,
        });
    }

    /// Lowers one axis step, reading `src` (shape `shape`) and writing `dst`.
    fn lower_step(
        &mut self,
        step: &AxisStep,
        shape: &[usize],
        src: (Buf, usize),
        dst: (Buf, usize),
    ) -> Result<(), FftError> {
        let outer: usize = shape[..step.axis].iter().product();
        let inner: usize = shape[step.axis + 1..].iter().product();
        let column = inner > 1;
        let (kind, half) = match step.kind {
            AxisKind::C2C { .. } => (StageKind::C2C, step.n),
            AxisKind::R2C | AxisKind::C2R => {
                if !step.n.is_multiple_of(2) {
                    return Err(FftError::Unsupported(format!(
                        "real transforms of odd length ({}) need the mixed-radix FFT",
                        step.n
                    )));
                }
                let kind = if step.kind == AxisKind::R2C {
                    StageKind::R2C
                } else {
                    StageKind::C2R
                };
                (kind, step.n / 2)
            }
        };
        if radices(half).is_none() {
            return Err(FftError::Unsupported(format!(
                "length {} is not a power of two (mixed-radix and Bluestein FFTs are not implemented yet)",
                step.n
            )));
        }
        let inverse = matches!(step.kind, AxisKind::C2C { inverse: true } | AxisKind::C2R);
        let extra = usize::from(kind == StageKind::C2R);
        let limit = if column {
            self.max_single(COLUMN_SIGNALS, extra)
        } else {
            self.max_single(1, extra)
        };
        let scale_bits = (step.scale as f32).to_bits();
        let signals_total = outer * inner;

        if half <= limit {
            let mut cfg = self.single_stage_config(half, kind, column, if column { inner } else { outer })?;
            cfg.inverse = inverse;
            cfg.load = step.load;
            cfg.store = step.store;
            cfg.scale_bits = scale_bits;
            let layout = if column {
                StageLayout {
                    na: 1,
                    nb: outer,
                    nc: inner,
                    input: [0, step.in_len * inner, 1, inner],
                    output: [0, step.out_len * inner, 1, inner],
                }
            } else {
                StageLayout {
                    na: 1,
                    nb: 1,
                    nc: signals_total,
                    input: [0, 0, step.in_len, 1],
                    output: [0, 0, step.out_len, 1],
                }
            };
            self.push_stage(cfg, layout, src, dst);
            return Ok(());
        }

        // Four-step: half = n1 · n2, columns of length n1 (twiddled), then rows of
        // length n2 whose outputs land transposed (k = k1 + n1·k2).
        let n2 = 1usize << half.trailing_zeros().div_ceil(2);
        let n1 = half / n2;
        let column_limit = self.max_single(COLUMN_SIGNALS, 0);
        if n1 > column_limit || n2 > self.max_single(1, 0) {
            return Err(FftError::Unsupported(format!(
                "length {} is too long for a two-level FFT",
                step.n
            )));
        }
        let complex_floats = 2 * outer * half * inner;

        // Large real inverse: fold the bins into the half-length spectrum first.
        let (a_src, a_load, a_kind) = if kind == StageKind::C2R {
            let folded = self.temp(complex_floats);
            let cfg = HalfSpectrumConfig {
                n: half,
                window: step.load,
                stored: step.in_len,
                scale_bits: 1f32.to_bits(),
            };
            let (twiddles, twiddle_floats) = self.upload(&twiddle_table(2 * half, half));
            self.passes.push(Pass {
                launch: Launch::HalfSpectrum {
                    fold: true,
                    cfg,
                    inner,
                    total: outer * half * inner,
                    twiddles,
                    twiddle_floats,
                },
                src: src.0,
                src_floats: src.1,
                dst: folded,
                dst_floats: complex_floats,
            });
            ((folded, complex_floats), Window::Prefix(half), StageKind::C2C)
        } else if kind == StageKind::R2C {
            (src, step.load, StageKind::RealPairsIn)
        } else {
            (src, step.load, StageKind::C2C)
        };
        let a_in_len = if kind == StageKind::C2R { half } else { step.in_len };
        let a_seq = if a_kind == StageKind::RealPairsIn {
            2 * half
        } else {
            half
        };

        // Step A: columns over n1, signals (outer, n2, inner).
        let scratch = self.temp(complex_floats);
        let mut cfg = self.single_stage_config(n1, a_kind, true, if column { inner } else { n2 })?;
        cfg.inverse = inverse;
        cfg.load = a_load;
        let fold_dim = if column { 1 } else { 2 };
        cfg.load_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n2,
            seq_len: a_seq,
        });
        let fine_len = 1usize << half.trailing_zeros().div_ceil(2);
        cfg.post_twiddle = Some(PostTwiddle {
            dim: fold_dim,
            total: half,
            fine_len,
        });
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n2,
                nc: inner,
                input: [a_in_len * inner, 0, 1, inner],
                output: [half * inner, inner, 1, n2 * inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n2,
                input: [0, a_in_len, 0, 1],
                output: [0, half, 1, n2],
            }
        };
        self.push_stage(cfg, layout, a_src, (scratch, complex_floats));

        // Step B: rows over n2, signals (outer, k1, inner), transposed store.
        let b_kind = if kind == StageKind::C2R {
            StageKind::RealPairsOut
        } else {
            StageKind::C2C
        };
        let (b_dst, b_out_len, b_store, b_seq) = match kind {
            StageKind::R2C => {
                let spectrum = self.temp(complex_floats);
                ((spectrum, complex_floats), half, Window::Prefix(half), half)
            }
            StageKind::C2R => (dst, step.out_len, step.store, 2 * half),
            _ => (dst, step.out_len, step.store, half),
        };
        let mut cfg = self.single_stage_config(n2, b_kind, column, if column { inner } else { n1 })?;
        cfg.store_signals_fastest = true;
        cfg.signals_per_cube = cfg
            .signals_per_cube
            .max(COLUMN_SIGNALS.min(n1))
            .min(self.shared_limit / (8 * cfg.smem_stride))
            .min(self.max_threads / cfg.threads_per_signal)
            .max(1);
        cfg.inverse = inverse;
        cfg.store = b_store;
        cfg.store_fold = Some(AxisFold {
            dim: fold_dim,
            k_mul: n1,
            seq_len: b_seq,
        });
        if kind != StageKind::R2C {
            cfg.scale_bits = scale_bits;
        }
        let layout = if column {
            StageLayout {
                na: outer,
                nb: n1,
                nc: inner,
                input: [half * inner, n2 * inner, 1, inner],
                output: [b_out_len * inner, 0, 1, inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: outer,
                nc: n1,
                input: [0, half, n2, 1],
                output: [0, b_out_len, 0, 1],
            }
        };
        self.push_stage(cfg, layout, (scratch, complex_floats), b_dst);

        if kind == StageKind::R2C {
            let cfg = HalfSpectrumConfig {
                n: half,
                window: step.store,
                stored: step.out_len,
                scale_bits,
            };
            let (twiddles, twiddle_floats) = self.upload(&twiddle_table(2 * half, half + 1));
            self.passes.push(Pass {
                launch: Launch::HalfSpectrum {
                    fold: false,
                    cfg,
                    inner,
                    total: outer * step.out_len * inner,
                    twiddles,
                    twiddle_floats,
                },
                src: b_dst.0,
                src_floats: b_dst.1,
                dst: dst.0,
                dst_floats: dst.1,
            });
        }
        Ok(())
    }
}

fn cube_count(cubes: usize) -> CubeCount {
    const MAX_X: usize = 65535;
    if cubes <= MAX_X {
        CubeCount::Static(cubes as u32, 1, 1)
    } else {
        CubeCount::Static(MAX_X as u32, cubes.div_ceil(MAX_X) as u32, 1)
    }
}

impl<R: Runtime> DeviceFft<R> {
    fn new(client: ComputeClient<R>, plan: FftPlan, options: DeviceOptions) -> Result<Self, FftError> {
        let props = client.properties();
        let shared_limit = props.hardware.max_shared_memory_size.min(SHARED_LIMIT);
        let max_threads = (props.hardware.max_units_per_cube as usize).min(1024);
        let mut lowering = Lowering {
            client: &client,
            passes: Vec::new(),
            temps: Vec::new(),
            shared_limit,
            max_threads,
            options,
        };
        let mut shape = plan.input_shape().to_vec();
        let steps = plan.steps();
        let mut src = (Buf::Input, plan.input_floats());
        for (i, step) in steps.iter().enumerate() {
            let mut out_shape = shape.clone();
            out_shape[step.axis] = step.out_len;
            let dst = if i + 1 == steps.len() {
                (Buf::Output, plan.output_floats())
            } else {
                let floats = 2 * out_shape.iter().product::<usize>();
                (lowering.temp(floats), floats)
            };
            lowering.lower_step(step, &shape, src, dst)?;
            src = dst;
            shape = out_shape;
        }
        let Lowering { passes, temps, .. } = lowering;
        Ok(DeviceFft {
            client,
            plan,
            passes,
            temps,
        })
    }

    pub fn plan(&self) -> &FftPlan {
        &self.plan
    }

    /// Number of kernel launches one execution makes.
    pub fn launches(&self) -> usize {
        self.passes.len()
    }

    /// Runs the transform. `input` holds `plan().input_floats()` f32 values,
    /// `output` room for `plan().output_floats()`.
    pub fn execute(&self, input: &Handle, output: &Handle) -> Result<(), FftError> {
        let check = |h: &Handle, floats: usize, what: &str| {
            let bytes = h.size() as usize;
            if bytes < floats * 4 {
                Err(FftError::Buffer(format!(
                    "{what} holds {bytes} bytes, the plan needs {}",
                    floats * 4
                )))
            } else {
                Ok(())
            }
        };
        check(input, self.plan.input_floats(), "input")?;
        check(output, self.plan.output_floats(), "output")?;
        let temps: Vec<Handle> = self.temps.iter().map(|&f| self.client.empty(f * 4)).collect();
        let resolve = |b: Buf| -> Handle {
            match b {
                Buf::Input => input.clone(),
                Buf::Output => output.clone(),
                Buf::Temp(i, _) => temps[i].clone(),
            }
        };
        for pass in &self.passes {
            let src = resolve(pass.src);
            let dst = resolve(pass.dst);
            self.launch(pass, src, dst);
        }
        Ok(())
    }

    fn launch(&self, pass: &Pass, src: Handle, dst: Handle) {
        let client = &self.client;
        let array = |h: Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h, len) };
        match &pass.launch {
            Launch::Stage {
                cfg,
                layout,
                twiddles,
                twiddle_floats,
                post,
            } => {
                let tiles = layout.na * layout.nb * layout.nc.div_ceil(cfg.signals_per_cube);
                let (coarse, coarse_len, fine, fine_len) = match post {
                    Some((c, cl, f, fl)) => (c.clone(), *cl, f.clone(), *fl),
                    None => (twiddles.clone(), *twiddle_floats, twiddles.clone(), *twiddle_floats),
                };
                fft_stage_kernel::launch::<f32, R>(
                    client,
                    cube_count(tiles),
                    CubeDim::new_1d(cfg.threads_per_cube() as u32),
                    array(src, pass.src_floats),
                    array(dst, pass.dst_floats),
                    array(twiddles.clone(), *twiddle_floats),
                    array(coarse, coarse_len),
                    array(fine, fine_len),
                    layout.nb,
                    layout.nc,
                    tiles,
                    layout.input[0],
                    layout.input[1],
                    layout.input[2],
                    layout.input[3],
                    layout.output[0],
                    layout.output[1],
                    layout.output[2],
                    layout.output[3],
                    cfg.clone(),
                );
            }
            Launch::HalfSpectrum {
                fold,
                cfg,
                inner,
                total,
                twiddles,
                twiddle_floats,
            } => {
                let launch = if *fold {
                    fold_kernel::launch::<f32, R>
                } else {
                    untangle_kernel::launch::<f32, R>
                };
                launch(
                    client,
                    cube_count(total.div_ceil(ELEMWISE_THREADS)),
                    CubeDim::new_1d(ELEMWISE_THREADS as u32),
                    array(src, pass.src_floats),
                    array(dst, pass.dst_floats),
                    array(twiddles.clone(), *twiddle_floats),
                    *inner,
                    *total,
                    *cfg,
                );
            }
        }
    }
}

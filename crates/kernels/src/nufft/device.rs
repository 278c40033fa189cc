//! A plan on a CubeCL device: points sorted and uploaded once, the FFT
//! lowered once; each execution spreads, transforms and deconvolves (type 1)
//! or deconvolves, transforms and interpolates (type 2).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Mutex;

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::deconvolve::deconvolve;
use super::interpolate::interpolate;
use super::plan::{Layout, NufftDesc, NufftError, NufftType, PointValues, VectorSplit};
use super::points::SortedPoints;
use super::spread::{spread, PointBuffers};
use crate::fft::{DeviceFft, FftPlan};

/// A [`NufftDesc`] with its points on one device.
pub struct DeviceNufft<R: Runtime> {
    client: ComputeClient<R>,
    desc: NufftDesc,
    layout: Layout,
    points: PointBuffers,
    /// Per dimension `1/φ̂(k)` of each stored mode, concatenated.
    factors: Handle,
    /// The fine grid's FFT by batch size, lowered on first use.
    ffts: Mutex<HashMap<usize, DeviceFft<R>>>,
}

/// One run of a plan: its vectors, how their values at the points are held,
/// and a factor on the outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    /// Vectors transformed over the same points.
    pub batch: usize,
    pub values: PointValues,
    /// Floats from one vector's values at the points to the next's in type
    /// 1's input (at least one vector's; `None`: packed): Burn's CUDA
    /// tensors pad rows to 512 bytes, read here where they lie.
    pub point_stride: Option<usize>,
    /// Every output value's factor (folded into the deconvolution).
    pub scale: f32,
}

impl Run {
    /// `batch` vectors of complex values, packed, unscaled.
    pub fn new(batch: usize) -> Self {
        Run {
            batch,
            values: PointValues::Complex,
            point_stride: None,
            scale: 1.0,
        }
    }

    pub fn values(self, values: PointValues) -> Self {
        Run { values, ..self }
    }

    pub fn point_stride(self, stride: usize) -> Self {
        Run {
            point_stride: Some(stride),
            ..self
        }
    }

    pub fn scale(self, scale: f32) -> Self {
        Run { scale, ..self }
    }
}

impl NufftDesc {
    /// The plan for `points` (`[M, d]` row-major, radians; any finite
    /// values, taken modulo 2π) on `client`'s device.
    pub fn on_device<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        points: &[f64],
    ) -> Result<DeviceNufft<R>, NufftError> {
        let layout = self.layout()?;
        let sorted = SortedPoints::new(points, &layout)?;
        let factors: Vec<f32> = layout.correction.iter().flatten().map(|&f| f as f32).collect();
        let plan = DeviceNufft {
            client: client.clone(),
            desc: self.clone(),
            points: PointBuffers::upload(client, &sorted, layout.spreader),
            factors: client.create_from_slice(f32::as_bytes(&factors)),
            layout,
            ffts: Mutex::new(HashMap::new()),
        };
        // The FFT of the planned batch now, so that a plan that cannot run fails here.
        plan.with_fft(self.batch, |_| Ok(()))?;
        Ok(plan)
    }
}

impl<R: Runtime> DeviceNufft<R> {
    pub fn desc(&self) -> &NufftDesc {
        &self.desc
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of points.
    pub fn points(&self) -> usize {
        self.points.len
    }

    /// f32 values of the input: `[batch, M]` complex (type 1) or `[batch, N…]` complex (type 2).
    pub fn input_floats(&self) -> usize {
        self.extents(&Run::new(self.desc.batch)).0
    }

    /// f32 values of the output: `[batch, N…]` complex (type 1) or `[batch, M]` complex (type 2).
    pub fn output_floats(&self) -> usize {
        self.extents(&Run::new(self.desc.batch)).1
    }

    /// The f32 values `run` reads and writes (from the first to the last).
    fn extents(&self, run: &Run) -> (usize, usize) {
        let point_floats = self.points.len * run.values.floats();
        let points = run.batch.saturating_sub(1) * run.point_stride.unwrap_or(point_floats) + point_floats;
        let modes = run.batch * self.desc.modes.iter().product::<usize>() * 2;
        match self.desc.kind {
            NufftType::One => (points, modes),
            NufftType::Two => (modes, run.batch * point_floats),
        }
    }

    /// Runs `f` with the fine grid's FFT of `batch` vectors (lowered on first use).
    fn with_fft<T>(
        &self,
        batch: usize,
        f: impl FnOnce(&DeviceFft<R>) -> Result<T, NufftError>,
    ) -> Result<T, NufftError> {
        let mut ffts = self.ffts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let fft = match ffts.entry(batch) {
            Entry::Occupied(lowered) => lowered.into_mut(),
            Entry::Vacant(slot) => {
                let desc = NufftDesc {
                    batch,
                    ..self.desc.clone()
                };
                let fft = FftPlan::new(desc.fft(&self.layout, VectorSplit::for_batch(batch).interleaved()))
                    .and_then(|plan| plan.on_device(&self.client))
                    .map_err(|e| NufftError::Fft(e.to_string()))?;
                slot.insert(fft)
            }
        };
        f(fft)
    }

    /// Runs the transform of the planned batch from `input` into `output`
    /// (f32 buffers of [`Self::input_floats`] and [`Self::output_floats`] values).
    pub fn execute(&self, input: &Handle, output: &Handle) -> Result<(), NufftError> {
        self.run(&Run::new(self.desc.batch), input, output)
    }

    /// Runs the transform of `batch` vectors of complex values over the same points.
    pub fn execute_batch(&self, batch: usize, input: &Handle, output: &Handle) -> Result<(), NufftError> {
        self.run(&Run::new(batch), input, output)
    }

    /// Runs the transform as `run` describes (any batch: the FFT of each
    /// batch size is lowered once).
    pub fn run(&self, run: &Run, input: &Handle, output: &Handle) -> Result<(), NufftError> {
        let (batch, values) = (run.batch, run.values);
        if batch == 0 {
            return Err(NufftError::Invalid("a batch of no vectors".into()));
        }
        let point_floats = self.points.len * values.floats();
        let stride = run.point_stride.unwrap_or(point_floats);
        if stride < point_floats {
            return Err(NufftError::Invalid(format!(
                "vectors {stride} floats apart overlap: each holds {point_floats} at the points"
            )));
        }
        if run.point_stride.is_some() && self.desc.kind == NufftType::Two {
            return Err(NufftError::Invalid(
                "a point stride describes type 1's input, not type 2's output".into(),
            ));
        }
        let (input_floats, output_floats) = self.extents(run);
        for (h, floats, what) in [(input, input_floats, "input"), (output, output_floats, "output")] {
            if (h.size_in_used() as usize) < floats * 4 {
                return Err(NufftError::Invalid(format!(
                    "the {what} holds {} bytes, the plan needs {floats} f32 values",
                    h.size_in_used()
                )));
            }
        }
        let client = &self.client;
        let grid_floats = batch * self.layout.grid.iter().product::<usize>() * 2;
        let grid = client.empty(grid_floats * 4);
        let modes = client.empty(batch * self.desc.modes.iter().product::<usize>() * 2 * 4);
        let interleaved = VectorSplit::for_batch(batch).interleaved();
        let fft_error = |e: crate::fft::FftError| NufftError::Fft(e.to_string());
        match self.desc.kind {
            NufftType::One => {
                spread(
                    client,
                    &self.points,
                    input,
                    values,
                    stride,
                    &grid,
                    batch,
                    &self.layout.grid,
                );
                self.with_fft(batch, |fft| fft.execute(&grid, &modes).map_err(fft_error))?;
                deconvolve(
                    client,
                    &modes,
                    &self.factors,
                    output,
                    batch,
                    run.scale,
                    &self.desc.modes,
                    interleaved,
                    false,
                );
            }
            NufftType::Two => {
                deconvolve(
                    client,
                    input,
                    &self.factors,
                    &modes,
                    batch,
                    run.scale,
                    &self.desc.modes,
                    false,
                    interleaved,
                );
                self.with_fft(batch, |fft| fft.execute(&modes, &grid).map_err(fft_error))?;
                interpolate(client, &self.points, &grid, output, values, batch, &self.layout.grid);
            }
        }
        Ok(())
    }
}

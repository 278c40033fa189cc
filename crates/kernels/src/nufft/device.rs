//! A plan on a CubeCL device: points sorted and uploaded once, the FFT
//! lowered once; each execution spreads, transforms and deconvolves (type 1)
//! or deconvolves, transforms and interpolates (type 2).

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
        self.input_floats_of(self.desc.batch, PointValues::Complex)
    }

    /// f32 values of the output: `[batch, N…]` complex (type 1) or `[batch, M]` complex (type 2).
    pub fn output_floats(&self) -> usize {
        self.output_floats_of(self.desc.batch, PointValues::Complex)
    }

    fn input_floats_of(&self, batch: usize, values: PointValues) -> usize {
        match self.desc.kind {
            NufftType::One => self.point_floats(batch, values),
            NufftType::Two => self.mode_floats(batch),
        }
    }

    fn output_floats_of(&self, batch: usize, values: PointValues) -> usize {
        match self.desc.kind {
            NufftType::One => self.mode_floats(batch),
            NufftType::Two => self.point_floats(batch, values),
        }
    }

    fn point_floats(&self, batch: usize, values: PointValues) -> usize {
        batch * self.points.len * values.floats()
    }

    fn mode_floats(&self, batch: usize) -> usize {
        batch * self.desc.modes.iter().product::<usize>() * 2
    }

    /// Runs `f` with the fine grid's FFT of `batch` vectors (lowered on first use).
    fn with_fft<T>(
        &self,
        batch: usize,
        f: impl FnOnce(&DeviceFft<R>) -> Result<T, NufftError>,
    ) -> Result<T, NufftError> {
        let mut ffts = self.ffts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !ffts.contains_key(&batch) {
            let desc = NufftDesc {
                batch,
                ..self.desc.clone()
            };
            let fft = FftPlan::new(desc.fft(&self.layout, VectorSplit::for_batch(batch).interleaved()))
                .and_then(|plan| plan.on_device(&self.client))
                .map_err(|e| NufftError::Fft(e.to_string()))?;
            ffts.insert(batch, fft);
        }
        f(&ffts[&batch])
    }

    /// Runs the transform of the planned batch from `input` into `output`
    /// (f32 buffers of [`Self::input_floats`] and [`Self::output_floats`] values).
    pub fn execute(&self, input: &Handle, output: &Handle) -> Result<(), NufftError> {
        self.execute_batch(self.desc.batch, input, output)
    }

    /// Runs the transform of `batch` vectors over the same points (any
    /// number: the FFT of each batch size is lowered once).
    pub fn execute_batch(&self, batch: usize, input: &Handle, output: &Handle) -> Result<(), NufftError> {
        self.execute_values(batch, PointValues::Complex, input, output)
    }

    /// As [`Self::execute_batch`], the values at the points complex or real
    /// (`[batch, M]` f32: type 1 reads them as complex values with zero
    /// imaginary parts, type 2 writes the real parts of its results).
    pub fn execute_values(
        &self,
        batch: usize,
        values: PointValues,
        input: &Handle,
        output: &Handle,
    ) -> Result<(), NufftError> {
        if batch == 0 {
            return Err(NufftError::Invalid("a batch of no vectors".into()));
        }
        for (h, floats, what) in [
            (input, self.input_floats_of(batch, values), "input"),
            (output, self.output_floats_of(batch, values), "output"),
        ] {
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
        let modes = client.empty(self.mode_floats(batch) * 4);
        let interleaved = VectorSplit::for_batch(batch).interleaved();
        let fft_error = |e: crate::fft::FftError| NufftError::Fft(e.to_string());
        match self.desc.kind {
            NufftType::One => {
                spread(client, &self.points, input, values, &grid, batch, &self.layout.grid);
                self.with_fft(batch, |fft| fft.execute(&grid, &modes).map_err(fft_error))?;
                deconvolve(
                    client,
                    &modes,
                    &self.factors,
                    output,
                    batch,
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

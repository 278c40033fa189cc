//! `predictions.png`: one row per test sample with its input, the truth, the
//! prediction and the absolute error (first channel each). 2-D fields are heat
//! maps (truth and prediction on one colour scale), 1-D fields are curves,
//! 3-D fields show their middle slice along the last axis. No text is drawn,
//! so no fonts are needed; the column order is fixed as above.

use std::path::Path;

use fno_datasets::{Array, PdeDataset};
use plotters::prelude::*;

use crate::TrainError;

const PANEL: u32 = 220;
const GAP: u32 = 8;

/// The first channel of sample `i` as a 2-D field `(rows, columns, values)`;
/// 1-D fields have one row.
fn field(a: &Array, i: usize) -> (usize, usize, Vec<f32>) {
    let grid = &a.shape[2..];
    let sample = &a.data[i * a.sample_len()..][..grid.iter().product::<usize>()];
    match grid.len() {
        1 => (1, grid[0], sample.to_vec()),
        2 => (grid[0], grid[1], sample.to_vec()),
        _ => {
            let (nx, ny, nz) = (grid[0], grid[1], grid[2]);
            let z = nz / 2;
            (nx, ny, (0..nx * ny).map(|k| sample[k * nz + z]).collect())
        }
    }
}

/// A perceptually ordered dark-blue → teal → yellow ramp (viridis-like).
fn colour(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * 4.0;
    let k = (t.floor() as usize).min(3);
    let f = t - k as f64;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn range(values: &[&[f32]]) -> (f64, f64) {
    let (lo, hi) = values
        .iter()
        .flat_map(|v| v.iter())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v as f64), hi.max(v as f64))
        });
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

fn heat_map(area: &Area, rows: usize, cols: usize, values: &[f32], (lo, hi): (f64, f64)) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    for r in 0..rows {
        for c in 0..cols {
            let x0 = (c as u32 * w / cols as u32) as i32;
            let x1 = ((c as u32 + 1) * w / cols as u32) as i32;
            let y0 = (r as u32 * h / rows as u32) as i32;
            let y1 = ((r as u32 + 1) * h / rows as u32) as i32;
            let t = (values[r * cols + c] as f64 - lo) / (hi - lo);
            area.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour(t).filled()))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn curves(area: &Area, lines: &[(&[f32], RGBColor)], (lo, hi): (f64, f64)) -> Result<(), String> {
    let n = lines[0].0.len();
    let mut chart = ChartBuilder::on(area)
        .margin(6)
        .build_cartesian_2d(0.0..(n.max(2) - 1) as f64, lo..hi)
        .map_err(|e| e.to_string())?;
    for (values, colour) in lines {
        chart
            .draw_series(LineSeries::new(
                values.iter().enumerate().map(|(i, &v)| (i as f64, v as f64)),
                colour.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Draws `predicted` (`[N, C, *grid]`, de-normalised) against `data`.
pub fn predictions(path: &Path, data: &PdeDataset, predicted: &Array) -> Result<(), TrainError> {
    let rows = data.len() as u32;
    let size = (4 * PANEL + 5 * GAP, rows * PANEL + (rows + 1) * GAP);
    let draw = || -> Result<(), String> {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        for i in 0..data.len() {
            let (r, c, input) = field(&data.inputs, i);
            let (_, _, truth) = field(&data.outputs, i);
            let (_, _, guess) = field(predicted, i);
            let error: Vec<f32> = truth.iter().zip(&guess).map(|(t, p)| (t - p).abs()).collect();
            let panel = |k: u32| {
                let x = (GAP + k * (PANEL + GAP)) as i32;
                let y = (GAP + i as u32 * (PANEL + GAP)) as i32;
                root.clone().shrink((x, y), (PANEL, PANEL))
            };
            let shared = range(&[&truth, &guess]);
            if r == 1 {
                curves(&panel(0), &[(&input, BLACK)], range(&[&input]))?;
                curves(&panel(1), &[(&truth, BLUE)], shared)?;
                curves(&panel(2), &[(&truth, BLUE), (&guess, RED)], shared)?;
                curves(&panel(3), &[(&error, RED)], range(&[&error]))?;
            } else {
                heat_map(&panel(0), r, c, &input, range(&[&input]))?;
                heat_map(&panel(1), r, c, &truth, shared)?;
                heat_map(&panel(2), r, c, &guess, shared)?;
                heat_map(&panel(3), r, c, &error, range(&[&error]))?;
            }
        }
        root.present().map_err(|e| e.to_string())
    };
    draw().map_err(|e| TrainError::Io(format!("{}: {e}", path.display())))
}

//! `predictions.png`: one row per test sample, headed by its relative L2
//! error, with four titled panels: input, truth, prediction and |error|
//! (first channel each). 2-D fields are heat maps with a colour bar (truth and
//! prediction on one scale), 1-D fields are curves on labelled axes, 3-D
//! fields show their middle slice along the last axis. Text is drawn with an
//! embedded font (DejaVu Sans), so no system font is needed.

use std::path::Path;
use std::sync::Once;

use fno_datasets::{Array, PdeDataset};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::TrainError;

const PANEL: u32 = 220;
/// A heat map's colour bar and its value labels, right of the panel.
const BAR: u32 = 12;
const BAR_LABELS: u32 = 64;
const COLUMN: u32 = PANEL + BAR + BAR_LABELS;
const GAP: u32 = 8;
/// Column titles above the first row, and each row's heading.
const TITLE: u32 = 26;
const ROW_HEADING: u32 = 22;
const TITLES: [&str; 4] = ["input", "truth", "prediction", "|error|"];

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

/// `‖p − t‖ / ‖t‖` over every channel of sample `i`.
fn relative_error(truth: &Array, predicted: &Array, i: usize) -> f64 {
    let n = truth.sample_len();
    let (t, p) = (&truth.data[i * n..][..n], &predicted.data[i * n..][..n]);
    let diff: f64 = t.iter().zip(p).map(|(&t, &p)| (t as f64 - p as f64).powi(2)).sum();
    let norm: f64 = t.iter().map(|&t| (t as f64).powi(2)).sum();
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
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

/// A colour-bar or axis value in at most about eight characters.
fn label(v: f64) -> String {
    if v == 0.0 || (1e-2..1e4).contains(&v.abs()) {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn text_style(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

/// Registers the embedded font under plotters' default family, once.
fn register_font() -> Result<(), String> {
    static REGISTER: Once = Once::new();
    let mut result = Ok(());
    REGISTER.call_once(|| {
        result = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded font did not load".to_string());
    });
    result
}

fn heat_map<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: usize,
    cols: usize,
    values: &[f32],
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let (w, h) = (PANEL as usize, PANEL as usize);
    for r in 0..rows {
        for c in 0..cols {
            let x0 = (c * w / cols) as i32;
            let x1 = ((c + 1) * w / cols) as i32;
            let y0 = (r * h / rows) as i32;
            let y1 = ((r + 1) * h / rows) as i32;
            let t = (values[r * cols + c] as f64 - lo) / (hi - lo);
            area.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour(t).filled()))
                .map_err(|e| e.to_string())?;
        }
    }
    colour_bar(area, (lo, hi))
}

/// The scale of a heat map: `hi` at the top, `lo` at the bottom.
fn colour_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, (lo, hi): (f64, f64)) -> Result<(), String> {
    let x = (PANEL + 4) as i32;
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    for y in 0..PANEL as i32 {
        let t = 1.0 - y as f64 / (PANEL - 1) as f64;
        area.draw(&Rectangle::new(
            [(x, y), (x + BAR as i32 - 4, y + 1)],
            colour(t).filled(),
        ))
        .map_err(e)?;
    }
    let x = x + BAR as i32;
    area.draw_text(&label(hi), &text_style(12.0), (x, 0)).map_err(e)?;
    area.draw_text(&label(lo), &text_style(12.0), (x, PANEL as i32 - 12))
        .map_err(e)
}

fn curves<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[(&[f32], RGBColor, &str)],
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let n = lines[0].0.len();
    let mut chart = ChartBuilder::on(area)
        .margin(6)
        .x_label_area_size(20)
        .y_label_area_size(54)
        .build_cartesian_2d(0.0..(n.max(2) - 1) as f64, lo..hi)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(4)
        .y_labels(5)
        .y_label_formatter(&|v| label(*v))
        .label_style(text_style(11.0))
        .draw()
        .map_err(|e| e.to_string())?;
    for &(values, colour, name) in lines {
        chart
            .draw_series(LineSeries::new(
                values.iter().enumerate().map(|(i, &v)| (i as f64, v as f64)),
                colour.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], colour.stroke_width(2)));
    }
    if lines.len() > 1 {
        chart
            .configure_series_labels()
            .label_font(text_style(11.0))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The picture's size in pixels for `rows` samples.
fn size(rows: u32) -> (u32, u32) {
    (
        GAP + 4 * (COLUMN + GAP),
        TITLE + rows * (ROW_HEADING + PANEL + GAP) + GAP,
    )
}

/// Draws the rows of `data` and `predicted` onto `root`.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &PdeDataset, predicted: &Array) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    for (k, title) in TITLES.iter().enumerate() {
        let x = (GAP + k as u32 * (COLUMN + GAP) + PANEL / 2) as i32;
        let style = text_style(18.0).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ));
        root.draw_text(title, &style, (x, 4)).map_err(e)?;
    }
    for i in 0..data.len() {
        let top = TITLE + i as u32 * (ROW_HEADING + PANEL + GAP);
        let heading = format!(
            "sample {}: relative L2 error {:.4}",
            i + 1,
            relative_error(&data.outputs, predicted, i)
        );
        root.draw_text(&heading, &text_style(14.0), (GAP as i32, top as i32 + 3))
            .map_err(e)?;
        let (r, c, input) = field(&data.inputs, i);
        let (_, _, truth) = field(&data.outputs, i);
        let (_, _, guess) = field(predicted, i);
        let error: Vec<f32> = truth.iter().zip(&guess).map(|(t, p)| (t - p).abs()).collect();
        let panel = |k: u32| {
            let x = (GAP + k * (COLUMN + GAP)) as i32;
            root.clone().shrink((x, (top + ROW_HEADING) as i32), (COLUMN, PANEL))
        };
        let shared = range(&[&truth, &guess]);
        if r == 1 {
            curves(&panel(0), &[(&input, BLACK, "input")], range(&[&input]))?;
            curves(&panel(1), &[(&truth, BLUE, "truth")], shared)?;
            curves(
                &panel(2),
                &[(&truth, BLUE, "truth"), (&guess, RED, "prediction")],
                shared,
            )?;
            curves(&panel(3), &[(&error, RED, "|error|")], range(&[&error]))?;
        } else {
            heat_map(&panel(0), r, c, &input, range(&[&input]))?;
            heat_map(&panel(1), r, c, &truth, shared)?;
            heat_map(&panel(2), r, c, &guess, shared)?;
            heat_map(&panel(3), r, c, &error, range(&[&error]))?;
        }
    }
    Ok(())
}

/// Draws `predicted` (`[N, C, *grid]`, de-normalised) against `data` into a PNG at `path`.
pub fn predictions(path: &Path, data: &PdeDataset, predicted: &Array) -> Result<(), TrainError> {
    let render = || -> Result<(), String> {
        register_font()?;
        let root = BitMapBackend::new(path, size(data.len() as u32)).into_drawing_area();
        draw(&root, data, predicted)?;
        root.present().map_err(|e| e.to_string())
    };
    render().map_err(|e| TrainError::Io(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders a 2-D and a 1-D set into memory and reads the pixels back: the
    /// titles and headings are drawn (dark pixels in their strips), each
    /// heat map's colour bar runs from the ramp's top to its bottom, and the
    /// heading states the sample's error.
    #[test]
    fn panels_have_titles_colour_bars_and_errors() {
        register_font().unwrap();
        let grid = |n: usize, f: &dyn Fn(usize) -> f32| Array::new(vec![2, 1, n, n], (0..2 * n * n).map(f).collect());
        let x = grid(8, &|k| (k % 7) as f32).unwrap();
        let y = grid(8, &|k| 1.0 + (k % 5) as f32).unwrap();
        let mut p = y.clone();
        p.data.iter_mut().for_each(|v| *v *= 1.1);
        let data = PdeDataset::new(x, y.clone()).unwrap();
        assert!((relative_error(&y, &p, 0) - 0.1).abs() < 1e-6);
        let (w, h) = size(2);
        let mut pixels = vec![0u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            draw(&root, &data, &p).unwrap();
            root.present().unwrap();
        }
        let at = |x: u32, y: u32| {
            let k = ((y * w + x) * 3) as usize;
            RGBColor(pixels[k], pixels[k + 1], pixels[k + 2])
        };
        let dark = |x0: u32, x1: u32, y0: u32, y1: u32| {
            (y0..y1)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| {
                    let RGBColor(r, g, b) = at(x, y);
                    (r as u32 + g as u32 + b as u32) < 200
                })
                .count()
        };
        for k in 0..4 {
            let x0 = GAP + k * (COLUMN + GAP);
            assert!(dark(x0, x0 + PANEL, 0, TITLE) > 20, "no title over column {k}");
            let bar_x = x0 + PANEL + 4 + BAR / 2 - 2;
            let top = TITLE + ROW_HEADING;
            assert_eq!(at(bar_x, top), colour(1.0), "colour bar top, column {k}");
            assert_eq!(at(bar_x, top + PANEL - 1), colour(0.0), "colour bar bottom, column {k}");
            assert!(
                dark(x0 + PANEL + BAR + 4, x0 + COLUMN, top, top + 14) > 5,
                "no label by column {k}'s bar"
            );
        }
        assert!(dark(GAP, GAP + 300, TITLE, TITLE + ROW_HEADING) > 40, "no row heading");

        let line = Array::new(vec![1, 1, 32], (0..32).map(|k| (k as f32 / 5.0).sin()).collect()).unwrap();
        let one_d = PdeDataset::new(line.clone(), line.clone()).unwrap();
        let (w, h) = size(1);
        let mut pixels = vec![0u8; (w * h * 3) as usize];
        let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
        draw(&root, &one_d, &line).unwrap();
    }
}

//! The points of a plan, placed on its fine grid and sorted once (on the host)
//! by the first cell their kernel covers, so that the spreading kernel finds
//! every point reaching a cell in a few contiguous ranges.

use std::f64::consts::TAU;

use super::plan::{Layout, NufftError, MAX_INDEX};

/// Points sorted by start cell: the `k`-th sorted point is input point
/// `order[k]`; its kernel's first cell on each dimension is `start`'s
/// decomposition, and `offset[k·d + dim]` is that cell's position minus the
/// point's (in cells, in `[−w/2, −w/2 + 1)`). The points starting in cell
/// `c` (row-major over the grid) are `first[c] .. first[c + 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedPoints {
    pub order: Vec<u32>,
    pub start: Vec<u32>,
    pub offset: Vec<f32>,
    pub first: Vec<u32>,
}

impl SortedPoints {
    /// `points` `[M, d]` row-major (any finite coordinates: taken modulo 2π),
    /// mirrored where `layout` says, on `layout`'s grid.
    pub fn new(points: &[f64], layout: &Layout) -> Result<Self, NufftError> {
        let d = layout.grid.len();
        if !points.len().is_multiple_of(d) {
            return Err(NufftError::Invalid(format!(
                "{} point coordinates do not make points of {d} dimensions",
                points.len()
            )));
        }
        let m = points.len() / d;
        if m == 0 {
            return Err(NufftError::Invalid("no points".into()));
        }
        let cells: usize = layout.grid.iter().product();
        if m > MAX_INDEX || cells > MAX_INDEX {
            return Err(NufftError::Invalid(format!(
                "{m} points on a fine grid of {cells} cells: at most {MAX_INDEX} of each"
            )));
        }
        if let Some(i) = points.iter().position(|x| !x.is_finite()) {
            return Err(NufftError::Invalid(format!(
                "point {} has a non-finite coordinate ({})",
                i / d,
                points[i]
            )));
        }
        let half_width = layout.spreader.width as f64 / 2.0;
        let sign = if layout.negate_points { -1.0 } else { 1.0 };
        let mut start = Vec::with_capacity(m);
        let mut offset = Vec::with_capacity(m * d);
        for p in points.chunks_exact(d) {
            let mut cell = 0usize;
            for (&x, &n) in p.iter().zip(&layout.grid) {
                // Grid units in [0, n); a value rounding to n is cell 0's.
                let mut u = (sign * x).rem_euclid(TAU) / TAU * n as f64;
                if u >= n as f64 {
                    u = 0.0;
                }
                let s = (u - half_width).ceil();
                offset.push((s - u) as f32);
                cell = cell * n + (s as i64).rem_euclid(n as i64) as usize;
            }
            start.push(cell as u32);
        }
        // Counting sort by start cell (stable: equal cells keep input order).
        let mut first = vec![0u32; cells + 1];
        for &c in &start {
            first[c as usize + 1] += 1;
        }
        for c in 0..cells {
            first[c + 1] += first[c];
        }
        let mut next = first.clone();
        let mut order = vec![0u32; m];
        for (i, &c) in start.iter().enumerate() {
            order[next[c as usize] as usize] = i as u32;
            next[c as usize] += 1;
        }
        let sorted_start = order.iter().map(|&i| start[i as usize]).collect();
        let sorted_offset = order
            .iter()
            .flat_map(|&i| offset[i as usize * d..(i as usize + 1) * d].iter().copied())
            .collect();
        Ok(SortedPoints {
            order,
            start: sorted_start,
            offset: sorted_offset,
            first,
        })
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nufft::plan::{NufftDesc, NufftType};

    #[test]
    fn points_sort_by_start_cell_with_their_offsets() {
        let layout = NufftDesc::new(NufftType::One, &[8, 10], 1e-2)
            .isign(-1)
            .layout()
            .unwrap();
        assert_eq!((layout.grid.clone(), layout.spreader.width), (vec![16, 20], 4));
        let h = |n: f64| TAU / n;
        // Point 0 in cell (3.25, 7.5); point 1 at (−0.1 cells, 0.5): wraps.
        let points = [3.25 * h(16.0), 7.5 * h(20.0), -0.1 * h(16.0), 0.5 * h(20.0)];
        let sorted = SortedPoints::new(&points, &layout).unwrap();
        // Starts: ceil(3.25 − 2) = 2, ceil(7.5 − 2) = 6; ceil(15.9 − 2) = 14, ceil(0.5 − 2) = −1 → 19.
        let cells = [2 * 20 + 6, 14 * 20 + 19];
        assert_eq!(sorted.order, vec![0, 1]);
        assert_eq!(sorted.start, cells.map(|c| c as u32).to_vec());
        let want = [2.0 - 3.25, 6.0 - 7.5, 14.0 - 15.9, -1.0 - 0.5];
        for (g, w) in sorted.offset.iter().zip(want) {
            assert!((*g as f64 - w).abs() < 1e-5, "{g} vs {w}");
        }
        assert_eq!(sorted.first[cells[0]], 0);
        assert_eq!(sorted.first[cells[0] + 1], 1);
        assert_eq!(sorted.first[cells[1] + 1], 2);
        assert_eq!(*sorted.first.last().unwrap(), 2);

        // Mirrored points (type 1's default sign) start elsewhere; order by cell.
        let mirrored = NufftDesc::new(NufftType::One, &[8, 10], 1e-2).layout().unwrap();
        let sorted = SortedPoints::new(&points, &mirrored).unwrap();
        // −3.25 → 12.75 → start 11; −7.5 → 12.5 → 11; 0.1 → −1 → 15; −0.5 → 19.5 → 18.
        assert_eq!(sorted.start, vec![11 * 20 + 11, 15 * 20 + 18]);
    }

    #[test]
    fn bad_points_are_refused() {
        let layout = NufftDesc::new(NufftType::Two, &[8, 8], 1e-3).layout().unwrap();
        let err = SortedPoints::new(&[0.0, f64::NAN], &layout).unwrap_err().to_string();
        assert!(err.contains("non-finite"), "{err}");
        let err = SortedPoints::new(&[0.0, 1.0, 2.0], &layout).unwrap_err().to_string();
        assert!(err.contains("3 point coordinates"), "{err}");
        let err = SortedPoints::new(&[], &layout).unwrap_err().to_string();
        assert!(err.contains("no points"), "{err}");
    }
}

//! What a non-uniform FFT computes ([`NufftDesc`]) and how (the [`Layout`]:
//! spreading kernel, fine grid, FFT), as plain data that tests check without
//! a device.

use super::spreader::Spreader;
use crate::fft::{Direction, FftDesc, FftKind, ModeOrder, Norm};

/// FINUFFT's transform types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NufftType {
    /// Non-uniform points to uniform modes: `f_k = Σ_j c_j e^{±i k·x_j}`.
    One,
    /// Uniform modes to non-uniform points: `c_j = Σ_k f_k e^{±i k·x_j}`.
    Two,
}

impl NufftType {
    /// FINUFFT's default sign of the exponent: +1 for type 1, −1 for type 2
    /// (each the other's adjoint).
    pub fn default_isign(self) -> i32 {
        match self {
            NufftType::One => 1,
            NufftType::Two => -1,
        }
    }
}

/// Tolerances a plan accepts: below 1e-6 f32 round-off dominates.
pub const TOLERANCE_RANGE: (f64, f64) = (1e-6, 1e-1);

/// One non-uniform FFT: `batch` vectors over the same points.
#[derive(Clone, Debug, PartialEq)]
pub struct NufftDesc {
    pub kind: NufftType,
    /// Modes per dimension (1 to 3 dimensions), FINUFFT's `N1, N2, N3`.
    pub modes: Vec<usize>,
    /// Relative tolerance, in [`TOLERANCE_RANGE`].
    pub eps: f64,
    /// The exponent's sign, +1 or −1.
    pub isign: i32,
    /// Fine grid size over modes: 2 or 1.25.
    pub upsampling: f64,
    /// Mode order: `Shifted` is FINUFFT's default (−N/2 … N/2−1 on every
    /// dimension, `modeord = 0`), `Fft` its `modeord = 1` (0 … N/2−1, −N/2 … −1).
    pub mode_order: ModeOrder,
    /// Vectors transformed together.
    pub batch: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NufftError {
    Invalid(String),
    Fft(String),
}

impl std::fmt::Display for NufftError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NufftError::Invalid(m) => write!(f, "invalid NUFFT request: {m}"),
            NufftError::Fft(m) => write!(f, "NUFFT's FFT: {m}"),
        }
    }
}

impl std::error::Error for NufftError {}

impl NufftDesc {
    /// A transform with FINUFFT's defaults: its sign, upsampling 2, modes
    /// −N/2 … N/2−1, one vector.
    pub fn new(kind: NufftType, modes: &[usize], eps: f64) -> Self {
        NufftDesc {
            kind,
            modes: modes.to_vec(),
            eps,
            isign: kind.default_isign(),
            upsampling: 2.0,
            mode_order: ModeOrder::Shifted,
            batch: 1,
        }
    }

    pub fn isign(mut self, isign: i32) -> Self {
        self.isign = isign;
        self
    }

    pub fn upsampling(mut self, sigma: f64) -> Self {
        self.upsampling = sigma;
        self
    }

    pub fn mode_order(mut self, order: ModeOrder) -> Self {
        self.mode_order = order;
        self
    }

    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch;
        self
    }

    pub fn dims(&self) -> usize {
        self.modes.len()
    }

    /// Checks the request and chooses kernel, fine grid and FFT.
    pub fn layout(&self) -> Result<Layout, NufftError> {
        let invalid = |m: String| Err(NufftError::Invalid(m));
        if !(1..=3).contains(&self.dims()) {
            return invalid(format!("{} dimensions given; 1, 2 or 3 are supported", self.dims()));
        }
        if self.modes.contains(&0) {
            return invalid(format!("modes {:?} include an empty dimension", self.modes));
        }
        let (lo, hi) = TOLERANCE_RANGE;
        if !(lo..=hi).contains(&self.eps) {
            return invalid(format!("tolerance {} outside [{lo:e}, {hi:e}]", self.eps));
        }
        if self.isign != 1 && self.isign != -1 {
            return invalid(format!("isign {} is neither +1 nor -1", self.isign));
        }
        if self.upsampling != 2.0 && self.upsampling != 1.25 {
            return invalid(format!("upsampling {} (2 or 1.25 are supported)", self.upsampling));
        }
        if self.batch == 0 {
            return invalid("a batch of no vectors".into());
        }
        if self.mode_order == ModeOrder::ShiftedOddLower {
            return invalid("mode order: Shifted or Fft".into());
        }
        let spreader = Spreader::for_tolerance(self.eps, self.upsampling, self.dims());
        // Checked before anything of the grid's size is allocated.
        let grid: Option<Vec<usize>> = self
            .modes
            .iter()
            .map(|&m| fine_grid_len(m, self.upsampling, spreader.width))
            .collect();
        let cells = grid
            .as_ref()
            .and_then(|g| g.iter().try_fold(1usize, |n, &d| n.checked_mul(d)));
        let Some(grid) = grid.filter(|_| cells.is_some_and(|c| c <= MAX_INDEX)) else {
            return invalid(format!(
                "modes {:?} need a fine grid of more than {MAX_INDEX} cells (u32 indices)",
                self.modes
            ));
        };
        let correction = self
            .modes
            .iter()
            .zip(&grid)
            .map(|(&m, &n)| {
                let fourier = spreader.fourier(n, m / 2 + 1);
                // Mode k (signed) of the stored order, 1/φ̂(|k|).
                (0..m)
                    .map(|i| 1.0 / fourier[signed_mode(i, m, self.mode_order).unsigned_abs() as usize])
                    .collect()
            })
            .collect();
        Ok(Layout {
            spreader,
            grid,
            correction,
            negate_points: self.negate_points(),
        })
    }

    /// The FFT of this transform's fine grid, `[batch, n…]` complex, or
    /// `[n…, batch]` where `interleaved` ([`VectorSplit`]): forward and
    /// truncated to the modes for type 1, inverse from the modes for type 2,
    /// unscaled either way.
    pub fn fft(&self, layout: &Layout, interleaved: bool) -> FftDesc {
        let dims = self.dims();
        let axes: Vec<isize> = (1..=dims as isize).collect();
        let (shape, direction, norm) = match self.kind {
            NufftType::One => (&layout.grid, Direction::Forward, Norm::Backward),
            NufftType::Two => (&self.modes, Direction::Inverse, Norm::Forward),
        };
        // Interleaved vectors (`[n…, batch]`) transform along the leading axes.
        let (shape, axes): (Vec<usize>, Vec<isize>) = if interleaved {
            let shape = shape.iter().copied().chain(std::iter::once(self.batch)).collect();
            (shape, axes.iter().map(|a| a - 1).collect())
        } else {
            (std::iter::once(self.batch).chain(shape.iter().copied()).collect(), axes)
        };
        let desc = FftDesc::new(&shape, &axes, FftKind::C2C, direction)
            .modes(&self.modes)
            .mode_order(self.mode_order)
            .norm(norm);
        match self.kind {
            NufftType::One => desc,
            NufftType::Two => desc.lengths(&layout.grid),
        }
    }

    /// The forward FFT's sign is −1: type 1 with +1 and type 2 with −1 run at
    /// the points' mirror images, `e^{+ikx} = e^{−ik(−x)}`.
    fn negate_points(&self) -> bool {
        match self.kind {
            NufftType::One => self.isign == 1,
            NufftType::Two => self.isign == -1,
        }
    }
}

/// How a transform runs: everything the device needs besides the points.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub spreader: Spreader,
    /// Fine grid cells per dimension.
    pub grid: Vec<usize>,
    /// Per dimension, the deconvolution factor `1/φ̂(k)` of each stored mode.
    pub correction: Vec<Vec<f64>>,
    /// Whether the points are spread at `−x` (see [`NufftDesc::fft`]).
    pub negate_points: bool,
}

/// What the values at the points are: complex, or real (type 1 reads real
/// values, their imaginary parts zero; type 2 writes the real parts only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointValues {
    Complex,
    Real,
}

impl PointValues {
    /// f32 values per point and vector.
    pub fn floats(self) -> usize {
        match self {
            PointValues::Complex => 2,
            PointValues::Real => 1,
        }
    }
}

/// How the threads of spreading and interpolation share a batch of vectors.
/// A thread accumulates `per_thread` vectors (a (cell, point) pair's kernel
/// weight serves them all); `lanes` threads side by side serve one cell or
/// point, the vectors `lanes` apart, so that a warp reads one point's (or
/// cell's) values in one run. Where `lanes > 1` the fine grid and the sorted
/// values lie interleaved, `[cells, batch]`; otherwise `[batch, cells]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorSplit {
    pub per_thread: usize,
    pub lanes: usize,
}

/// Most lanes on one cell or point: half a warp, so that 8 vectors a thread
/// share each pair's weight and address (fewer instructions per sum: the
/// kernels issue-bound, benches/results/2026-11-28_nufft_h200.md).
const MAX_LANES: usize = 16;

impl VectorSplit {
    pub fn for_batch(batch: usize) -> Self {
        let per_thread = |n: usize| match n {
            0..=1 => 1,
            2..=3 => 2,
            4..=7 => 4,
            _ => 8,
        };
        if batch <= 8 {
            // Few vectors: a thread per cell, neighbouring threads on neighbouring cells.
            VectorSplit {
                per_thread: per_thread(batch),
                lanes: 1,
            }
        } else {
            let per_thread = per_thread(batch.div_ceil(MAX_LANES));
            VectorSplit {
                per_thread,
                lanes: batch.div_ceil(per_thread).min(MAX_LANES),
            }
        }
    }

    pub fn interleaved(&self) -> bool {
        self.lanes > 1
    }

    /// Vectors one pass of the threads covers; passes are `batch / width` rounded up.
    pub fn width(&self) -> usize {
        self.per_thread * self.lanes
    }
}

/// The signed frequency of stored mode `i` of `m` in `order`.
pub fn signed_mode(i: usize, m: usize, order: ModeOrder) -> i64 {
    let (i, m) = (i as i64, m as i64);
    match order {
        ModeOrder::Fft => {
            if i < m - m / 2 {
                i
            } else {
                i - m
            }
        }
        _ => i - m / 2,
    }
}

/// Largest number of fine-grid cells or points a plan takes (u32 indices).
pub const MAX_INDEX: usize = u32::MAX as usize / 2;

/// FINUFFT's fine grid: `σ·m` cells, at least `2w`, rounded up to an even
/// 2-3-5-smooth length (fast for the FFT); `None` where that exceeds `usize`.
pub fn fine_grid_len(modes: usize, sigma: f64, width: usize) -> Option<usize> {
    // The cast saturates: an enormous request asks for usize::MAX cells.
    let cells = (sigma * modes as f64).ceil() as usize;
    next_even_smooth(cells.max(2 * width))
}

/// The least even `2^a·3^b·5^c` at least `least`, or `None` above `usize::MAX`:
/// the least power of two over each product of powers of 3 and 5 (at most
/// 28·41 of them), so it ends on any `least`.
pub fn next_even_smooth(least: usize) -> Option<usize> {
    let times = |n: usize, p: usize| n.checked_mul(p);
    let mut best: Option<usize> = None;
    let mut p5 = Some(1usize);
    while let Some(five) = p5 {
        let mut p35 = Some(five);
        while let Some(odd) = p35 {
            let mut n = times(odd, 2);
            while let Some(v) = n.filter(|&v| v < least) {
                n = times(v, 2);
            }
            if let Some(v) = n {
                best = Some(best.map_or(v, |b| b.min(v)));
            }
            p35 = times(odd, 3).filter(|_| odd < least);
        }
        p5 = times(five, 5).filter(|_| five < least);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fine_grids_are_even_smooth_and_wide_enough() {
        assert_eq!(fine_grid_len(100, 2.0, 7), Some(200));
        assert_eq!(fine_grid_len(33, 2.0, 7), Some(72));
        assert_eq!(fine_grid_len(3, 2.0, 7), Some(16));
        assert_eq!(fine_grid_len(100, 1.25, 10), Some(128));
        assert_eq!(fine_grid_len(97, 2.0, 4), Some(200));
        assert_eq!(fine_grid_len(usize::MAX, 2.0, 4), None);
    }

    /// Against a linear search where one is quick, and on every scale of
    /// `usize` (the search ends, the result is even, smooth and least).
    #[test]
    fn the_smooth_length_search_ends_on_every_size() {
        let smooth = |mut n: usize| {
            for p in [2, 3, 5] {
                while n.is_multiple_of(p) {
                    n /= p;
                }
            }
            n == 1
        };
        for least in 0..5000 {
            let want = (least.max(2)..).find(|&n| n % 2 == 0 && smooth(n));
            assert_eq!(next_even_smooth(least), want, "{least}");
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let edges = [
            usize::MAX,
            usize::MAX - 1,
            1 << 63,
            (1 << 63) + 1,
            1 << 53,
            (1 << 32) + 1,
            1 << 31,
        ];
        let random = (0..2000).map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> (seed % 64)) as usize
        });
        for least in edges.into_iter().chain(random) {
            match next_even_smooth(least) {
                Some(n) => {
                    assert!(n >= least && n % 2 == 0 && smooth(n), "{least} -> {n}");
                    // Least: no smaller even smooth number at or above `least`
                    // among the next candidates down.
                    assert!(n / 2 < least || n == 2, "{least} -> {n}");
                }
                None => assert!(
                    least > 9 * (usize::MAX / 10),
                    "{least} has no even smooth number above it"
                ),
            }
        }
    }

    #[test]
    fn layouts_follow_the_request() {
        let desc = NufftDesc::new(NufftType::One, &[32, 17], 1e-5).batch(3);
        let layout = desc.layout().unwrap();
        assert_eq!(layout.spreader.width, 7);
        assert_eq!(layout.grid, vec![64, 36]);
        assert!(layout.negate_points, "type 1's default +1 runs on mirrored points");
        assert_eq!(layout.correction[1].len(), 17);
        // The correction is even in k: modes −8 and 8 of 17 (shifted order) agree.
        assert_eq!(layout.correction[1][0], layout.correction[1][16]);
        // and smallest at k = 0 (φ̂ peaks there).
        let min = layout.correction[0].iter().cloned().fold(f64::MAX, f64::min);
        assert_eq!(min, layout.correction[0][16]);
        let fft = desc.fft(&layout, false);
        assert_eq!(fft.shape, vec![3, 64, 36]);
        assert_eq!(fft.modes, Some(vec![32, 17]));
        assert_eq!(fft.direction, Direction::Forward);

        let two = NufftDesc::new(NufftType::Two, &[40], 1e-3);
        let layout = two.layout().unwrap();
        assert!(layout.negate_points);
        let fft = two.fft(&layout, false);
        assert_eq!(
            (fft.shape, fft.lengths, fft.norm),
            (vec![1, 40], Some(vec![80]), Norm::Forward)
        );
        assert!(!two.isign(1).layout().unwrap().negate_points);
    }

    #[test]
    fn batches_split_into_lanes_and_vectors() {
        let split = |batch| {
            let s = VectorSplit::for_batch(batch);
            (s.per_thread, s.lanes, s.interleaved())
        };
        assert_eq!(split(1), (1, 1, false));
        assert_eq!(split(3), (2, 1, false));
        assert_eq!(split(8), (8, 1, false));
        assert_eq!(split(9), (1, 9, true));
        assert_eq!(split(16), (1, 16, true));
        assert_eq!(split(20), (2, 10, true));
        assert_eq!(split(128), (8, 16, true));
        assert_eq!(split(1000), (8, 16, true));
        assert_eq!(VectorSplit::for_batch(1000).width(), 128);
        // Interleaved batches transform the leading axes of `[n…, batch]`.
        let desc = NufftDesc::new(NufftType::One, &[32, 17], 1e-5).batch(12);
        let fft = desc.fft(&desc.layout().unwrap(), VectorSplit::for_batch(12).interleaved());
        assert_eq!((fft.shape, fft.axes), (vec![64, 36, 12], vec![0, 1]));
    }

    #[test]
    fn bad_requests_are_refused() {
        let ok = NufftDesc::new(NufftType::One, &[8, 8], 1e-4);
        for (desc, why) in [
            (
                NufftDesc {
                    modes: vec![],
                    ..ok.clone()
                },
                "dimensions",
            ),
            (
                NufftDesc {
                    modes: vec![2; 4],
                    ..ok.clone()
                },
                "dimensions",
            ),
            (
                NufftDesc {
                    modes: vec![8, 0],
                    ..ok.clone()
                },
                "empty",
            ),
            (
                NufftDesc {
                    eps: 1e-9,
                    ..ok.clone()
                },
                "tolerance",
            ),
            (
                NufftDesc {
                    eps: f64::NAN,
                    ..ok.clone()
                },
                "tolerance",
            ),
            (ok.clone().isign(0), "isign"),
            (NufftDesc::new(NufftType::One, &[usize::MAX], 1e-4), "fine grid"),
            (NufftDesc::new(NufftType::One, &[1 << 62], 1e-4), "fine grid"),
            (NufftDesc::new(NufftType::One, &[1 << 16, 1 << 16], 1e-4), "fine grid"),
            (ok.clone().upsampling(1.5), "upsampling"),
            (ok.clone().batch(0), "batch"),
        ] {
            let err = desc.layout().unwrap_err().to_string();
            assert!(err.contains(why), "{err} lacks {why}");
        }
    }

    #[test]
    fn signed_modes_in_both_orders() {
        let shifted: Vec<i64> = (0..5).map(|i| signed_mode(i, 5, ModeOrder::Shifted)).collect();
        assert_eq!(shifted, vec![-2, -1, 0, 1, 2]);
        let fft: Vec<i64> = (0..4).map(|i| signed_mode(i, 4, ModeOrder::Fft)).collect();
        assert_eq!(fft, vec![0, 1, -2, -1]);
        let shifted: Vec<i64> = (0..4).map(|i| signed_mode(i, 4, ModeOrder::Shifted)).collect();
        assert_eq!(shifted, vec![-2, -1, 0, 1]);
    }
}

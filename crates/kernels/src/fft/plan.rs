//! The plan: a numpy-style transform described (`FftDesc`), validated and
//! broken into one step per axis (`FftPlan`, `AxisStep`); no device here.

use std::fmt;

use super::fault::FaultTolerance;
use super::window::Window;
use crate::precision::Precision;

/// Kind of transform along the axes, numpy's naming.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftKind {
    /// Complex to complex (fftn / ifftn).
    C2C,
    /// Real to complex, forward only (rfftn): the last axis keeps `n/2 + 1` bins.
    R2C,
    /// Complex to real, inverse only (irfftn).
    C2R,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Forward,
    Inverse,
}

/// Normalisation, as numpy's `norm` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Norm {
    /// Forward unscaled, inverse scaled by 1/n.
    #[default]
    Backward,
    /// Forward scaled by 1/n, inverse unscaled.
    Forward,
    /// Both scaled by 1/sqrt(n).
    Ortho,
}

impl std::str::FromStr for Norm {
    type Err = FftError;
    fn from_str(s: &str) -> Result<Self, FftError> {
        match s {
            "backward" => Ok(Norm::Backward),
            "forward" => Ok(Norm::Forward),
            "ortho" => Ok(Norm::Ortho),
            other => Err(FftError::Invalid(format!(
                "unknown norm '{other}' (expected backward, forward or ortho)"
            ))),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FftError {
    /// The request cannot describe a transform (bad axis, modes, lengths...).
    Invalid(String),
    /// A valid request this implementation does not run (yet).
    Unsupported(String),
    /// Buffers that do not match the plan.
    Buffer(String),
}

impl fmt::Display for FftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FftError::Invalid(m) => write!(f, "invalid FFT request: {m}"),
            FftError::Unsupported(m) => write!(f, "unsupported FFT: {m}"),
            FftError::Buffer(m) => write!(f, "FFT buffer mismatch: {m}"),
        }
    }
}

impl std::error::Error for FftError {}

/// What to compute: numpy's `fftn(x, s, axes, norm)` family plus FNO windows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FftDesc {
    /// Logical input shape (complex values for C2C/C2R input, reals for R2C).
    pub shape: Vec<usize>,
    /// Axes to transform; negative values count from the end. For R2C/C2R the
    /// last listed axis is the real one, as in numpy's rfftn.
    pub axes: Vec<isize>,
    pub kind: FftKind,
    pub direction: Direction,
    /// Per listed axis, the retained modes: a forward transform outputs only
    /// them, an inverse transform takes only them (the rest is zero). The real
    /// axis keeps the first `m` bins, every other axis the centred window of the
    /// `m` lowest |frequencies| in FFT order.
    pub modes: Option<Vec<usize>>,
    /// Per listed axis, the transform length (numpy's `s`): forward inputs are
    /// cropped or zero-padded at the end; inverse outputs have this length.
    pub lengths: Option<Vec<usize>>,
    pub norm: Norm,
    /// Order of the retained modes on the non-real axes.
    pub mode_order: ModeOrder,
    /// What the input buffer holds; the transform computes in f32 whatever
    /// its buffers hold.
    pub input_precision: Precision,
    /// What the output buffer holds. The scratch buffers between launches
    /// take the output's precision where it is half, else the input's.
    pub output_precision: Precision,
    /// Whether the stage kernels check their transforms by checksums
    /// (`fft/fault.rs`, docs/abft.md).
    pub fault_tolerance: FaultTolerance,
}

/// How the centred window of retained modes is laid out along a complex axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ModeOrder {
    /// FFT order: frequencies `0, 1, …, m - m/2 - 1`, then `-m/2, …, -1`.
    #[default]
    Fft,
    /// fftshift order, as neuraloperator stores its weights: `-m/2, …, m - m/2 - 1`.
    Shifted,
    /// fftshift order, placed one index lower on odd-length axes
    /// ([`Window::ShiftedLower`]): where neuraloperator 2.0.0's inverse puts
    /// its modes.
    ShiftedOddLower,
}

impl ModeOrder {
    /// The window of `m` retained modes on a non-real axis of length `n`.
    pub fn window(self, m: usize, n: usize) -> Window {
        match self {
            ModeOrder::Fft => Window::Centered(m),
            ModeOrder::Shifted => Window::Shifted(m),
            ModeOrder::ShiftedOddLower if n % 2 == 1 => Window::ShiftedLower(m),
            ModeOrder::ShiftedOddLower => Window::Shifted(m),
        }
    }
}

impl FftDesc {
    pub fn new(shape: &[usize], axes: &[isize], kind: FftKind, direction: Direction) -> Self {
        FftDesc {
            shape: shape.to_vec(),
            axes: axes.to_vec(),
            kind,
            direction,
            modes: None,
            lengths: None,
            norm: Norm::Backward,
            mode_order: ModeOrder::Fft,
            input_precision: Precision::F32,
            output_precision: Precision::F32,
            fault_tolerance: FaultTolerance::Off,
        }
    }

    /// Checksums in the stage kernels: detect faults, or detect and correct them.
    pub fn fault_tolerance(mut self, tolerance: FaultTolerance) -> Self {
        self.fault_tolerance = tolerance;
        self
    }

    /// Input, output and scratch buffers in `precision`.
    pub fn precision(self, precision: Precision) -> Self {
        self.precisions(precision, precision)
    }

    /// The input in one precision, the output in another (f32 activations
    /// in, a half-precision spectrum out, say).
    pub fn precisions(mut self, input: Precision, output: Precision) -> Self {
        self.input_precision = input;
        self.output_precision = output;
        self
    }

    pub fn mode_order(mut self, order: ModeOrder) -> Self {
        self.mode_order = order;
        self
    }

    pub fn modes(mut self, modes: &[usize]) -> Self {
        self.modes = Some(modes.to_vec());
        self
    }

    pub fn lengths(mut self, lengths: &[usize]) -> Self {
        self.lengths = Some(lengths.to_vec());
        self
    }

    pub fn norm(mut self, norm: Norm) -> Self {
        self.norm = norm;
        self
    }
}

/// What one axis step does to the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum AxisKind {
    C2C { inverse: bool },
    R2C,
    C2R,
}

/// One transform along one axis: input length `in_len` on that axis (stored
/// entries), transform length `n`, output length `out_len`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AxisStep {
    pub axis: usize,
    pub kind: AxisKind,
    pub n: usize,
    pub in_len: usize,
    pub out_len: usize,
    /// Window of the input sequence (samples for forward, bins/frequencies for inverse).
    pub load: Window,
    /// Window of the output sequence.
    pub store: Window,
    pub scale: f64,
}

/// A planned transform: validated shapes and the per-axis steps.
#[derive(Clone, Debug)]
pub struct FftPlan {
    desc: FftDesc,
    output_shape: Vec<usize>,
    steps: Vec<AxisStep>,
}

impl FftPlan {
    pub fn new(desc: FftDesc) -> Result<Self, FftError> {
        let invalid = |m: String| Err(FftError::Invalid(m));
        let rank = desc.shape.len();
        if desc.axes.is_empty() {
            return invalid("no axes to transform".into());
        }
        match (desc.kind, desc.direction) {
            (FftKind::R2C, Direction::Inverse) => return invalid("a real-to-complex transform is forward only".into()),
            (FftKind::C2R, Direction::Forward) => return invalid("a complex-to-real transform is inverse only".into()),
            _ => {}
        }
        let mut axes = Vec::with_capacity(desc.axes.len());
        for &a in &desc.axes {
            let resolved = if a < 0 { a + rank as isize } else { a };
            if resolved < 0 || resolved >= rank as isize {
                return invalid(format!("axis {a} is out of range for a {rank}-dimensional input"));
            }
            let resolved = resolved as usize;
            if axes.contains(&resolved) {
                return invalid(format!("axis {a} is listed twice"));
            }
            axes.push(resolved);
        }
        for (name, list) in [("modes", &desc.modes), ("lengths", &desc.lengths)] {
            if let Some(list) = list {
                if list.len() != axes.len() {
                    return invalid(format!("{} {name} given for {} axes", list.len(), axes.len()));
                }
                if list.contains(&0) {
                    return invalid(format!("{name} must be positive"));
                }
            }
        }
        if let Some(&d) = desc.shape.iter().find(|&&d| d == 0) {
            return invalid(format!("input shape {:?} has an empty dimension ({d})", desc.shape));
        }

        let last = axes.len() - 1;
        let inverse = desc.direction == Direction::Inverse;
        let mut shape = desc.shape.clone();
        let mut steps = Vec::with_capacity(axes.len());
        for (i, &axis) in axes.iter().enumerate() {
            let in_len = shape[axis];
            let real = i == last && desc.kind != FftKind::C2C;
            let modes = desc.modes.as_ref().map(|m| m[i]);
            let length = desc.lengths.as_ref().map(|l| l[i]);
            let kind = match (real, desc.kind) {
                (true, FftKind::R2C) => AxisKind::R2C,
                (true, _) => AxisKind::C2R,
                (false, _) => AxisKind::C2C { inverse },
            };
            let step = match kind {
                AxisKind::R2C | AxisKind::C2C { inverse: false } => {
                    let n = length.unwrap_or(in_len);
                    let full_out = if kind == AxisKind::R2C { n / 2 + 1 } else { n };
                    let store = match modes {
                        None => Window::Prefix(full_out),
                        Some(m) if m > full_out => {
                            return invalid(format!(
                                "modes {m} on axis {axis} exceed the {full_out} frequencies of a length-{n} transform"
                            ))
                        }
                        Some(m) if kind == AxisKind::R2C => Window::Prefix(m),
                        Some(m) => desc.mode_order.window(m, n),
                    };
                    AxisStep {
                        axis,
                        kind,
                        n,
                        in_len,
                        out_len: store.stored_len(full_out),
                        load: Window::Prefix(in_len),
                        store,
                        scale: 1.0,
                    }
                }
                AxisKind::C2C { inverse: true } => {
                    let (n, load) = match modes {
                        Some(m) => {
                            if m != in_len {
                                return invalid(format!("axis {axis} holds {in_len} values but {m} modes were given"));
                            }
                            let n = length.unwrap_or(m);
                            if m > n {
                                return invalid(format!("modes {m} on axis {axis} exceed the output length {n}"));
                            }
                            (n, desc.mode_order.window(m, n))
                        }
                        None => {
                            let n = length.unwrap_or(in_len);
                            (n, Window::Prefix(in_len))
                        }
                    };
                    AxisStep {
                        axis,
                        kind,
                        n,
                        in_len,
                        out_len: n,
                        load,
                        store: Window::Prefix(n),
                        scale: 1.0,
                    }
                }
                AxisKind::C2R => {
                    if let Some(m) = modes {
                        if m != in_len {
                            return invalid(format!("axis {axis} holds {in_len} bins but {m} modes were given"));
                        }
                    }
                    let n = match length {
                        Some(n) => n,
                        None if in_len >= 2 => 2 * (in_len - 1),
                        None => {
                            return invalid(format!(
                                "an inverse real transform of {in_len} bin needs an output length"
                            ))
                        }
                    };
                    if modes.is_some() && in_len > n / 2 + 1 {
                        return invalid(format!(
                            "modes {in_len} on axis {axis} exceed the {} bins of a length-{n} signal",
                            n / 2 + 1
                        ));
                    }
                    AxisStep {
                        axis,
                        kind,
                        n,
                        in_len,
                        out_len: n,
                        load: Window::Prefix(in_len),
                        store: Window::Prefix(n),
                        scale: 1.0,
                    }
                }
            };
            shape[axis] = step.out_len;
            steps.push(step);
        }
        for step in &mut steps {
            let n = step.n as f64;
            let forward = matches!(step.kind, AxisKind::R2C | AxisKind::C2C { inverse: false });
            step.scale = match (desc.norm, forward) {
                (Norm::Backward, true) | (Norm::Forward, false) => 1.0,
                (Norm::Backward, false) | (Norm::Forward, true) => 1.0 / n,
                (Norm::Ortho, _) => 1.0 / n.sqrt(),
            };
        }
        // Inverse real transforms finish with the real axis; forward ones start with it.
        if desc.kind == FftKind::R2C {
            steps.reverse();
        }
        Ok(FftPlan {
            desc,
            output_shape: shape,
            steps,
        })
    }

    pub fn desc(&self) -> &FftDesc {
        &self.desc
    }

    pub fn input_shape(&self) -> &[usize] {
        &self.desc.shape
    }

    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    pub fn input_is_complex(&self) -> bool {
        self.desc.kind != FftKind::R2C
    }

    pub fn output_is_complex(&self) -> bool {
        self.desc.kind != FftKind::C2R
    }

    /// Number of real values of the input buffer (complex values count twice),
    /// each stored in the plan's precision.
    pub fn input_floats(&self) -> usize {
        self.desc.shape.iter().product::<usize>() * if self.input_is_complex() { 2 } else { 1 }
    }

    /// Number of values a device execution reads: up to the last one read,
    /// which falls short of [`Self::input_floats`] when the first transformed
    /// axis is cropped (a row-pitched buffer read as a crop of its pitch).
    pub fn input_extent(&self) -> usize {
        let parts = if self.input_is_complex() { 2 } else { 1 };
        let first = &self.steps[0];
        let seq_in = match first.kind {
            AxisKind::C2R => first.n / 2 + 1,
            _ => first.n,
        };
        let shape = &self.desc.shape;
        let (mut extent, mut stride) = (parts, parts);
        for d in (0..shape.len()).rev() {
            let read = if d == first.axis {
                first.load.stored_len(seq_in)
            } else {
                shape[d]
            };
            extent += (read - 1) * stride;
            stride *= shape[d];
        }
        extent
    }

    /// Number of real values of the output buffer (complex values count twice).
    pub fn output_floats(&self) -> usize {
        self.output_shape.iter().product::<usize>() * if self.output_is_complex() { 2 } else { 1 }
    }

    pub(crate) fn steps(&self) -> &[AxisStep] {
        &self.steps
    }

    /// A host input of `len` values must hold [`Self::input_floats`].
    pub(crate) fn check_host_input(&self, len: usize) -> Result<(), FftError> {
        if len != self.input_floats() {
            return Err(FftError::Buffer(format!(
                "input has {len} values, the plan expects {}",
                self.input_floats()
            )));
        }
        Ok(())
    }
}

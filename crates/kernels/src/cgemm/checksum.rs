//! Fault tolerance of the CGEMM by Huang and Abraham's checksums: for every
//! output row `p` of every mode `k`,
//! `Σ_q C[p,q,k] = s_k · Σ_r op(A[p,r,k]) · β[r,k]` with `β[r,k] = Σ_q op(B[r,q,k])`
//! (plus the bias's sum at its mode). After the product, one launch sums B's
//! rows, one checks every row (a cube a row and 32 modes, `k` fastest so
//! loads coalesce, 8 units sharing each mode's sums)
//! and counts a disagreement beyond round-off in the [`FaultRecord`], listing
//! the row in [`FaultTolerance::Correct`]; a one-cube repair launch then
//! computes each listed row again and counts it corrected where its checksums
//! agree. In the spectral convolution a row is one batch element at one mode
//! (one input channel in the weight gradient). Design: docs/abft.md.

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

use super::launch::{with_operand_storage, OperandJob};
use super::problem::CgemmProblem;
use crate::fault::{is_finite, FaultRecord, FaultTolerance, FAULT_HEADER, REPAIR_CAPACITY};
use crate::grid::cube_count;
use crate::precision::{load_value, store_value, Precision, Storage, Stored};

/// Threads a cube of the row sums and the check, and of the repair's one cube.
const THREADS: usize = 256;

/// How far beyond round-off a row's checksum difference must lie to count as
/// a fault: this factor times `u·√(r + q + 2)` times the sum of the
/// magnitudes of the row's products (plus C's own rounding where it holds
/// half precision). Products and sums run in f32 (`u = 2⁻²⁴`).
pub const CGEMM_TOLERANCE_FACTOR: f64 = 16.0;

// Where the layout array holds the problem's shape (`p` first, which the
// grid carries instead), strides and bias mode.
const Q: usize = 1;
const R: usize = 2;
const K: usize = 3;
const A_P: usize = 4;
const A_R: usize = 5;
const A_K: usize = 6;
const B_R: usize = 7;
const B_Q: usize = 8;
const B_K: usize = 9;
const C_P: usize = 10;
const C_Q: usize = 11;
const C_K: usize = 12;
const BIAS_MODE: usize = 13;
const LAYOUT: usize = 14;

/// What the check kernels are compiled with: the problem's conjugations,
/// scale and bias, and whether faulty rows are listed for repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct RowChecks {
    conj_a: bool,
    conj_b: bool,
    scaled: bool,
    biased: bool,
    correct: bool,
}

/// Consecutive modes a cube of the row sums and the check covers (so loads
/// coalesce along `k`); its `SLICES` groups of units share each mode's sums.
const MODES_PER_CUBE: usize = 32;
const SLICES: usize = THREADS / MODES_PER_CUBE;
/// Floats of B's row sums per `(r, k)`, and of a row's checksum sums.
const B_SUMS: usize = 3;
const ROW_SUMS: usize = 5;

/// A unit's mode within its cube's modes and its slice of the sums.
#[cube]
fn unit_mode() -> (usize, usize) {
    let unit = UNIT_POS as usize;
    (unit % MODES_PER_CUBE, unit / MODES_PER_CUBE)
}

/// Adds each slice's `values` of this unit's mode in shared memory; slice 0
/// gets the totals (others zeros). Every unit of the cube calls it.
#[cube]
fn add_slices<F: Float>(values: &mut Array<F>, #[comptime] count: usize) {
    let mut shared = SharedMemory::<F>::new(comptime![count * THREADS]);
    let unit = UNIT_POS as usize;
    #[unroll]
    for v in 0..count {
        shared[v * THREADS + unit] = values[v];
    }
    sync_cube();
    let (mode, slice) = unit_mode();
    #[unroll]
    for v in 0..count {
        let mut total = F::new(0.0);
        if slice == 0 {
            #[unroll]
            for s in 0..SLICES {
                total += shared[v * THREADS + s * MODES_PER_CUBE + mode];
            }
        }
        values[v] = total;
    }
}

/// `β[r,k] = Σ_q op(B[r,q,k])` and `Σ_q |B[r,q,k]|₁`, three floats per
/// `(r, k)` (`k` fastest); a cube a row and `MODES_PER_CUBE` modes.
#[cube(launch_unchecked)]
fn row_sums_kernel<F: Float, SB: Storage>(
    b: &Array<SB::Elem>,
    sums: &mut Array<F>,
    layout: &Array<u32>,
    #[comptime] checks: RowChecks,
) {
    let (q_len, k_len) = (layout[Q] as usize, layout[K] as usize);
    let blocks = k_len.div_ceil(MODES_PER_CUBE);
    let r = CUBE_POS / blocks;
    let (mode, slice) = unit_mode();
    let k = (CUBE_POS % blocks) * MODES_PER_CUBE + mode;
    let mut values = Array::<F>::new(B_SUMS);
    #[unroll]
    for v in 0..B_SUMS {
        values[v] = F::new(0.0);
    }
    if k < k_len {
        let base = r * layout[B_R] as usize + k * layout[B_K] as usize;
        let b_q = layout[B_Q] as usize;
        let mut q = slice;
        while q < q_len {
            let e = 2 * (base + q * b_q);
            let (re, im) = (load_value::<F, SB>(b[e]), load_value::<F, SB>(b[e + 1]));
            values[0] += re;
            values[1] += im;
            values[2] += F::abs(re) + F::abs(im);
            q += SLICES;
        }
    }
    add_slices::<F>(&mut values, B_SUMS);
    if slice == 0 && k < k_len {
        let at = r * k_len + k;
        sums[3 * at] = values[0];
        sums[3 * at + 1] = if comptime![checks.conj_b] {
            -values[1]
        } else {
            values[1]
        };
        sums[3 * at + 2] = values[2];
    }
}

/// One slice of row `p`'s sums at mode `k` (terms `first`, `first + step`, …):
/// `Σ_q C[p,q,k]` (2 floats), `Σ_r op(A[p,r,k])·β[r,k]` (2) and the
/// magnitude of its products (1).
#[cube]
#[allow(clippy::too_many_arguments)]
fn row_sums_slice<F: Float, SA: Storage, SC: Storage>(
    a: &Array<SA::Elem>,
    c: &Array<SC::Elem>,
    sums: &Array<F>,
    layout: &Array<u32>,
    p: usize,
    k: usize,
    first: usize,
    step: usize,
    values: &mut Array<F>,
    #[comptime] checks: RowChecks,
) {
    let (q_len, r_len, k_len) = (layout[Q] as usize, layout[R] as usize, layout[K] as usize);
    let c_base = p * layout[C_P] as usize + k * layout[C_K] as usize;
    let c_q = layout[C_Q] as usize;
    let mut q = first;
    while q < q_len {
        let e = 2 * (c_base + q * c_q);
        values[0] += load_value::<F, SC>(c[e]);
        values[1] += load_value::<F, SC>(c[e + 1]);
        q += step;
    }
    let a_base = p * layout[A_P] as usize + k * layout[A_K] as usize;
    let a_r = layout[A_R] as usize;
    let mut r = first;
    while r < r_len {
        let e = 2 * (a_base + r * a_r);
        let ar = load_value::<F, SA>(a[e]);
        let mut ai = load_value::<F, SA>(a[e + 1]);
        if comptime![checks.conj_a] {
            ai = -ai;
        }
        let s = 3 * (r * k_len + k);
        let (br, bi) = (sums[s], sums[s + 1]);
        values[2] += ar * br - ai * bi;
        values[3] += ar * bi + ai * br;
        values[4] += (F::abs(ar) + F::abs(ai)) * sums[s + 2];
        r += step;
    }
}

/// Whether a row's totals (`row_sums_slice` over all terms) disagree beyond
/// round-off, once the scale and bias of mode `k` are applied. Rows whose
/// inputs are not finite agree (their output is as non-finite as their
/// input); from finite inputs a non-finite row is faulty.
#[cube]
// Comptime switches stay outer ifs: a kernel without the feature has none of its code.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn row_faulty<F: Float>(
    values: &Array<F>,
    scale: &Array<F>,
    bias: &Array<F>,
    layout: &Array<u32>,
    bias_factor: F,
    tolerance: F,
    k: usize,
    #[comptime] checks: RowChecks,
) -> bool {
    let (mut rr, mut ri, mut magnitude) = (values[2], values[3], values[4]);
    if comptime![checks.scaled] {
        let s = scale[k % scale.len()];
        rr *= s;
        ri *= s;
        magnitude *= F::abs(s);
    }
    if comptime![checks.biased] {
        if k == layout[BIAS_MODE] as usize {
            let (mut added, mut size) = (F::new(0.0), F::new(0.0));
            for q in 0..layout[Q] as usize {
                added += bias[q];
                size += F::abs(bias[q]);
            }
            rr += bias_factor * added;
            magnitude += F::abs(bias_factor) * size;
        }
    }
    let (dr, di) = (values[0] - rr, values[1] - ri);
    let squared = dr * dr + di * di;
    let bound = tolerance * magnitude;
    is_finite::<F>(magnitude) && !(is_finite::<F>(squared) && squared <= bound * bound)
}

/// Fresh (zero) row sums.
#[cube]
fn zero_sums<F: Float>() -> Array<F> {
    let mut values = Array::<F>::new(ROW_SUMS);
    #[unroll]
    for v in 0..ROW_SUMS {
        values[v] = F::new(0.0);
    }
    values
}

/// A cube a row and `MODES_PER_CUBE` modes, each mode's sums over `SLICES`
/// units: counts rows that disagree, and lists them for repair
/// (`RowChecks::correct`) as `p · K + k`.
#[cube(launch_unchecked)]
// Only the leading slice evaluates the verdict.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn check_rows_kernel<F: Float + CubeElement, SA: Storage, SC: Storage>(
    a: &Array<SA::Elem>,
    c: &Array<SC::Elem>,
    sums: &Array<F>,
    scale: &Array<F>,
    bias: &Array<F>,
    layout: &Array<u32>,
    faults: &mut Array<Atomic<u32>>,
    bias_factor: F,
    tolerance: F,
    #[comptime] checks: RowChecks,
) {
    let k_len = layout[K] as usize;
    let blocks = k_len.div_ceil(MODES_PER_CUBE);
    let p = CUBE_POS / blocks;
    let (mode, slice) = unit_mode();
    let k = (CUBE_POS % blocks) * MODES_PER_CUBE + mode;
    let mut values = zero_sums::<F>();
    if k < k_len {
        row_sums_slice::<F, SA, SC>(a, c, sums, layout, p, k, slice, SLICES, &mut values, checks);
    }
    add_slices::<F>(&mut values, ROW_SUMS);
    if slice == 0 && k < k_len {
        if row_faulty::<F>(&values, scale, bias, layout, bias_factor, tolerance, k, checks) {
            faults[0].fetch_add(1u32);
            if comptime![checks.correct] {
                let listed = faults[3].fetch_add(1u32) as usize;
                if listed < comptime![REPAIR_CAPACITY] {
                    faults[comptime![FAULT_HEADER] + listed].store((p * k_len + k) as u32);
                }
            }
        }
    }
}

/// The bias's values (`q` of them) and the factor they are added with.
#[derive(CubeLaunch, CubeType)]
struct ScaledBias<F: Float + CubeElement> {
    values: Array<F>,
    factor: F,
}

/// One cube: computes every listed row again from A and B, counts it
/// corrected where its checksums now agree, and empties the list.
#[cube(launch_unchecked)]
// Comptime switches stay outer ifs.
#[allow(clippy::collapsible_if)]
fn repair_rows_kernel<F: Float + CubeElement, SA: Storage, SB: Storage, SC: Storage>(
    a: &Array<SA::Elem>,
    b: &Array<SB::Elem>,
    c: &mut Array<SC::Elem>,
    sums: &Array<F>,
    scale: &Array<F>,
    bias: &ScaledBias<F>,
    layout: &Array<u32>,
    faults: &mut Array<Atomic<u32>>,
    tolerance: F,
    #[comptime] checks: RowChecks,
) {
    let bias_factor = bias.factor;
    let bias = &bias.values;
    let (q_len, r_len, k_len) = (layout[Q] as usize, layout[R] as usize, layout[K] as usize);
    let mut listed = faults[3].load() as usize;
    if listed > comptime![REPAIR_CAPACITY] {
        listed = comptime![REPAIR_CAPACITY];
    }
    for i in 0..listed {
        let entry = faults[comptime![FAULT_HEADER] + i].load() as usize;
        let (p, k) = (entry / k_len, entry % k_len);
        let a_base = p * layout[A_P] as usize + k * layout[A_K] as usize;
        let b_base = k * layout[B_K] as usize;
        let mut q = UNIT_POS as usize;
        while q < q_len {
            let (mut re, mut im) = (F::new(0.0), F::new(0.0));
            for r in 0..r_len {
                let ea = 2 * (a_base + r * layout[A_R] as usize);
                let eb = 2 * (b_base + r * layout[B_R] as usize + q * layout[B_Q] as usize);
                let ar = load_value::<F, SA>(a[ea]);
                let mut ai = load_value::<F, SA>(a[ea + 1]);
                let br = load_value::<F, SB>(b[eb]);
                let mut bi = load_value::<F, SB>(b[eb + 1]);
                if comptime![checks.conj_a] {
                    ai = -ai;
                }
                if comptime![checks.conj_b] {
                    bi = -bi;
                }
                re += ar * br - ai * bi;
                im += ar * bi + ai * br;
            }
            if comptime![checks.scaled] {
                let s = scale[k % scale.len()];
                re *= s;
                im *= s;
            }
            if comptime![checks.biased] {
                if k == layout[BIAS_MODE] as usize {
                    re += bias_factor * bias[q];
                }
            }
            let e = 2 * (p * layout[C_P] as usize + q * layout[C_Q] as usize + k * layout[C_K] as usize);
            c[e] = store_value::<F, SC>(re);
            c[e + 1] = store_value::<F, SC>(im);
            q += CUBE_DIM as usize;
        }
        sync_cube();
        if UNIT_POS == 0 {
            let mut values = zero_sums::<F>();
            row_sums_slice::<F, SA, SC>(a, c, sums, layout, p, k, 0, 1, &mut values, checks);
            if !row_faulty::<F>(&values, scale, bias, layout, bias_factor, tolerance, k, checks) {
                faults[1].fetch_add(1u32);
            }
        }
    }
    sync_cube();
    if UNIT_POS == 0 {
        faults[3].store(0u32);
    }
}

/// Flips bit `bit` of 32-bit value `at` of `c` and counts the injection.
#[cube(launch_unchecked)]
fn flip_kernel(c: &mut Array<u32>, faults: &mut Array<Atomic<u32>>, at: usize, bit: u32) {
    if UNIT_POS == 0 {
        c[at] ^= 1u32 << bit;
        faults[2].fetch_add(1u32);
    }
}

/// One check of a product in place: its buffers and what the kernels bind.
struct CheckLaunch<'a, R: Runtime> {
    problem: &'a CgemmProblem,
    a: &'a Handle,
    b: &'a Handle,
    c: &'a Handle,
    bias: Option<&'a Handle>,
    record: &'a FaultRecord,
    checks: RowChecks,
    tolerance: f32,
    _runtime: std::marker::PhantomData<R>,
}

impl CgemmProblem {
    /// Checks `c`, this problem's product of `a` and `b` (with `bias` where
    /// the problem has one) as [`launch`](Self::launch) wrote it, by row
    /// checksums: rows that disagree beyond round-off are counted in
    /// `record` and, under [`FaultTolerance::Correct`], computed again.
    /// Nothing is read back to the host. Complex problems only.
    #[allow(clippy::too_many_arguments)]
    pub fn check<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        a: &Handle,
        b: &Handle,
        c: &Handle,
        bias: Option<&Handle>,
        tolerance: FaultTolerance,
        record: &FaultRecord,
    ) {
        assert!(self.complex, "row checksums check complex problems");
        assert_eq!(
            bias.is_some(),
            self.bias.is_some(),
            "a biased problem checks with its bias values"
        );
        if tolerance == FaultTolerance::Off || self.p * self.q * self.k == 0 {
            return;
        }
        let rounding = |precision: Precision| match precision.stored_on(client) {
            Stored::F16 => 2f64.powi(-11),
            Stored::BF16 | Stored::BF16InF32 => 2f64.powi(-8),
            Stored::F32 => 0.0,
        };
        let u = 2f64.powi(-24);
        let terms = (self.r + self.q + 2) as f64;
        let per_magnitude = CGEMM_TOLERANCE_FACTOR * u * terms.sqrt() + 2.0 * rounding(self.precisions.c);
        let job = CheckLaunch::<R> {
            problem: self,
            a,
            b,
            c,
            bias,
            record,
            checks: RowChecks {
                conj_a: self.conj_a,
                conj_b: self.conj_b,
                scaled: self.is_scaled(),
                biased: self.bias.is_some(),
                correct: tolerance == FaultTolerance::Correct,
            },
            tolerance: per_magnitude as f32,
            _runtime: std::marker::PhantomData,
        };
        let stored = [self.precisions.a, self.precisions.b, self.precisions.c].map(|p| p.stored_on(client));
        with_operand_storage(client, stored, job);
    }

    /// Flips bit `bit` of the real (`imaginary: false`) or imaginary part of
    /// complex element `element` of `c` (f32 only) and counts the injection
    /// in `record`: the output fault a test or campaign gives [`Self::check`].
    #[allow(clippy::too_many_arguments)]
    pub fn inject_output_fault<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        c: &Handle,
        element: usize,
        imaginary: bool,
        bit: u32,
        record: &FaultRecord,
    ) -> Result<(), String> {
        let (_, _, ec) = self.extents();
        if self.precisions.c.stored_on(client) != Stored::F32 {
            return Err("output faults are injected into f32 outputs".into());
        }
        if element >= ec || bit > 31 {
            return Err(format!("bit {bit} of element {element} of an output of {ec} f32 pairs"));
        }
        // SAFETY: `at` lies inside the output's 2·ec floats, checked above.
        unsafe {
            flip_kernel::launch_unchecked::<R>(
                client,
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(1),
                ArrayArg::from_raw_parts(c.clone(), 2 * ec),
                record.arg(),
                2 * element + imaginary as usize,
                bit,
            );
        }
        Ok(())
    }
}

impl<R: Runtime> OperandJob<R> for CheckLaunch<'_, R> {
    fn launch<SA: Storage, SB: Storage, SC: Storage>(self, client: &ComputeClient<R>) {
        let pb = self.problem;
        let (ea, eb, ec) = pb.extents();
        let bias_mode = pb.bias.map_or(0, |b| b.mode);
        let layout: [u32; LAYOUT] = [
            pb.p, pb.q, pb.r, pb.k, pb.a.row, pb.a.col, pb.a.mode, pb.b.row, pb.b.col, pb.b.mode, pb.c.row, pb.c.col,
            pb.c.mode, bias_mode,
        ]
        .map(|x| x as u32);
        let layout = client.create_from_slice(u32::as_bytes(&layout));
        let sums = client.empty(3 * pb.r * pb.k * 4);
        let bias_factor = pb.bias.map_or(0.0, |b| b.factor);
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len.max(1)) };
        // Unscaled and unbiased checks bind the layout in those slots (never read).
        let scale = match self.checks.scaled {
            true => (
                client.create_from_slice(f32::as_bytes(&pb.mode_scale)),
                pb.mode_scale.len(),
            ),
            false => (layout.clone(), 1),
        };
        let bias = match self.bias {
            Some(h) => (h.clone(), pb.q),
            None => (layout.clone(), 1),
        };
        let threads = CubeDim::new_1d(THREADS as u32);
        // SAFETY: launched without bounds checks: every index the kernels form
        // stays inside the operands' extents (`span` of the problem's
        // strides), the sums' `3·r·k` floats and the record's length.
        unsafe {
            row_sums_kernel::launch_unchecked::<f32, SB, R>(
                client,
                cube_count(pb.r * pb.k.div_ceil(MODES_PER_CUBE)),
                threads,
                arr(self.b, 2 * eb),
                arr(&sums, 3 * pb.r * pb.k),
                arr(&layout, LAYOUT),
                self.checks,
            );
            check_rows_kernel::launch_unchecked::<f32, SA, SC, R>(
                client,
                cube_count(pb.p * pb.k.div_ceil(MODES_PER_CUBE)),
                threads,
                arr(self.a, 2 * ea),
                arr(self.c, 2 * ec),
                arr(&sums, 3 * pb.r * pb.k),
                arr(&scale.0, scale.1),
                arr(&bias.0, bias.1),
                arr(&layout, LAYOUT),
                self.record.arg(),
                bias_factor,
                self.tolerance,
                self.checks,
            );
            if self.checks.correct {
                repair_rows_kernel::launch_unchecked::<f32, SA, SB, SC, R>(
                    client,
                    CubeCount::Static(1, 1, 1),
                    threads,
                    arr(self.a, 2 * ea),
                    arr(self.b, 2 * eb),
                    arr(self.c, 2 * ec),
                    arr(&sums, 3 * pb.r * pb.k),
                    arr(&scale.0, scale.1),
                    ScaledBiasLaunch::new(arr(&bias.0, bias.1), bias_factor),
                    arr(&layout, LAYOUT),
                    self.record.arg(),
                    self.tolerance,
                    self.checks,
                );
            }
        }
    }
}

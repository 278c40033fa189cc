//! The last two axes in one launch (the plane kernel, `super::super::plane`)
//! where their intermediate image fits a cube's shared memory.

use super::super::algorithm::direct_dft::DftShape;
use super::super::banks::{shared_layout, Lanes};
use super::super::factor::{gcd, has_radix_plan};
use super::super::options::PlaneFusion;
use super::super::plan::AxisStep;
use super::super::plane::PlaneConfig;
use super::super::stage::{tile_slots, InputForm, OutputForm, StageConfig};
use super::tables::twiddle_table;
use super::{Buf, Kernel, Lowering, Transform};

/// Threads a plane cube aims for.
const PLANE_THREADS: usize = 512;

/// Fewest threads of a plane cube the planner takes on its own
/// ([`PlaneFusion::Auto`]) where the image leaves room for no more: thinner
/// plane cubes ran slower than two launches
/// (benches/results/2026-11-26_plane_rules_h100.md).
pub const MIN_PLANE_THREADS: usize = 128;

/// Shared memory a plane cube may take: its image and work tile; two such
/// cubes fit on an H100 SM. On backends with less the limit is theirs.
pub(super) const PLANE_SHARED_LIMIT: usize = 112 * 1024;

impl Lowering {
    /// The plane launch for steps `first` then `second` over an array of
    /// `shape`, when they transform its last two dimensions as single-cube FFTs
    /// (lengths with a radix plan, no direct DFT) whose intermediate image fits shared
    /// memory beside the work tile.
    pub(super) fn plane_config(&self, first: &AxisStep, second: &AxisStep, shape: &[usize]) -> Option<PlaneConfig> {
        let rank = shape.len();
        let among_last_two = |axis: usize| axis + 2 >= rank;
        if self.options.plane == PlaneFusion::Never
            || rank < 2
            || !among_last_two(first.axis)
            || !among_last_two(second.axis)
        {
            return None;
        }
        let rows_first = first.axis == rank - 1;
        let (t1, t2) = (Transform::of(first), Transform::of(second));
        let fft_only = |step: &AxisStep, t: &Transform| {
            t.n >= 2 && has_radix_plan(t.n) && !self.prefers_direct(step, &DftShape::of(step))
        };
        let image_forms = matches!(t1.output, OutputForm::Complex | OutputForm::Untangled)
            && matches!(t2.input, InputForm::Complex | InputForm::HermitianPacked);
        if !fft_only(first, &t1) || !fft_only(second, &t2) || !image_forms {
            return None;
        }
        // Index of an axis among the last two dimensions.
        let dim = |axis: usize| axis + 2 - rank;
        let input = [shape[rank - 2], shape[rank - 1]];
        let mut image = input;
        image[dim(first.axis)] = first.out_len;
        let mut output = image;
        output[dim(second.axis)] = second.out_len;
        let floats = |dims: [usize; 2], complex: bool| dims[0] * dims[1] * if complex { 2 } else { 1 };
        let real_input = t1.input.is_real();
        let intermediate_largest = floats(image, true) >= floats(input, !real_input)
            && floats(image, true) >= floats(output, !t2.output.is_real());
        let auto = self.options.plane == PlaneFusion::Auto;
        // The plane widens real rows, where separate launches of odd smooth
        // lengths pair them two to a complex transform ([`Self::twinned`]).
        let pairs_twins = |t: &Transform| self.twinned(t, None, 2).input != t.input;
        if auto && (!intermediate_largest || pairs_twins(&t1) || pairs_twins(&t2)) {
            return None;
        }
        let stage = |step: &AxisStep, t: &Transform, rows: bool, threads: usize| {
            let mut cfg = self.single_stage_config(t.n, None, (t.input, t.output), !rows, 1, 0);
            cfg.signals_per_cube = threads / cfg.threads_per_signal;
            cfg.inverse = t.inverse;
            cfg.load = step.load;
            cfg.store = step.store;
            cfg.scale_bits = (step.scale as f32).to_bits();
            cfg
        };
        // Both stages run on every thread of the cube: a common multiple of
        // their threads per signal, no more than the stages' signals can use.
        let (a, b) = (self.threads_for(t1.n), self.threads_for(t2.n));
        let step = a / gcd(a, b) * b;
        let busy = (a * PlaneConfig::signals(rows_first, input)).max(b * PlaneConfig::signals(!rows_first, image));
        let most = PLANE_THREADS
            .min(busy.next_multiple_of(step))
            .max(step)
            .min(self.max_threads);
        // Both stages keep their threads per signal: the cube's threads are a
        // multiple of each.
        let lay_out = |cfg: StageConfig, t: &Transform, threads: usize| {
            if self.shared_bound(t, None) {
                shared_layout(&cfg, tile_slots(t.n, t.input, None), Lanes::Own, |c| {
                    threads / c.threads_per_signal
                })
            } else {
                cfg
            }
        };
        let fewest = if auto { MIN_PLANE_THREADS.min(most) } else { step };
        (1..=most / step)
            .rev()
            .map(|k| k * step)
            .take_while(|&threads| threads >= fewest)
            .find_map(|threads| {
                let mut first_stage = stage(first, &t1, rows_first, threads);
                first_stage.store_shared = true;
                let mut second_stage = stage(second, &t2, !rows_first, threads);
                second_stage.load_shared = true;
                let plain = PlaneConfig {
                    first: first_stage.clone(),
                    second: second_stage.clone(),
                    rows_first,
                    input,
                    image,
                    output,
                };
                let modelled = PlaneConfig {
                    first: lay_out(first_stage, &t1, threads),
                    second: lay_out(second_stage, &t2, threads),
                    ..plain.clone()
                };
                // Tiles the modelled layout widens past the shared memory fall
                // back to the plain layout rather than cost the cube threads.
                [modelled, plain]
                    .into_iter()
                    .find(|cfg| cfg.shared_bytes() <= self.plane_shared_limit)
            })
    }

    pub(super) fn push_plane(&mut self, cfg: PlaneConfig, images: usize, src: (Buf, usize), dst: (Buf, usize)) {
        let table = |stage: &StageConfig| {
            let len = stage.pass_len() * stage.twiddle_table_step();
            twiddle_table(len, len)
        };
        let twiddles = [table(&cfg.first), table(&cfg.second)];
        self.push(Kernel::Plane { cfg, images, twiddles }, src, dst);
    }
}

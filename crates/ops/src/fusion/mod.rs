//! Our ops on Burn's fusion backend (`Fusion<B>`, what `burn::backend::Wgpu`
//! and `burn::backend::Cuda` are): each op is registered on the fusion stream
//! as one custom operation (`OperationIr::Custom`) that runs the inner
//! backend's kernel path when Burn's fusion client executes the stream, on its
//! own thread and later. Burn fusion merges the element-wise ops around them.
//!
//! Everything that can fail is checked at registration, and every output's
//! shape and dtype is fixed there: an error inside the deferred execution
//! could only panic.

mod loss;
mod matmul;
mod mode_mix;
mod nonuniform;
mod pointwise;
mod spectral;

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_fusion::stream::{Operation, OperationStreams};
use burn_fusion::{FusionBackend, FusionRuntime, FusionTensor};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};

/// What one custom op computes on the inner backend `B`: its inputs (in the
/// order registered) to its outputs.
type Run<B> = dyn Fn(Vec<FloatTensor<B>>) -> Vec<FloatTensor<B>> + Send + Sync;

/// A registered op: its inputs and outputs as the stream knows them, and what it runs.
struct CustomOp<B: FusionBackend> {
    desc: CustomOpIr,
    run: Arc<Run<B>>,
}

impl<B: FusionBackend> std::fmt::Debug for CustomOp<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fno custom op {}", self.desc.id)
    }
}

impl<B: FusionBackend> Operation<B::FusionRuntime> for CustomOp<B> {
    fn execute(&self, handles: &mut HandleContainer<<B::FusionRuntime as FusionRuntime>::FusionHandle>) {
        let inputs = self
            .desc
            .inputs
            .iter()
            .map(|t| handles.get_float_tensor::<B>(t))
            .collect();
        let outputs = (self.run)(inputs);
        assert_eq!(
            outputs.len(),
            self.desc.outputs.len(),
            "{}: outputs registered and returned differ",
            self.desc.id
        );
        for (ir, t) in self.desc.outputs.iter().zip(outputs) {
            // Registered from the same rules the inner backend follows.
            assert!(
                t.shape() == ir.shape && t.dtype() == ir.dtype,
                "{}: registered {:?} {:?}, computed {:?} {:?}",
                self.desc.id,
                ir.shape,
                ir.dtype,
                t.shape(),
                t.dtype()
            );
            handles.register_float_tensor::<B>(&ir.id, t);
        }
    }
}

thread_local! {
    static REGISTERED: Cell<u64> = const { Cell::new(0) };
}

/// How many of our ops the calling thread has registered on Burn's fusion
/// streams, each one custom op (Burn's own ops not counted): which of a
/// step's launches are ours.
pub fn custom_ops_registered() -> u64 {
    REGISTERED.with(Cell::get)
}

/// Registers `run` on the fusion stream of `inputs` (at least one) as the op
/// `name`, whose outputs have the shapes and dtypes of `outputs`; returns them.
pub(crate) fn register<B: FusionBackend>(
    name: &'static str,
    inputs: Vec<FusionTensor<B::FusionRuntime>>,
    outputs: Vec<(Vec<usize>, DType)>,
    run: impl Fn(Vec<FloatTensor<B>>) -> Vec<FloatTensor<B>> + Send + Sync + 'static,
) -> Vec<FusionTensor<B::FusionRuntime>> {
    let client = inputs.first().expect("a custom op has inputs").client.clone();
    let streams = OperationStreams::with_inputs(&inputs);
    let outputs: Vec<TensorIr> = outputs
        .into_iter()
        .map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), Shape::from(shape), dtype))
        .collect();
    let inputs: Vec<TensorIr> = inputs.into_iter().map(FusionTensor::into_ir).collect();
    let desc = CustomOpIr::new(name, &inputs, &outputs);
    REGISTERED.with(|n| n.set(n.get() + 1));
    let op = CustomOp::<B> {
        desc: desc.clone(),
        run: Arc::new(run),
    };
    client.register(streams, OperationIr::Custom(desc), op)
}

/// [`register`] for an op with one output.
pub(crate) fn register_one<B: FusionBackend>(
    name: &'static str,
    inputs: Vec<FusionTensor<B::FusionRuntime>>,
    output: (Vec<usize>, DType),
    run: impl Fn(Vec<FloatTensor<B>>) -> FloatTensor<B> + Send + Sync + 'static,
) -> FusionTensor<B::FusionRuntime> {
    let mut out = register::<B>(name, inputs, vec![output], move |inputs| vec![run(inputs)]);
    out.pop().expect("one output registered")
}

/// Who runs the element-wise ops (GELU and its derivative, the channel scale,
/// AdamW) on `Fusion`: our kernels, each one opaque launch (the default: fewer
/// launches and faster steps, benches/RESULTS.md), or Burn's tensor ops, which
/// Burn fusion may merge with their neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ElementWise {
    #[default]
    Kernels,
    BurnFusion,
}

static ELEMENT_WISE: AtomicU8 = AtomicU8::new(0);

/// Sets who runs the element-wise ops on `Fusion` from now on (for
/// measuring one against the other; both compute the same values).
pub fn set_element_wise(choice: ElementWise) {
    ELEMENT_WISE.store(choice as u8, Ordering::Relaxed);
}

/// The choice [`set_element_wise`] last made.
pub fn element_wise() -> ElementWise {
    match ELEMENT_WISE.load(Ordering::Relaxed) {
        0 => ElementWise::Kernels,
        _ => ElementWise::BurnFusion,
    }
}

/// Shape and dtype of a fusion tensor, as outputs are registered.
pub(crate) fn meta<R: FusionRuntime>(t: &FusionTensor<R>) -> (Vec<usize>, DType) {
    (t.shape.to_vec(), t.dtype)
}

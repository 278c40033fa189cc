//! Burn's Dataset and Batcher over our datasets: items in order from memory
//! and from a file read on demand, batches stacked `[B, C, points]` and encoded
//! by the normalizers, reshaped back to the grid.

use burn::backend::NdArray;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use fno_datasets::batch::{PdeBatch, PdeBatcher, PdeItem};
use fno_datasets::normalize::{Encoding, UnitGaussianNormalizer};
use fno_datasets::safetensors_file::SafetensorsSamples;
use fno_datasets::{save, Array, PdeDataset};

fn dataset() -> PdeDataset {
    let x = Array::new(vec![4, 1, 3, 2], (0..24).map(|v| v as f32).collect()).unwrap();
    let y = Array::new(vec![4, 2, 3, 2], (0..48).map(|v| (v as f32).sqrt()).collect()).unwrap();
    PdeDataset::new(x, y).unwrap()
}

#[test]
fn datasets_yield_samples_in_memory_and_from_files() {
    let d = dataset();
    let path = std::env::temp_dir().join(format!("fno_batch_{}.safetensors", std::process::id()));
    save(&path, &d).unwrap();
    let file = SafetensorsSamples::open(&path).unwrap();
    assert_eq!((Dataset::len(&d), Dataset::len(&file)), (4, 4));
    for i in 0..4 {
        let item: PdeItem = Dataset::get(&d, i).unwrap();
        assert_eq!(Dataset::get(&file, i).unwrap(), item);
        assert_eq!((item.input.as_slice(), item.output.as_slice()), d.sample(i));
    }
    assert!(Dataset::<PdeItem>::get(&d, 4).is_none() && Dataset::<PdeItem>::get(&file, 4).is_none());
}

#[test]
fn batches_stack_and_normalize() {
    let d = dataset();
    let (nx, ny) = (
        UnitGaussianNormalizer::fit(&d.inputs, Encoding::ChannelWise).unwrap(),
        UnitGaussianNormalizer::fit(&d.outputs, Encoding::PixelWise).unwrap(),
    );
    let batcher = PdeBatcher::new(&d).normalized(Some(nx.clone()), Some(ny.clone()));
    let items = vec![Dataset::get(&d, 3).unwrap(), Dataset::get(&d, 1).unwrap()];
    let batch: PdeBatch<NdArray> = batcher.batch(items, &Default::default());
    assert_eq!(batch.inputs.dims(), [2, 1, 6]);
    let want = |a: &Array, n: &UnitGaussianNormalizer| {
        let mut s = a.select(3..4, 1).unwrap();
        let t = a.select(1..2, 1).unwrap();
        s.shape[0] = 2;
        s.data.extend(t.data);
        n.encode(&mut s).unwrap();
        s.data
    };
    let got = |t: burn::tensor::Tensor<NdArray, 3>| t.into_data().to_vec::<f32>().unwrap();
    assert_eq!(got(batch.inputs.clone()), want(&d.inputs, &nx));
    assert_eq!(got(batch.outputs.clone()), want(&d.outputs, &ny));
    assert_eq!(batch.unflatten::<4>(batch.outputs.clone()).dims(), [2, 2, 3, 2]);
}

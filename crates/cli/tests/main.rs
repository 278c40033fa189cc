//! The integration tests of this crate, one module per file, built as one test
//! binary: one compile and link instead of one per file keeps the CI build short.

mod args_fuzz;
mod data_cli;
mod fft_cli;
mod infer_cli;
mod nufft_cli;
mod numbers_cli;
mod output_cli;
mod readme;
mod train_cli;

/// An `.npy` file of dtype `descr` (as `<f8`, `<i8`), shape `shape` and
/// little-endian `data`, written byte by byte as numpy does: for dtypes our
/// writer does not produce.
pub fn write_raw_npy(path: &std::path::Path, descr: &str, shape: &[usize], data: &[u8]) {
    let dims: String = shape.iter().map(|d| format!("{d}, ")).collect();
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}",
        dims.trim_end()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

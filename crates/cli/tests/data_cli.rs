//! `fno data` end to end: `info` on neuraloperator's Darcy file (keys, dtypes,
//! shapes, ranges) and on a file it cannot read (one error line naming it,
//! exit code 2).

use std::process::Command;

fn fno(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno")).args(args).output().unwrap()
}

#[test]
fn info_lists_keys_dtypes_shapes_and_ranges() {
    let pt = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/neuralop/darcy_test_16.pt");
    let out = fno(&["data", "info", pt.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no line for {key} in:\n{text}"))
            .to_string()
    };
    let x = line("x ");
    assert!(
        x.contains("bool") && x.contains("[50, 16, 16]") && x.contains("min 0") && x.contains("max 1"),
        "{x}"
    );
    assert!(line("y ").contains("float32"), "{text}");
}

#[test]
fn unreadable_files_are_one_line_errors() {
    let path = std::env::temp_dir().join(format!("fno-data-info-{}.npz", std::process::id()));
    std::fs::write(&path, b"not a zip").unwrap();
    let out = fno(&["data", "info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("error: ") && err.contains(path.to_str().unwrap()),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}

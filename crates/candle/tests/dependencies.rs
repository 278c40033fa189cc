//! Candle users build no Burn: what fno-candle shares with the Burn crates
//! comes from fno-core, and its default features reach no `burn` crate.

use std::process::Command;

#[test]
fn the_default_features_build_no_burn_crate() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "fno-candle", "-e", "normal", "--prefix", "none"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.lines().any(|l| l.starts_with("fno-core ")), "{text}");
    let burn: Vec<&str> = text.lines().filter(|l| l.starts_with("burn")).collect();
    assert!(burn.is_empty(), "fno-candle builds {burn:?}");
}

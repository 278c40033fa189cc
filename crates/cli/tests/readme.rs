//! The README's Rust example is `examples/burn_user.rs`, which `cargo test`
//! compiles: the two must not drift apart.

#[test]
fn the_readme_shows_the_compiled_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/burn_user.rs")).unwrap();
    let shown = readme
        .split_once("<!-- example: examples/burn_user.rs -->\n```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(code, _)| code)
        .expect("the README has the example's code block");
    assert_eq!(shown, example, "README.md's example differs from examples/burn_user.rs");
}

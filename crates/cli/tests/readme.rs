//! The README's Rust examples are files under `examples/`, which `cargo test`
//! compiles: each code block marked `<!-- example: PATH -->` must equal its
//! file.

#[test]
fn the_readme_shows_the_compiled_examples() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let marker = "<!-- example: ";
    let blocks: Vec<(&str, &str)> = readme
        .split(marker)
        .skip(1)
        .map(|rest| {
            let (path, rest) = rest
                .split_once(" -->\n```rust\n")
                .expect("a marker precedes a rust block");
            let (code, _) = rest.split_once("```\n").expect("the block ends");
            (path, code)
        })
        .collect();
    let paths: Vec<&str> = blocks.iter().map(|(p, _)| *p).collect();
    assert_eq!(paths, ["examples/burn_user.rs", "examples/candle_user.rs"]);
    for (path, shown) in blocks {
        let example = std::fs::read_to_string(root.join(path)).unwrap();
        assert_eq!(shown, example, "README.md's example differs from {path}");
    }
}

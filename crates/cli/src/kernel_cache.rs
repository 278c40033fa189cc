//! Compiled kernels kept between runs: CubeCL's PTX cache (CUDA) under a
//! directory of ours, so that a second `fno train` of the same shapes loads
//! its kernels instead of compiling every one through NVRTC again. Autotune
//! results persist through CubeCL's own default cache.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cubecl::config::cache::CacheConfig;
use cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};

/// Files through which a user configures CubeCL; where one applies, its
/// settings stand and we change nothing.
const CUBECL_FILES: [&str; 4] = ["cubecl.toml", "CubeCL.toml", "burn.toml", "Burn.toml"];

/// The cache directory from `FNO_KERNEL_CACHE` (a path, or `off`), else
/// `$XDG_CACHE_HOME/fno/kernels`, else `$HOME/.cache/fno/kernels`; `None`
/// when switched off or no home is known.
pub fn directory(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(dir) = set("FNO_KERNEL_CACHE") {
        return (dir != "off").then(|| PathBuf::from(dir));
    }
    let base = set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| Path::new(&home).join(".cache")))?;
    Some(base.join("fno").join("kernels"))
}

fn user_config_applies() -> bool {
    let Ok(cwd) = std::env::current_dir() else {
        return false;
    };
    cwd.ancestors()
        .any(|dir| CUBECL_FILES.iter().any(|name| dir.join(name).is_file()))
}

/// Points CubeCL's compilation cache at [`directory`], unless a CubeCL
/// configuration file applies. Call before any device work.
pub fn install() {
    if user_config_applies() {
        return;
    }
    let Some(dir) = directory(|name| std::env::var_os(name)) else {
        return;
    };
    let mut config = CubeClRuntimeConfig::default().override_from_env();
    config.compilation.cache = Some(CacheConfig::File(dir));
    CubeClRuntimeConfig::set(config);
}

#[cfg(test)]
mod tests {
    use super::directory;
    use std::ffi::OsString;
    use std::path::PathBuf;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn the_directory_follows_the_environment() {
        let home = [("HOME", "/home/u")];
        assert_eq!(directory(env(&home)), Some(PathBuf::from("/home/u/.cache/fno/kernels")));
        let xdg = [("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")];
        assert_eq!(directory(env(&xdg)), Some(PathBuf::from("/c/fno/kernels")));
        let chosen = [("HOME", "/home/u"), ("FNO_KERNEL_CACHE", "/k")];
        assert_eq!(directory(env(&chosen)), Some(PathBuf::from("/k")));
        assert_eq!(
            directory(env(&[("HOME", "/home/u"), ("FNO_KERNEL_CACHE", "off")])),
            None
        );
        assert_eq!(directory(env(&[])), None);
    }
}

//! What a command will hold in memory, checked against what the machine has
//! before it allocates: a size from a flag becomes a one-line error ("needs
//! 412.3 GB on the CPU, 15.2 GB free") instead of an abort gigabytes later.

/// Bytes the system says it can still hand out (`MemAvailable`), less where
/// the process's address space is capped (`ulimit -v`), where it says.
fn free_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    let available = kib.checked_mul(1024)?;
    Some(address_space_cap().map_or(available, |cap| cap.min(available)))
}

/// The soft cap on the process's address space, in bytes, where there is one.
fn address_space_cap() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn gb(bytes: u128) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// An error naming `what` when `bytes` (`None`: past any count) exceeds what
/// the CPU has free; nothing where the system does not say.
pub fn check_fits(what: &str, bytes: Option<u128>) -> Result<(), String> {
    let free = free_bytes();
    match (bytes, free) {
        (None, _) => Err(format!(
            "{what} needs more memory than any machine has (its size overflows)"
        )),
        (Some(need), Some(free)) if need > free as u128 => Err(format!(
            "{what} needs {} on the CPU, {} free",
            gb(need),
            gb(free as u128)
        )),
        _ => Ok(()),
    }
}

/// Bytes of an FNO's activations for `batch` samples of `points` grid
/// points, in f32: about six tensors of the widest layer (lifting, hidden,
/// projection) alive at once in a forward, and where a backward keeps every
/// block's activations (`training`) about eight of the hidden width a block.
pub fn activation_bytes(cfg: &fno_models::FnoConfig, batch: usize, points: usize, training: bool) -> Option<u128> {
    let widest = cfg.widest_channels() as u128;
    let kept = if training {
        cfg.n_layers as u128 * 8 * cfg.hidden_channels as u128
    } else {
        0
    };
    product([batch as u128, points as u128, 4, 6 * widest + kept])
}

/// Bytes of the widest f32 activation of `batch` samples of `points` grid
/// points (what the GPU's balanced pools size their pages by).
pub fn widest_activation_bytes(cfg: &fno_models::FnoConfig, batch: usize, points: usize) -> Option<u64> {
    product([batch as u128, points as u128, 4, cfg.widest_channels() as u128]).and_then(|b| u64::try_from(b).ok())
}

/// `Π factors` in u128, `None` on overflow.
pub fn product(factors: impl IntoIterator<Item = u128>) -> Option<u128> {
    factors.into_iter().try_fold(1u128, |acc, f| acc.checked_mul(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_the_machine_are_named_and_small_ones_pass() {
        assert!(check_fits("a thing", Some(1 << 20)).is_ok());
        let e = check_fits("fno demo --size 1073741824", product([32, 1 << 30, 1 << 30, 20])).unwrap_err();
        assert!(
            e.contains("--size") && e.contains("GB on the CPU") && e.contains("free"),
            "{e}"
        );
        let e = check_fits("x", product([u128::MAX, 2])).unwrap_err();
        assert!(e.contains("overflows"), "{e}");
    }

    #[test]
    fn activations_count_the_widest_layer_and_the_kept_blocks() {
        let cfg = fno_models::FnoConfig::new(&[8, 8], 1, 1, 16);
        let widest = (16.0 * cfg.lifting_channel_ratio.max(cfg.projection_channel_ratio)).max(16.0) as u128;
        let forward = 2 * 100 * 4 * 6 * widest;
        assert_eq!(activation_bytes(&cfg, 2, 100, false), Some(forward));
        let kept = 2 * 100 * 4 * cfg.n_layers as u128 * 8 * 16;
        assert_eq!(activation_bytes(&cfg, 2, 100, true), Some(forward + kept));
        assert_eq!(activation_bytes(&cfg, usize::MAX, usize::MAX, true), None);
    }
}

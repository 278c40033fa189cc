//! Bounds on what reading an untrusted file may allocate.

use std::io::Read;

/// An empty vector with room for `count` values, or a one-line reason where
/// the allocator cannot give it (a file larger than memory), instead of an
/// abort: for buffers whose size comes from a file.
pub fn buffer<T>(count: usize) -> Result<Vec<T>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(count).map_err(|_| {
        let gb = count as f64 * std::mem::size_of::<T>() as f64 / 1e9;
        format!("{count} values ({gb:.1} GB) do not fit in memory")
    })?;
    Ok(v)
}

/// How many bytes reading a file may allocate for what it decompresses (zip
/// entries, the compressed elements of `.mat` files) and, for `.pt` views that
/// repeat storage elements, what it expands to: `EXPANSION` times its size, at
/// least `EXPANSION_FLOOR`; declared sizes are never trusted. Real data stays
/// below (float fields deflate about 1:1, a piecewise-constant float64
/// coefficient field about 300:1) and a zip bomb's entries above (deflate
/// reaches 1032:1 on zeros); a bomb of overlapping entries, far above.
pub struct Budget {
    left: u64,
    limit: u64,
}

const EXPANSION: u64 = 512;
const EXPANSION_FLOOR: u64 = 64 << 20;

impl Budget {
    pub fn for_file(len: u64) -> Self {
        let limit = len.saturating_mul(EXPANSION).max(EXPANSION_FLOOR);
        Budget { left: limit, limit }
    }

    /// Takes `bytes` from what is left.
    pub fn spend(&mut self, bytes: u64) -> Result<(), String> {
        self.left = self.left.checked_sub(bytes).ok_or_else(|| {
            format!(
                "expands to over {} bytes, the most a file of this size may ({EXPANSION} times its size, at least {} MiB)",
                self.limit,
                EXPANSION_FLOOR >> 20
            )
        })?;
        Ok(())
    }

    /// Everything `r` yields, reading no more than what is left (plus one byte
    /// to tell a reader that goes on).
    pub fn read_all(&mut self, r: impl Read) -> Result<Vec<u8>, String> {
        let mut bytes = Vec::new();
        r.take(self.left.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        self.spend(bytes.len() as u64)?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn buffers_past_memory_are_errors_not_aborts() {
        let e = super::buffer::<f32>(usize::MAX / 8).unwrap_err();
        assert!(e.ends_with("GB) do not fit in memory"), "{e}");
        assert!(super::buffer::<f32>(10).unwrap().capacity() >= 10);
    }
}

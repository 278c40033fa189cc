//! Compile-time configuration of the kernel: the cube's block shape and thread
//! tiles ([`CgemmConfig`]) and how it stages its operands ([`Staging`]).

/// Compile-time shape of the cube's block and the thread tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CgemmConfig {
    /// Register tile of one thread: `tile_p × tile_q` outputs of one mode.
    pub tile_p: usize,
    pub tile_q: usize,
    /// Threads along p and q; the block is `tile_p·threads_p × tile_q·threads_q`.
    pub threads_p: usize,
    pub threads_q: usize,
    /// Consecutive modes per cube, one per thread of a tile position.
    pub modes: usize,
    /// Terms of `r` staged in shared memory at a time.
    pub chunk: usize,
    /// Cubes sharing one output block, each summing a slice of `r` (1: none).
    pub splits: usize,
    pub complex: bool,
    pub conj_a: bool,
    pub conj_b: bool,
    pub scaled: bool,
    pub biased: bool,
}

impl CgemmConfig {
    /// Shared memory the cube stages for f32 operands, in bytes.
    pub fn shared_bytes(&self) -> usize {
        self.shared_bytes_of(4, 4)
    }

    /// Shared memory the cube stages for operands of `a_bytes`- and
    /// `b_bytes`-byte values.
    pub fn shared_bytes_of(&self, a_bytes: usize, b_bytes: usize) -> usize {
        self.width() * self.chunk * (a_bytes * self.block_p() + b_bytes * self.block_q()) * self.modes
    }

    pub(super) fn block_p(&self) -> usize {
        self.tile_p * self.threads_p
    }

    pub(super) fn block_q(&self) -> usize {
        self.tile_q * self.threads_q
    }

    /// Floats per element.
    pub(super) fn width(&self) -> usize {
        if self.complex {
            2
        } else {
            1
        }
    }

    pub fn threads(&self) -> usize {
        self.modes * self.threads_p * self.threads_q
    }
}

/// How the cube stages its operands in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Staging {
    /// Complex operands bound as 8-byte pairs: one shared-memory word pair per element.
    pub pairs: bool,
    /// Asynchronous copies (CUDA's `cp.async`) into two buffers: the cube
    /// multiplies one chunk while the next is in flight, holding no registers
    /// for it. Needs `pairs`.
    pub async_copy: bool,
}

impl Staging {
    /// Shared-memory vectors one element takes: complex values bound as single
    /// floats take two.
    fn vectors_per_element(self, complex: bool) -> usize {
        if complex && !self.pairs {
            2
        } else {
            1
        }
    }

    pub(super) fn buffers(self) -> usize {
        if self.async_copy {
            2
        } else {
            1
        }
    }

    /// Shared-memory vectors one buffer of an operand with `block` rows
    /// (columns) per mode takes.
    pub(super) fn buffer_len(self, cfg: &CgemmConfig, block: usize) -> usize {
        self.vectors_per_element(cfg.complex) * cfg.chunk * block * cfg.modes
    }
}

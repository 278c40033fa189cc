//! Host output buffers filled over rayon's threads. `vec![0.0; n]` zeroes the
//! whole buffer on the calling thread before any worker starts (a pass of its
//! own, single-threaded); here each chunk is zeroed by the thread that fills
//! it, just before it does, while the chunk is in that core's cache.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// A chunk of fresh storage, set to `zero` and handed out as values.
fn zeroed<T: Copy>(chunk: &mut [MaybeUninit<T>], zero: T) -> &mut [T] {
    for v in chunk.iter_mut() {
        v.write(zero);
    }
    // SAFETY: every element was written just above, and `MaybeUninit<T>` has `T`'s layout.
    unsafe { &mut *(chunk as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// `n` values made `chunk` at a time on rayon's threads by
/// `fill(state, chunk index, chunk)`, each chunk set to `zero` first; `state`
/// is made once a thread (scratch buffers).
pub fn par_build<T, S>(
    (n, chunk): (usize, usize),
    zero: T,
    state: impl Fn() -> S + Sync + Send,
    fill: impl Fn(&mut S, usize, &mut [T]) + Sync + Send,
) -> Vec<T>
where
    T: Copy + Send + Sync,
{
    let mut out = Vec::with_capacity(n);
    out.spare_capacity_mut()[..n]
        .par_chunks_mut(chunk.max(1))
        .enumerate()
        .for_each_init(state, |s, (i, c)| fill(s, i, zeroed(c, zero)));
    // SAFETY: the chunks cover the first `n` slots, and `zeroed` initialised each.
    unsafe { out.set_len(n) };
    out
}

/// Two buffers of `n` values made together, chunk `i` of both by
/// `fill(i, first, second)` on rayon's threads, each chunk set to `zero` first.
pub fn par_build_pair<T>(
    (n, chunk): (usize, usize),
    zero: T,
    fill: impl Fn(usize, &mut [T], &mut [T]) + Sync + Send,
) -> (Vec<T>, Vec<T>)
where
    T: Copy + Send + Sync,
{
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let chunks = a.spare_capacity_mut()[..n]
        .par_chunks_mut(chunk.max(1))
        .zip(b.spare_capacity_mut()[..n].par_chunks_mut(chunk.max(1)));
    chunks
        .enumerate()
        .for_each(|(i, (a, b))| fill(i, zeroed(a, zero), zeroed(b, zero)));
    // SAFETY: both buffers' chunks cover their first `n` slots, each initialised by `zeroed`.
    unsafe {
        a.set_len(n);
        b.set_len(n);
    }
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value is the fill's (chunk, offset) code; a chunk shorter than the
    /// rest at the end; chunks start zeroed (a fill that adds sees zeros).
    #[test]
    fn chunks_cover_the_buffer_and_start_zeroed() {
        let (n, chunk) = (1003, 64);
        let code = |i: usize, j: usize| (i * chunk + j) as f64;
        let v = par_build(
            (n, chunk),
            0.0,
            || 0usize,
            |calls, i, c: &mut [f64]| {
                *calls += 1;
                c.iter_mut().enumerate().for_each(|(j, x)| *x += code(i, j));
            },
        );
        assert_eq!(v, (0..n).map(|k| k as f64).collect::<Vec<_>>());
        let (a, b) = par_build_pair((n, chunk), 0.0, |i, a: &mut [f32], b: &mut [f32]| {
            a.iter_mut().enumerate().for_each(|(j, x)| *x += code(i, j) as f32);
            b.iter_mut().for_each(|x| *x -= 1.0);
        });
        assert_eq!(a, (0..n).map(|k| k as f32).collect::<Vec<_>>());
        assert_eq!(b, vec![-1.0; n]);
        assert!(par_build((0, chunk), 0.0, || (), |_, _, _: &mut [f32]| unreachable!()).is_empty());
    }
}

//! Factoring a transform length into the radices of its Stockham passes, and
//! choosing the lengths of the algorithms built on top (four-step, Bluestein,
//! Rader).

mod primes;
mod radices;
mod threads;

pub(crate) use primes::{dft_split, gcd, prime_factors, DftSplit};
pub use primes::{four_step_split, is_smooth};
pub use radices::{
    balanced_two_passes, default_max_radix, has_radix_plan, radices, radices_within, smooth_plans, MAX_PRIME_RADIX,
};
pub use threads::{
    butterfly_split, first_pass_in_whole_rounds, largest_first_pass_last, rounds_per_thread, thread_rounds_on,
    threads_per_signal, BUTTERFLY_PAIRS,
};

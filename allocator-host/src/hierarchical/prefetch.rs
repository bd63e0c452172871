//! Warming the cache for the agents a run visits next.
//!
//! A run visits agents in a shuffled order, and with thousands of agents each visit starts
//! with cache misses: the agent's record, its free resources, its ledger. The walk knows the
//! order in advance, so it asks the processor to start loading the next agents' memory while
//! it works on the current one ([`prefetch`]). Prefetching never changes what a run does; it
//! only moves memory traffic earlier.

/// Asks the processor to start loading the cache lines from the one holding `p` over about
/// `bytes` bytes (a hint every 64 bytes from `p`; no-op where the target has no prefetch
/// instruction, or for zero bytes).
#[inline(always)]
pub(super) fn prefetch<T>(p: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let base = p.cast::<i8>();
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: a prefetch is a hint: it never faults and never reads into the program,
            // whatever the address (`wrapping_add` keeps the pointer arithmetic defined).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// [`prefetch`] of a slice's elements.
#[inline(always)]
pub(super) fn prefetch_slice<T>(items: &[T]) {
    prefetch(items.as_ptr(), std::mem::size_of_val(items));
}

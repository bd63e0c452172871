//! Open-file descriptors for the live master (issue 43, "Descriptors"). Service managers start
//! processes with a soft `RLIMIT_NOFILE` of 1,024 while the hard limit is far higher, and every
//! connection, stream, registry write and module worker takes descriptors: at start `serve`
//! raises the soft limit to the hard one ([`raise_soft_limit`]), then sizes its connection and
//! stream places to what is available ([`fit_places`]), keeping [`RESERVED`] descriptors for
//! everything else, so that clients can never take the descriptors the registry needs.

use allocator_http::Limits;

/// Descriptors kept for what is not a client connection: standard streams, the listener, the
/// tokio runtime, registry writes, module workers' pipes.
pub const RESERVED: u64 = 64;

/// Raises the soft open-file limit to the hard limit; returns the soft limit now in force
/// (`None` when it cannot be read, as on a system without `getrlimit`).
pub fn raise_soft_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable rlimit for the call to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        // SAFETY: `raised` is a valid rlimit; a refusal leaves the limit as it was.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            log::info!("open-file limit raised from {} to {}", limit.rlim_cur, limit.rlim_max);
            return Some(limit.rlim_max);
        }
        log::warn!("cannot raise the open-file limit from {}", limit.rlim_cur);
    }
    Some(limit.rlim_cur)
}

/// A file-size limit (`RLIMIT_FSIZE`, `ulimit -f`) makes a write past it fail (`EFBIG`),
/// which the registry answers as any failed write (`503`, retried), instead of killing the
/// master with `SIGXFSZ`.
pub fn survive_file_size_limit() {
    // SAFETY: ignoring a signal has no preconditions; nothing in the master handles SIGXFSZ.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// Shrinks `limits`' request and stream places (and their per-address shares) so that, with
/// [`RESERVED`] descriptors kept, they fit in `available` descriptors; half go to requests,
/// half to streams. Returns whether anything changed.
pub fn fit_places(limits: &mut Limits, available: u64) -> bool {
    let usable = available.saturating_sub(RESERVED) as usize;
    if limits.max_connections + limits.max_streams <= usable {
        return false;
    }
    let requests = (usable / 2).max(1);
    let streams = usable.saturating_sub(requests).max(1);
    limits.max_connections = limits.max_connections.min(requests);
    limits.max_streams = limits.max_streams.min(streams);
    limits.max_connections_per_address =
        limits.max_connections_per_address.min(limits.max_connections);
    limits.max_streams_per_address = limits.max_streams_per_address.min(limits.max_streams);
    // Operator event streams keep their share: a quarter of the stream places at most.
    limits.max_observer_streams = limits.max_observer_streams.min(limits.max_streams / 4);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_that_fit_are_kept() {
        let mut limits = Limits::default();
        assert!(!fit_places(&mut limits, 65_536));
        assert_eq!(limits.max_connections, 1024);
        assert_eq!(limits.max_streams, 1024);
    }

    #[test]
    fn places_shrink_to_the_descriptors_left_after_the_reserve() {
        let mut limits = Limits::default();
        assert!(fit_places(&mut limits, 1024));
        assert_eq!(limits.max_connections + limits.max_streams, 1024 - RESERVED as usize);
        assert!(limits.max_connections_per_address <= limits.max_connections);
        assert!(limits.max_streams_per_address <= limits.max_streams);
        assert!(limits.max_observer_streams <= limits.max_streams / 4);
    }
}

//! Refuse filters as Mesos makes them (R5, R6, R23): the clamps on `refuse_seconds` and the
//! offer filter's lifetime, written once for every allocator that keeps filters.
//!
//! A framework that declines an offer (`Allocator::recover_resources` with `refuse_seconds`)
//! asks not to be offered those resources on that agent again for a while. The seconds arrive
//! as the framework gave them; [`clamp_refuse_seconds`] turns them into a lifetime: `None`, `0`
//! or NaN means no filter, a negative value 5 s, and more than 365 days 365 days. An offer
//! filter then lives `L = max(t, allocation_interval)` from the time `c` it was made; it blocks
//! every allocation run before `c + L` and the first periodic run after `c`, for offers
//! contained in what was refused ([`RefuseFilter`]). An inverse-offer filter
//! (`update_inverse_offer`) lives exactly the clamped `t`, with no interval floor and no
//! periodic-run rule.

use crate::resources::Resources;

/// The filter a negative `refuse_seconds` asks for (Mesos's default filter).
pub const DEFAULT_REFUSE_SECONDS: f64 = 5.0;

/// The longest filter: 365 days.
pub const MAX_REFUSE_SECONDS: f64 = 365.0 * 86_400.0;

/// Two instants closer than this are the same instant.
const EPSILON: f64 = 1e-9;

/// The lifetime a framework's `refuse_seconds` asks for, clamped as Mesos clamps it: `None`
/// when there is no filter (`None`, `0`, NaN), [`DEFAULT_REFUSE_SECONDS`] for a negative value,
/// at most [`MAX_REFUSE_SECONDS`].
pub fn clamp_refuse_seconds(refuse_seconds: Option<f64>) -> Option<f64> {
    match refuse_seconds {
        None => None,
        Some(t) if t == 0.0 || t.is_nan() => None,
        Some(t) if t < 0.0 => Some(DEFAULT_REFUSE_SECONDS),
        Some(t) => Some(t.min(MAX_REFUSE_SECONDS)),
    }
}

/// An offer filter: what a framework refused on one agent under one role, and for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct RefuseFilter {
    /// What was refused: only offers contained in it are blocked.
    pub refused: Resources,
    /// It blocks every allocation run before this time (`c + max(t, allocation_interval)`).
    pub until: f64,
    /// It also blocks the periodic run at this time, the first after it was made.
    pub first_periodic: f64,
}

impl RefuseFilter {
    /// The filter a `recover_resources` of `refused` with `refuse_seconds` makes at `now`, with
    /// periodic runs every `allocation_interval` seconds (at `k × interval`, `k ≥ 1`); `None`
    /// when `refuse_seconds` asks for none.
    pub fn new(
        refused: Resources,
        refuse_seconds: Option<f64>,
        now: f64,
        allocation_interval: f64,
    ) -> Option<RefuseFilter> {
        let seconds = clamp_refuse_seconds(refuse_seconds)?;
        let first_periodic = if allocation_interval > 0.0 {
            ((now / allocation_interval + EPSILON).floor() + 1.0) * allocation_interval
        } else {
            now
        };
        Some(RefuseFilter {
            refused,
            until: now + seconds.max(allocation_interval),
            first_periodic,
        })
    }

    /// Whether it blocks a run at `now` (`periodic`: a run of the periodic timer), whatever
    /// is offered.
    pub fn in_force(&self, now: f64, periodic: bool) -> bool {
        now < self.until - EPSILON || (periodic && (now - self.first_periodic).abs() < EPSILON)
    }

    /// Whether it blocks `offer` in a run at `now`: it is in force and `offer` is contained in
    /// what was refused.
    pub fn blocks(&self, now: f64, periodic: bool, offer: &Resources) -> bool {
        self.in_force(now, periodic) && self.refused.contains(offer)
    }

    /// Whether it can block no run at `now` or later, periodic or not: it can be dropped. At
    /// the time of its first periodic run it is not expired yet (the run has not happened).
    pub fn expired(&self, now: f64) -> bool {
        now >= self.until - EPSILON && now > self.first_periodic + EPSILON
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(seconds: f64, now: f64) -> RefuseFilter {
        RefuseFilter::new("cpus:1".parse().unwrap(), Some(seconds), now, 1.0).unwrap()
    }

    #[test]
    fn no_filter_for_none_zero_or_nan() {
        for t in [None, Some(0.0), Some(f64::NAN)] {
            assert_eq!(clamp_refuse_seconds(t), None, "{t:?}");
        }
    }

    #[test]
    fn a_negative_refusal_is_five_seconds_and_a_long_one_a_year() {
        assert_eq!(clamp_refuse_seconds(Some(-3.0)), Some(DEFAULT_REFUSE_SECONDS));
        assert_eq!(clamp_refuse_seconds(Some(1e12)), Some(MAX_REFUSE_SECONDS));
        assert_eq!(clamp_refuse_seconds(Some(7.5)), Some(7.5));
    }

    #[test]
    fn a_short_filter_lasts_one_interval_and_blocks_the_first_periodic_run() {
        let f = filter(0.2, 0.3);
        assert_eq!((f.until, f.first_periodic), (1.3, 1.0));
        assert!(f.in_force(1.0, true) && f.in_force(1.2, false));
        assert!(!f.in_force(1.3, false) && !f.in_force(2.0, true));
        let at_a_tick = filter(0.2, 1.0);
        assert_eq!(at_a_tick.first_periodic, 2.0);
        assert!(at_a_tick.in_force(2.0, true) && !at_a_tick.in_force(2.0, false));
        assert!(!at_a_tick.expired(2.0 - 1e-3) && at_a_tick.expired(2.0 + 1e-3));
        assert!(!at_a_tick.expired(2.0), "its periodic run at 2 has not happened yet");
    }

    #[test]
    fn only_offers_within_what_was_refused_are_blocked() {
        let f = filter(10.0, 0.0);
        assert!(f.blocks(5.0, false, &"cpus:0.5".parse().unwrap()));
        assert!(!f.blocks(5.0, false, &"cpus:2".parse().unwrap()));
        assert!(!f.blocks(10.0, false, &"cpus:0.5".parse().unwrap()));
    }
}

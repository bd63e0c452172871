//! The event stream's `offer`, `inverse_offer` and `allocation_run` lines (SPEC section 5),
//! written from the master's events.

use serde_json::json;

use crate::output::EventStream;
use allocator_host::master::{Event, Master};

/// Writes the stream line of `event`, if it has one.
pub fn write(event: &Event, master: &Master<'_>, out: &mut EventStream) {
    if !out.is_enabled() {
        return;
    }
    match event {
        Event::Offer(offer) => {
            out.emit(&json!({"event": "offer", "time": master.now(), "run": master.runs(),
                             "framework": master.framework_name(offer.framework),
                             "role": offer.role.as_str(), "agent": master.agent_name(offer.agent),
                             "resources": offer.resources.to_string()}));
        }
        Event::InverseOffer { framework, agent, unavailability: u } => {
            let unavailability = match u.duration.into_option() {
                Some(d) => json!({"start": u.start, "duration": d}),
                None => json!({"start": u.start}),
            };
            out.emit(&json!({"event": "inverse_offer", "time": master.now(),
                             "framework": master.framework_name(*framework),
                             "agent": master.agent_name(*agent), "unavailability": unavailability}));
        }
        Event::AllocationRun { agents, offers, micros, .. } => {
            out.emit(
                &json!({"event": "allocation_run", "time": master.now(), "run": master.runs(),
                             "agents": agents, "offers": offers, "micros": micros}),
            );
        }
        Event::Clock { .. }
        | Event::TaskLaunched { .. }
        | Event::TaskEnded { .. }
        | Event::AgentRemoved(_) => {}
    }
}

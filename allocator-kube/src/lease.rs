//! Leader election on a `coordination.k8s.io/v1` Lease, as kube-scheduler does it (client-go's
//! `leaderelection`, written here on kube-rs's `Api<Lease>`: no maintained crate fits kube 5).
//!
//! Every replica runs the same loop every retry period: read the Lease; if nobody holds it, or
//! its holder has not renewed it for the lease duration (measured on this replica's own clock
//! from when it last saw the record change, so clock skew between replicas does not matter),
//! take it by a `replace` that carries the read `resourceVersion` (the API server refuses a
//! second writer with a conflict, so two replicas never both take it); the holder renews it the
//! same way. A replica starts watching the cluster only once it leads ([`lead`] returns), so a
//! follower has no books and binds nothing; a leader that cannot renew within the renew
//! deadline stops the whole process (as kube-scheduler exits on "leaderelection lost") before
//! the lease can expire for the others, and the one that takes over rebuilds everything from the
//! API. A pod already bound is refused a second binding by the API server (409), which the
//! scheduler takes as "bound elsewhere", so a failover binds no pod twice and loses none.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};

/// How a replica takes part in the election (kube-scheduler's `--leader-elect-*` flags).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElection {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica's identity (the Lease's `holderIdentity`).
    pub identity: String,
    /// How long a lease holds without renewal before another replica may take it.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up (less than the duration).
    pub renew_deadline: Duration,
    /// Between two tries to take or renew the lease.
    pub retry_period: Duration,
}

impl LeaderElection {
    /// kube-scheduler's defaults: lease `kube-system/NAME`, 15 s, renew deadline 10 s, retry
    /// every 2 s; the identity is `HOSTNAME_PID`.
    pub fn new(name: &str) -> LeaderElection {
        LeaderElection {
            namespace: "kube-system".into(),
            name: name.to_owned(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// `Err` unless retry period < renew deadline < lease duration, all positive.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero()
            || self.renew_deadline <= self.retry_period
            || self.lease_duration <= self.renew_deadline
        {
            return Err(format!(
                "leader election needs 0 < retry period ({:?}) < renew deadline ({:?}) < lease duration ({:?})",
                self.retry_period, self.renew_deadline, self.lease_duration
            ));
        }
        Ok(())
    }
}

/// `HOSTNAME_PID` (the host's name from `HOSTNAME`, else the kernel's).
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    format!("{host}_{}", std::process::id())
}

/// The record as last seen, and when (on this replica's clock) it last changed.
struct Observed {
    record: Option<(String, Option<MicroTime>, Option<i32>)>,
    at: Instant,
}

/// One try to take or renew the lease: `true` when this replica holds it afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    le: &LeaderElection,
    observed: &mut Observed,
) -> Result<bool, kube::Error> {
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let seconds = le.lease_duration.as_secs().max(1) as i32;
    let lease = match api.get_opt(&le.name).await? {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(le.name.clone()),
                    namespace: Some(le.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(le.identity.clone()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        }
        Some(lease) => lease,
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let record = Some((holder.clone(), spec.renew_time.clone(), spec.lease_transitions));
    if record != observed.record {
        observed.record = record;
        observed.at = Instant::now();
    }
    let ours = holder == le.identity;
    if !holder.is_empty() && !ours && observed.at.elapsed() < le.lease_duration {
        return Ok(false); // held by another, renewed within the duration
    }
    let transitions = spec.lease_transitions.unwrap_or(0);
    let next = LeaseSpec {
        holder_identity: Some(le.identity.clone()),
        lease_duration_seconds: Some(seconds),
        acquire_time: if ours { spec.acquire_time.clone() } else { Some(now.clone()) },
        renew_time: Some(now),
        lease_transitions: Some(if ours { transitions } else { transitions + 1 }),
        ..spec
    };
    // The read resourceVersion travels with the replace: a concurrent writer gets a conflict.
    let replaced = Lease { metadata: lease.metadata.clone(), spec: Some(next) };
    match api.replace(&le.name, &PostParams::default(), &replaced).await {
        Ok(_) => {
            if !ours {
                log::info!(
                    "leader election: {} took the lease {}/{}",
                    le.identity,
                    le.namespace,
                    le.name
                );
            }
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Waits until this replica leads, then keeps renewing the lease in the background; returns
/// once leading. Losing the lease (no renewal within the renew deadline) ends the process
/// with status 1, as kube-scheduler's "leaderelection lost" does.
pub async fn lead(client: Client, le: LeaderElection) {
    let api: Api<Lease> = Api::namespaced(client, &le.namespace);
    let mut observed = Observed { record: None, at: Instant::now() };
    log::info!(
        "leader election: {} waits for the lease {}/{} (duration {:?})",
        le.identity,
        le.namespace,
        le.name,
        le.lease_duration
    );
    loop {
        match try_acquire_or_renew(&api, &le, &mut observed).await {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => log::warn!("leader election: reading the lease: {e}"),
        }
        tokio::time::sleep(le.retry_period).await;
    }
    eprintln!("leader election: {} leads (lease {}/{})", le.identity, le.namespace, le.name);
    tokio::spawn(async move {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(le.retry_period).await;
            let attempt = tokio::time::timeout(
                le.renew_deadline,
                try_acquire_or_renew(&api, &le, &mut observed),
            )
            .await;
            match attempt {
                Ok(Ok(true)) => renewed = Instant::now(),
                Ok(Ok(false)) => {
                    log::error!(
                        "leader election: the lease {}/{} was taken by another",
                        le.namespace,
                        le.name
                    );
                    lost();
                }
                Ok(Err(e)) => log::warn!("leader election: renewing the lease: {e}"),
                Err(_) => log::warn!("leader election: renewing the lease timed out"),
            }
            if renewed.elapsed() >= le.renew_deadline {
                log::error!(
                    "leader election: the lease could not be renewed within {:?}",
                    le.renew_deadline
                );
                lost();
            }
        }
    });
}

/// Leadership lost: stop at once, before another replica's first binding can meet ours.
fn lost() -> ! {
    eprintln!("leader election: leadership lost, stopping");
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_must_nest() {
        let mut le = LeaderElection::new("s");
        assert!(le.validate().is_ok());
        le.renew_deadline = le.lease_duration;
        assert!(le.validate().is_err());
        assert!(default_identity().ends_with(&format!("_{}", std::process::id())));
    }
}

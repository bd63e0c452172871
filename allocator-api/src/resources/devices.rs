//! GPUs as devices, and what a task asks of them.
//!
//! An agent may carry its GPUs **pooled**, as Mesos does (`gpus:8`: one number), or as
//! **devices**: one `gpus` entry per device, the device id in the volume slot of the resource
//! text, each holding at most one GPU (1,000 milli):
//!
//! ```text
//! cpus:96;mem:393216;gpus[0]:1;gpus[1]:1;gpus[2]:0.19
//! ```
//!
//! Device entries are ordinary resource entries with their own merge key, so all resource
//! arithmetic is per device: an offer, a task or a recovered part names the device(s) it holds
//! (`gpus[2]:0.81`), and the host's ledger and offer guard refuse anything that over-commits a
//! device, like any other entry. Quantities drop the id, so fair sharing sees one `gpus`
//! dimension, the sum over devices, as in Mesos. An agent's GPU model is its `gpu_model`
//! attribute ([`MODEL_ATTRIBUTE`]).
//!
//! A task asks for GPUs as a pooled quantity (`gpus:0.81`, `gpus:2`); on an agent with devices
//! that is a [`GpuAsk`]: a share of **one** device (0 < milli < 1000) or `k` **whole, fully
//! free** devices. A [`Demand`] is a task's whole ask as a framework states it to the allocator
//! (Mesos's `requestResources`): the ask, plus the GPU models it accepts, carried in a request as
//! the set entry `gpu_models:{V100M16,V100M32}` ([`MODELS_REQUEST`]).

use std::cmp::Ordering;

use super::{Name, Resource, ResourceFlags, Resources, Scalar, Value};

/// The name of the GPU resource.
pub const GPUS: &str = "gpus";
/// The agent attribute that holds its GPU model.
pub const MODEL_ATTRIBUTE: &str = "gpu_model";
/// The set entry of a request that lists the GPU models a task accepts (never an agent's
/// resource).
pub const MODELS_REQUEST: &str = "gpu_models";
/// Milli-GPU in one device.
pub const DEVICE_MILLI: i64 = 1000;

impl Resource {
    /// `true` for one GPU device's entry (`gpus[ID]:x`).
    pub fn is_gpu_device(&self) -> bool {
        !self.volume.is_empty() && self.name.as_str() == GPUS && self.is_scalar()
    }
}

/// Why a device entry is malformed (`None` when it is fine or not a device).
pub(super) fn device_entry_error(r: &Resource) -> Option<&'static str> {
    if !r.is_gpu_device() {
        return None;
    }
    match &r.value {
        Value::Scalar(s) if s.millis() > DEVICE_MILLI => {
            Some("a GPU device (gpus[ID]) holds at most 1 GPU")
        }
        _ if r.is_shared() => Some("a GPU device cannot be shared"),
        _ => None,
    }
}

/// The order of devices on an agent: ids that are numbers by value, then other ids by text.
pub fn device_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// One device of an agent as placement sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Its id (`gpus[ID]`).
    pub id: Name,
    /// Its free milli-GPU (0..=1000).
    pub free: i64,
}

impl Resources {
    /// `true` when some entry is a GPU device.
    pub fn has_gpu_devices(&self) -> bool {
        self.iter().any(Resource::is_gpu_device)
    }

    /// Writes the unreserved, non-revocable GPU devices into `out`, in device order
    /// ([`device_order`]). Devices with nothing free are left out (resources drop empty
    /// entries), so pass an agent's **total** to learn its devices, and its free resources to
    /// learn what is free.
    pub fn gpu_devices_into(&self, out: &mut Vec<Device>) {
        out.clear();
        out.extend(
            self.iter()
                .filter(|r| {
                    r.is_gpu_device() && r.is_unreserved() && r.flags == ResourceFlags::NONE
                })
                .map(|r| Device { id: r.volume, free: r.value.quantity().millis() }),
        );
        out.sort_by(|a, b| device_order(&a.id, &b.id));
    }
}

/// What a task asks of an agent's GPU devices.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GpuAsk {
    /// No GPU.
    None,
    /// A share of one device, in milli (1..=999).
    Share(i64),
    /// This many whole, fully free devices (≥ 1).
    Whole(u32),
}

impl GpuAsk {
    /// The ask of a pooled `gpus` quantity: 0 is none, below 1 a share of one device, a whole
    /// number whole devices. Anything else (1.5) cannot be placed on devices.
    pub fn from_gpus(gpus: Scalar) -> Result<GpuAsk, String> {
        let m = gpus.millis();
        if m <= 0 {
            Ok(GpuAsk::None)
        } else if m < DEVICE_MILLI {
            Ok(GpuAsk::Share(m))
        } else if m % DEVICE_MILLI == 0 && m / DEVICE_MILLI <= u32::MAX as i64 {
            Ok(GpuAsk::Whole((m / DEVICE_MILLI) as u32))
        } else {
            Err(format!(
                "gpus:{gpus} is neither a share of one GPU (below 1) nor a whole number of GPUs"
            ))
        }
    }

    /// Milli-GPU per device asked (the share, or 1000 for whole devices; 0 for none).
    pub fn per_device(self) -> i64 {
        match self {
            GpuAsk::None => 0,
            GpuAsk::Share(m) => m,
            GpuAsk::Whole(_) => DEVICE_MILLI,
        }
    }

    /// How many devices it takes (0, 1, or k).
    pub fn devices(self) -> u32 {
        match self {
            GpuAsk::None => 0,
            GpuAsk::Share(_) => 1,
            GpuAsk::Whole(k) => k,
        }
    }

    /// Total milli-GPU asked.
    pub fn total(self) -> i64 {
        self.per_device() * i64::from(self.devices())
    }

    /// Whether devices with these free amounts can take the ask: one device with room for a
    /// share, or `k` fully free devices.
    pub fn fits(self, free: impl IntoIterator<Item = i64>) -> bool {
        match self {
            GpuAsk::None => true,
            GpuAsk::Share(m) => free.into_iter().any(|f| f >= m),
            GpuAsk::Whole(k) => {
                free.into_iter().filter(|&f| f >= DEVICE_MILLI).take(k as usize).count()
                    == k as usize
            }
        }
    }
}

/// The device a share goes to by the tightest fit: the fitting device with the least free
/// milli, the first in device order on ties (the artifact's `best` rule).
pub fn tightest_fit(free: &[i64], share: i64) -> Option<usize> {
    let mut best: Option<(i64, usize)> = None;
    for (i, &f) in free.iter().enumerate() {
        if f >= share && best.is_none_or(|(b, _)| f < b) {
            best = Some((f, i));
        }
    }
    best.map(|(_, i)| i)
}

/// The first `k` fully free devices in device order, written into `out`; `false` when fewer
/// than `k` are fully free.
pub fn lowest_free(free: &[i64], k: u32, out: &mut Vec<usize>) -> bool {
    out.clear();
    out.extend(
        free.iter()
            .enumerate()
            .filter(|(_, f)| **f >= DEVICE_MILLI)
            .map(|(i, _)| i)
            .take(k as usize),
    );
    out.len() == k as usize
}

/// The entries for `milli` of each chosen device: `gpus[ID]:milli`.
pub fn device_entries(devices: &[Device], chosen: &[usize], milli: i64) -> Resources {
    Resources::from_entries(chosen.iter().map(|&i| Resource {
        name: Name::new(GPUS),
        reservation: Name::default(),
        volume: devices[i].id,
        flags: ResourceFlags::NONE,
        value: Value::Scalar(Scalar::from_millis(milli)),
    }))
}

/// Takes a task's pooled GPU quantity from an offer's devices by the sharing rule (a share from
/// the tightest-fitting device, whole GPUs from the lowest fully free ones): the device entries
/// it takes, or `None` when they do not fit (or `gpus` is not a valid [`GpuAsk`]).
pub fn take_gpus(offer: &Resources, gpus: Scalar) -> Option<Resources> {
    let ask = GpuAsk::from_gpus(gpus).ok()?;
    let mut devices = Vec::new();
    offer.gpu_devices_into(&mut devices);
    let free: Vec<i64> = devices.iter().map(|d| d.free).collect();
    let chosen = match ask {
        GpuAsk::None => return Some(Resources::new()),
        GpuAsk::Share(m) => vec![tightest_fit(&free, m)?],
        GpuAsk::Whole(k) => {
            let mut out = Vec::new();
            lowest_free(&free, k, &mut out).then_some(out)?
        }
    };
    Some(device_entries(&devices, &chosen, ask.per_device()))
}

/// A task's ask as a framework states it to the allocator (Mesos's `requestResources`).
#[derive(Clone, Debug, PartialEq)]
pub struct Demand {
    /// Everything but GPUs (cpus, mem, …), pooled.
    pub resources: Resources,
    /// What it asks of GPU devices.
    pub gpus: GpuAsk,
    /// The GPU models it accepts (empty: any). Only checked when it asks for GPUs.
    pub models: Vec<String>,
}

impl Demand {
    /// Reads a request: its `gpus` entries (pooled) become the [`GpuAsk`], its
    /// [`MODELS_REQUEST`] set the accepted models, the rest stays resources.
    pub fn from_request(request: &Resources) -> Result<Demand, String> {
        let gpus = GpuAsk::from_gpus(request.scalar(GPUS))?;
        let mut models = Vec::new();
        for r in request.iter().filter(|r| r.name.as_str() == MODELS_REQUEST) {
            match &r.value {
                Value::Set(items) => models.extend(items.iter().map(|s| s.to_string())),
                _ => return Err(format!("'{MODELS_REQUEST}' must be a set ({{A,B}}), got {r}")),
            }
        }
        let resources =
            request.filter(|r| r.name.as_str() != GPUS && r.name.as_str() != MODELS_REQUEST);
        Ok(Demand { resources, gpus, models })
    }

    /// The request that states this demand (the inverse of [`from_request`](Self::from_request)).
    pub fn to_request(&self) -> Resources {
        let mut out = self.resources.clone();
        if self.gpus != GpuAsk::None {
            out.add_resource(Resource::scalar(GPUS, Scalar::from_millis(self.gpus.total())));
        }
        if !self.models.is_empty() {
            let mut items: Vec<abi_stable::std_types::RString> =
                self.models.iter().map(|m| m.as_str().into()).collect();
            items.sort();
            items.dedup();
            out.add_resource(Resource {
                name: Name::new(MODELS_REQUEST),
                reservation: Name::default(),
                volume: Name::default(),
                flags: ResourceFlags::NONE,
                value: Value::Set(items.into()),
            });
        }
        out
    }

    /// Whether an agent whose GPU model is `model` may take the demand: always for a demand
    /// without GPUs or without a model list; otherwise the agent's model must be listed.
    pub fn accepts_model(&self, model: Option<&str>) -> bool {
        self.gpus == GpuAsk::None
            || self.models.is_empty()
            || model.is_some_and(|m| self.models.iter().any(|x| x == m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(s: &str) -> Resources {
        s.parse().unwrap()
    }

    #[test]
    fn device_entries_are_accounted_per_device() {
        let total = res("cpus:8;gpus[0]:1;gpus[1]:1");
        let used = res("gpus[0]:0.6");
        let free = total.clone() - &used;
        assert_eq!(free.to_string(), "cpus:8;gpus[0]:0.4;gpus[1]:1");
        assert!(!free.contains(&res("gpus[0]:0.5")), "device 0 has only 0.4 left");
        assert!(free.contains(&res("gpus[1]:0.5")));
        assert_eq!(free.scalar_quantities().to_string(), "cpus:8;gpus:1.4", "one gpus dimension");
    }

    #[test]
    fn a_device_holds_at_most_one_gpu() {
        let err = "gpus[0]:1.5".parse::<Resources>().unwrap_err().to_string();
        assert!(err.contains("at most 1 GPU"), "{err}");
    }

    #[test]
    fn ask_from_pooled_quantity() {
        let s = |x: &str| Scalar::parse_decimal(x).unwrap();
        assert_eq!(GpuAsk::from_gpus(s("0")), Ok(GpuAsk::None));
        assert_eq!(GpuAsk::from_gpus(s("0.47")), Ok(GpuAsk::Share(470)));
        assert_eq!(GpuAsk::from_gpus(s("2")), Ok(GpuAsk::Whole(2)));
        assert!(GpuAsk::from_gpus(s("1.5")).is_err());
    }

    #[test]
    fn a_share_goes_to_the_tightest_device_first_on_ties() {
        assert_eq!(tightest_fit(&[1000, 500, 300, 500], 400), Some(1));
        assert_eq!(tightest_fit(&[1000, 200], 400), Some(0));
        assert_eq!(tightest_fit(&[100, 200], 400), None);
    }

    #[test]
    fn whole_gpus_take_the_lowest_fully_free_devices() {
        let mut out = Vec::new();
        assert!(lowest_free(&[1000, 999, 1000, 1000], 2, &mut out));
        assert_eq!(out, vec![0, 2]);
        assert!(!lowest_free(&[1000, 999], 2, &mut out));
    }

    #[test]
    fn two_half_free_devices_do_not_make_one_free_gpu() {
        let offer = res("gpus[0]:0.5;gpus[1]:0.5");
        assert_eq!(take_gpus(&offer, Scalar::from_units(1)), None);
        assert_eq!(take_gpus(&offer, Scalar::from_millis(500)).unwrap().to_string(), "gpus[0]:0.5");
    }

    #[test]
    fn devices_are_ordered_by_number() {
        let mut out = Vec::new();
        res("gpus[10]:1;gpus[2]:1;gpus[x]:1").gpu_devices_into(&mut out);
        let ids: Vec<&str> = out.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["2", "10", "x"]);
    }

    #[test]
    fn a_demand_round_trips_through_a_request() {
        let req = res("cpus:3.152;mem:12288;gpus:0.81;gpu_models:{V100M32,V100M16}");
        let d = Demand::from_request(&req).unwrap();
        assert_eq!(d.gpus, GpuAsk::Share(810));
        assert_eq!(d.models, ["V100M16", "V100M32"]);
        assert_eq!(d.resources.to_string(), "cpus:3.152;mem:12288");
        assert_eq!(d.to_request(), req);
        assert!(d.accepts_model(Some("V100M16")));
        assert!(!d.accepts_model(Some("T4")));
        assert!(!d.accepts_model(None));
    }

    #[test]
    fn a_cpu_only_demand_accepts_every_model() {
        let d = Demand::from_request(&res("cpus:1;gpu_models:{T4}")).unwrap();
        assert!(d.accepts_model(None));
    }
}

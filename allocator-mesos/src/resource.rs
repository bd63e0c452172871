//! Mesos's v1 `Resource` JSON and the conversion to and from the allocator's
//! [`Resources`] (SPEC section 3).
//!
//! How the fields map:
//!
//! | Mesos `Resource` | [`allocator_api::resources::Resource`] |
//! |---|---|
//! | `name`, `type` and `scalar.value` / `ranges.range[{begin,end}]` / `set.item` | `name`, `value` |
//! | `reservations` (the last one: its `role`, `type` `DYNAMIC`), or legacy `role` (+ `reservation` for dynamic) | `reservation`, the `dynamic` flag |
//! | `disk.persistence.id` | `volume` (a persistent volume's id, or a GPU device's: `gpus[0]`) |
//! | `revocable: {}`, `shared: {}` | the `revocable`, `shared` flags |
//! | `allocation_info.role` | not kept: it says whom an offer is for (set on output) |
//!
//! Limits: a refined reservation stack is kept as its innermost role only (written back as one
//! entry); a persistent volume's `disk.volume` (container path, mode) and `disk.source`, a
//! reservation's principal and labels, and `provider_id` are not kept; `TEXT` values are not
//! resources and are refused.

use allocator_api::resources::{self as api, ResourceFlags, Resources};
use serde::{Deserialize, Serialize};

use super::common::{Labels, RangeValue, RangesValue, ScalarValue, SetValue, ValueType};

/// `Resource.AllocationInfo`: the role an offered or allocated resource is for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct AllocationInfo {
    /// The role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

/// `Resource.ReservationInfo.Type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReservationType {
    /// Not set (refused as a reservation).
    Unknown,
    /// A static reservation (agent flag).
    Static,
    /// A dynamic reservation (a `RESERVE` operation).
    Dynamic,
}

/// `Resource.ReservationInfo`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ReservationInfo {
    /// Static or dynamic (post-refinement format).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ReservationType>,
    /// The role reserved to (post-refinement format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Who reserved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Labels of the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
}

/// `Resource.DiskInfo.Persistence`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Persistence {
    /// The persistent volume's id.
    pub id: String,
    /// Who created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// `Resource.DiskInfo`. `volume` (a `Volume`) and `source` are carried as JSON.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct DiskInfo {
    /// Set for a persistent volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<Persistence>,
    /// Where the volume is mounted (`container_path`, `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<serde_json::Value>,
    /// The disk's source (PATH, MOUNT, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<serde_json::Value>,
}

/// An empty message (`RevocableInfo`, `SharedInfo`): its presence is the information.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Marker {}

/// `Resource` as Mesos's JSON has it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Resource {
    /// `cpus`, `mem`, `disk`, `ports`, `gpus`, …
    pub name: String,
    /// Which value field is set.
    #[serde(rename = "type")]
    pub kind: ValueType,
    /// The value of a `SCALAR` resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalar: Option<ScalarValue>,
    /// The value of a `RANGES` resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<RangesValue>,
    /// The value of a `SET` resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<SetValue>,
    /// Legacy (pre-refinement) reservation role; `*` is unreserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Whom the resource is offered or allocated to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_info: Option<AllocationInfo>,
    /// Legacy (pre-refinement) dynamic reservation marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ReservationInfo>,
    /// The reservation stack (post-refinement); the last entry is the one in force.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<ReservationInfo>,
    /// Disk details: a persistent volume's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskInfo>,
    /// Present for revocable resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocable: Option<Marker>,
    /// Present for shared resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<Marker>,
}

/// Which reservation format [`to_mesos`] writes, as Mesos downgrades resources for frameworks
/// without the `RESERVATION_REFINEMENT` capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceFormat {
    /// `reservations: [{type, role}]` (frameworks with `RESERVATION_REFINEMENT`).
    Refined,
    /// `role` (`*` when unreserved) and, for dynamic reservations, `reservation: {}`.
    Legacy,
}

/// Why Mesos resource JSON does not convert.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resource {index} ('{name}'): {message}")]
pub struct ResourceError {
    /// The resource's position in the list.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// What is wrong.
    pub message: String,
}

/// The allocator's view of `resources` (merged and canonical, SPEC section 3).
pub fn from_mesos(resources: &[Resource]) -> Result<Resources, ResourceError> {
    let mut text = Vec::with_capacity(resources.len());
    for (index, r) in resources.iter().enumerate() {
        let fail = |message: String| ResourceError { index, name: r.name.clone(), message };
        let entry = entry_from_mesos(r).map_err(fail)?;
        text.push(entry.to_string());
    }
    let joined = text.join(";");
    joined.parse::<Resources>().map_err(|e| ResourceError {
        index: 0,
        name: String::new(),
        message: format!("'{joined}' is not valid: {e}"),
    })
}

/// One entry in the allocator's terms (not yet canonical).
fn entry_from_mesos(r: &Resource) -> Result<api::Resource, String> {
    if r.name.is_empty() || r.name.contains(|c: char| ";:()[]{},".contains(c) || c.is_whitespace())
    {
        return Err("the name is empty or has a reserved character".into());
    }
    let missing = |field: &str| format!("type {:?} but no '{field}'", r.kind);
    let value = match r.kind {
        ValueType::Scalar => {
            let v = r.scalar.ok_or_else(|| missing("scalar"))?.value;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("scalar {v} is not a non-negative number"));
            }
            api::Value::Scalar(api::Scalar::from_f64(v).ok_or("the scalar is too large")?)
        }
        ValueType::Ranges => {
            let ranges = r.ranges.as_ref().ok_or_else(|| missing("ranges"))?;
            let mut out = Vec::with_capacity(ranges.range.len());
            for range in &ranges.range {
                if range.begin > range.end {
                    return Err(format!(
                        "range {}-{} ends before it begins",
                        range.begin, range.end
                    ));
                }
                out.push(api::Range { begin: range.begin, end: range.end });
            }
            api::Value::Ranges(out.into())
        }
        ValueType::Set => {
            let set = r.set.as_ref().ok_or_else(|| missing("set"))?;
            if let Some(bad) =
                set.item.iter().find(|i| i.is_empty() || i.contains(|c: char| ",{}".contains(c)))
            {
                return Err(format!("set item {bad:?} is empty or has a reserved character"));
            }
            api::Value::Set(set.item.iter().map(|i| i.as_str().into()).collect())
        }
        ValueType::Text => return Err("TEXT is not a resource type".into()),
    };
    let (role, dynamic) = match r.reservations.last() {
        Some(last) => {
            let role = last.role.clone().ok_or("a reservation without 'role'")?;
            let dynamic = match last.kind {
                Some(ReservationType::Dynamic) => true,
                Some(ReservationType::Static) => false,
                _ => return Err("a reservation without 'type' STATIC or DYNAMIC".into()),
            };
            (role, dynamic)
        }
        None => match r.role.as_deref() {
            None | Some("*") => (String::new(), false),
            Some(role) => (role.to_owned(), r.reservation.is_some()),
        },
    };
    let mut flags = ResourceFlags::NONE;
    if dynamic {
        flags = flags.with(ResourceFlags::DYNAMIC);
    }
    if r.revocable.is_some() {
        flags = flags.with(ResourceFlags::REVOCABLE);
    }
    if r.shared.is_some() {
        flags = flags.with(ResourceFlags::SHARED);
    }
    let volume = r.disk.as_ref().and_then(|d| d.persistence.as_ref()).map(|p| p.id.as_str());
    Ok(api::Resource {
        name: r.name.as_str().into(),
        reservation: role.as_str().into(),
        volume: volume.unwrap_or("").into(),
        flags,
        value,
    })
}

/// `resources` as Mesos JSON, one `Resource` per entry, in `format`, with
/// `allocation_info.role` set to `allocation_role` when given (offers, allocations). A
/// persistent volume gets `disk.persistence.id` and a read-write `disk.volume` whose
/// `container_path` is the volume id.
pub fn to_mesos(
    resources: &Resources,
    allocation_role: Option<&str>,
    format: ResourceFormat,
) -> Vec<Resource> {
    resources.iter().map(|r| entry_to_mesos(r, allocation_role, format)).collect()
}

fn entry_to_mesos(
    r: &api::Resource,
    allocation_role: Option<&str>,
    format: ResourceFormat,
) -> Resource {
    let mut out = Resource {
        name: r.name.to_string(),
        kind: ValueType::Scalar,
        scalar: None,
        ranges: None,
        set: None,
        role: None,
        allocation_info: allocation_role.map(|role| AllocationInfo { role: Some(role.to_owned()) }),
        reservation: None,
        reservations: Vec::new(),
        disk: None,
        revocable: r.is_revocable().then_some(Marker {}),
        shared: r.is_shared().then_some(Marker {}),
    };
    match &r.value {
        api::Value::Scalar(s) => out.scalar = Some(ScalarValue { value: s.as_f64() }),
        api::Value::Ranges(rs) => {
            out.kind = ValueType::Ranges;
            out.ranges = Some(RangesValue {
                range: rs.iter().map(|x| RangeValue { begin: x.begin, end: x.end }).collect(),
            });
        }
        api::Value::Set(items) => {
            out.kind = ValueType::Set;
            out.set = Some(SetValue { item: items.iter().map(|i| i.to_string()).collect() });
        }
    }
    let dynamic = r.flags.has(ResourceFlags::DYNAMIC);
    match format {
        ResourceFormat::Refined if !r.is_unreserved() => {
            out.reservations.push(ReservationInfo {
                kind: Some(if dynamic {
                    ReservationType::Dynamic
                } else {
                    ReservationType::Static
                }),
                role: Some(r.reservation.to_string()),
                principal: None,
                labels: None,
            });
        }
        ResourceFormat::Refined => {}
        ResourceFormat::Legacy => {
            out.role = Some(if r.is_unreserved() { "*".into() } else { r.reservation.to_string() });
            if dynamic {
                out.reservation = Some(ReservationInfo::default());
            }
        }
    }
    if !r.volume.is_empty() {
        out.disk = Some(DiskInfo {
            persistence: Some(Persistence { id: r.volume.to_string(), principal: None }),
            // A GPU device's id travels in the same place (Mesos has no device id), without
            // the container path a volume needs.
            volume: (r.name.as_str() != api::GPUS)
                .then(|| serde_json::json!({"container_path": r.volume.as_str(), "mode": "RW"})),
            source: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Vec<Resource> {
        serde_json::from_str(json).unwrap()
    }

    fn text(json: &str) -> String {
        from_mesos(&parse(json)).unwrap().to_string()
    }

    #[test]
    fn scalar_ranges_and_set_resources_convert_to_resource_text() {
        let t = text(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.5}},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": 128}},
                {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000, "end": 31009}, {"begin": 31010, "end": 32000}]}},
                {"name": "zones", "type": "SET", "set": {"item": ["b", "a"]}}]"#,
        );
        let expected: Resources =
            "cpus:1.5;mem:128;ports:[31000-32000];zones:{a,b}".parse().unwrap();
        assert_eq!(t, expected.to_string());
    }

    #[test]
    fn entries_with_the_same_key_merge() {
        let t = text(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
                {"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.2}}]"#,
        );
        assert_eq!(t, "cpus:0.3");
    }

    #[test]
    fn a_post_refinement_reservation_stack_gives_its_last_role() {
        let r = from_mesos(&parse(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 2},
                 "reservations": [{"type": "STATIC", "role": "a"}, {"type": "DYNAMIC", "role": "a/b", "principal": "p"}]},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": 64},
                 "reservations": [{"type": "STATIC", "role": "a"}]}]"#,
        ))
        .unwrap();
        let expected: Resources = "cpus(a/b){dynamic}:2;mem(a):64".parse().unwrap();
        assert_eq!(r, expected);
    }

    #[test]
    fn a_legacy_role_is_a_static_reservation_and_with_reservation_a_dynamic_one() {
        let r = from_mesos(&parse(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}, "role": "*"},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}, "role": "r1"},
                {"name": "disk", "type": "SCALAR", "scalar": {"value": 10}, "role": "r1", "reservation": {"principal": "p"}}]"#,
        ))
        .unwrap();
        let expected: Resources = "cpus:1;mem(r1):32;disk(r1){dynamic}:10".parse().unwrap();
        assert_eq!(r, expected);
    }

    #[test]
    fn revocable_shared_and_persistent_volume_markers_become_flags_and_volume_ids() {
        let r = from_mesos(&parse(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}, "revocable": {}},
                {"name": "disk", "type": "SCALAR", "scalar": {"value": 100}, "shared": {},
                 "reservations": [{"type": "DYNAMIC", "role": "r1"}],
                 "disk": {"persistence": {"id": "vol1", "principal": "p"},
                          "volume": {"container_path": "data", "mode": "RW"}}}]"#,
        ))
        .unwrap();
        let expected: Resources =
            "cpus{revocable}:4;disk(r1)[vol1]{shared,dynamic}:100".parse().unwrap();
        assert_eq!(r, expected);
    }

    #[test]
    fn a_gpu_device_travels_as_its_persistence_id_and_comes_back_the_same_device() {
        let r: Resources = "cpus:1;gpus[3]:0.5".parse().unwrap();
        let json = to_mesos(&r, Some("ml"), ResourceFormat::Refined);
        let gpu = json.iter().find(|e| e.name == "gpus").unwrap();
        let disk = gpu.disk.as_ref().unwrap();
        assert_eq!(disk.persistence.as_ref().unwrap().id, "3");
        assert!(disk.volume.is_none(), "a device has no container path");
        assert_eq!(from_mesos(&json).unwrap(), r);
    }

    #[test]
    fn malformed_resources_are_refused_with_their_position() {
        let e = from_mesos(&parse(
            r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1}},
                {"name": "mem", "type": "SCALAR"}]"#,
        ))
        .unwrap_err();
        assert_eq!((e.index, e.name.as_str()), (1, "mem"));
        assert!(e.message.contains("'scalar'"), "{e}");
        let e =
            from_mesos(&parse(r#"[{"name": "cpus", "type": "SCALAR", "scalar": {"value": -1}}]"#))
                .unwrap_err();
        assert!(e.message.contains("non-negative"), "{e}");
        let e = from_mesos(&parse(
            r#"[{"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 5, "end": 4}]}}]"#,
        ))
        .unwrap_err();
        assert!(e.message.contains("ends before"), "{e}");
        let e = from_mesos(&parse(r#"[{"name": "os", "type": "TEXT"}]"#)).unwrap_err();
        assert!(e.message.contains("TEXT"), "{e}");
    }

    #[test]
    fn offered_resources_are_written_as_mesos_json_with_their_allocation_role() {
        let r: Resources = "cpus:2;mem(r1){dynamic}:64;ports:[1-3]".parse().unwrap();
        let json = serde_json::to_value(to_mesos(&r, Some("r1"), ResourceFormat::Refined)).unwrap();
        let cpus = json.as_array().unwrap().iter().find(|x| x["name"] == "cpus").unwrap();
        assert_eq!(
            cpus,
            &serde_json::json!({"name": "cpus", "type": "SCALAR", "scalar": {"value": 2.0},
                                "allocation_info": {"role": "r1"}})
        );
        let mem = json.as_array().unwrap().iter().find(|x| x["name"] == "mem").unwrap();
        assert_eq!(mem["reservations"], serde_json::json!([{"type": "DYNAMIC", "role": "r1"}]));
        let ports = json.as_array().unwrap().iter().find(|x| x["name"] == "ports").unwrap();
        assert_eq!(ports["ranges"], serde_json::json!({"range": [{"begin": 1, "end": 3}]}));
    }

    #[test]
    fn the_legacy_format_names_the_role_and_marks_dynamic_reservations() {
        let r: Resources = "cpus:2;mem(r1){dynamic}:64;disk(r1):5".parse().unwrap();
        let out = to_mesos(&r, None, ResourceFormat::Legacy);
        let by = |n: &str| out.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(by("cpus").role.as_deref(), Some("*"));
        assert_eq!(
            (by("mem").role.as_deref(), by("mem").reservation.is_some()),
            (Some("r1"), true)
        );
        assert_eq!(
            (by("disk").role.as_deref(), by("disk").reservation.is_some()),
            (Some("r1"), false)
        );
        assert!(out.iter().all(|x| x.reservations.is_empty() && x.allocation_info.is_none()));
    }

    #[test]
    fn resources_survive_a_round_trip_through_mesos_json_in_both_formats() {
        let r: Resources =
            "cpus:2;cpus{revocable}:1;mem(a/b){dynamic}:64;disk(r1)[v1]{shared,dynamic}:10;ports:[1-3,7-9];zones:{x,y}"
                .parse()
                .unwrap();
        for format in [ResourceFormat::Refined, ResourceFormat::Legacy] {
            let json = serde_json::to_string(&to_mesos(&r, Some("a/b"), format)).unwrap();
            let back: Vec<Resource> = serde_json::from_str(&json).unwrap();
            assert_eq!(from_mesos(&back).unwrap(), r, "{format:?}: {json}");
        }
    }
}

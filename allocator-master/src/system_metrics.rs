//! Mesos's `system/*` metrics of the machine the master runs on: `system/cpus_total`,
//! `system/load_1min`, `_5min`, `_15min` (from `/proc/loadavg`), `system/mem_total_bytes` and
//! `system/mem_free_bytes` (from `/proc/meminfo`). Where a source is missing (not Linux), its
//! metrics are left out.

use serde_json::{Map, Value, json};

/// Writes the `system/*` metrics into `m`.
pub fn write(m: &mut Map<String, Value>) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    m.insert("system/cpus_total".into(), json!(cpus));
    if let Ok(text) = std::fs::read_to_string("/proc/loadavg") {
        for ((name, value), _) in
            ["1min", "5min", "15min"].iter().zip(text.split_whitespace()).zip(0..3)
        {
            if let Ok(v) = value.parse::<f64>() {
                m.insert(format!("system/load_{name}"), json!(v));
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        for (key, metric) in
            [("MemTotal:", "system/mem_total_bytes"), ("MemAvailable:", "system/mem_free_bytes")]
        {
            let kib = text
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok());
            if let Some(kib) = kib {
                m.insert(metric.into(), json!(kib * 1024));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_machines_cpus_are_always_reported() {
        let mut m = serde_json::Map::new();
        super::write(&mut m);
        assert!(m["system/cpus_total"].as_u64().unwrap() >= 1);
        if cfg!(target_os = "linux") {
            assert!(m["system/mem_total_bytes"].as_u64().unwrap() > 0);
            assert!(m.contains_key("system/load_1min"));
        }
    }
}

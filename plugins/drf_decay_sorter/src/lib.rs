//! The decayed-DRF sorter (module `drf_decay`, library `drf_decay_sorter`): Dominant Resource
//! Fairness computed on **usage decayed with a half-life** instead of on what clients hold now.
//! A role that used the cluster an hour ago comes before one that used it a minute ago; the
//! `drf` sorter orders them by what they hold at this moment. Mesos has no equivalent; the rule
//! is Slurm's fair-share usage (`PriorityDecayHalfLife`) and Kueue's admission fair sharing
//! (`usageHalfLifeTime`).
//!
//! # The rule
//!
//! With half-life `H` (seconds), the usage of client `c` in resource `r` at time `t` is what it
//! held, weighted by how long ago (Slurm's decayed usage, in resource-seconds):
//!
//! ```text
//! U_r(t) = ∫ held_r(s) · 2^(-(t - s)/H) ds        over s ≤ t
//! ```
//!
//! It is normalised so that holding `x` for ever gives `x` (the integral of `2^(-s/H)` is
//! `H / ln 2`): `V_r = U_r · ln 2 / H`. Holdings are constant between two clock readings `t0`
//! and `t` (see below), so the integral is exact and the update is lazy, once per
//! [`set_time`](allocator_api::Sorter::set_time):
//!
//! ```text
//! d      = 2^(-(t - t0)/H)
//! V_r(t) = V_r(t0) · d + held_r · (1 - d)
//! ```
//!
//! which is Kueue's update (`α = 0.5^(interval/halfLife)`, new usage = old · α + current ·
//! (1 − α)) for any interval. The share, and the order:
//!
//! ```text
//! share(c) = max over counted names r with pool_r > 0 of ((1 − w) · V_r + w · held_r) / pool_r
//! order:     share / weight ascending, then the number of `allocated` calls, then the path
//! ```
//!
//! `w` is the parameter `current_weight`, in [0, 1]: 0 is decayed usage alone (Slurm's rule),
//! 1 is DRF on what is held now; a client that holds `x` for ever has share `x / pool` whatever
//! `w` is. The default, 0.1, keeps the order a matter of usage but lets a grant count at once:
//! with `w` = 0 a grant adds nothing to the share until time passes, so within one allocation
//! run the client with the least usage is first for every agent (replaying 300 pods of the
//! Alibaba trace with `drf_decay` as both sorters, the mean wait of role `ls` is 5.0 s with
//! `w` = 0 and 0.5 s, as under `drf`, with `w` = 0.1). Kueue's admission fair sharing meets the
//! same problem with an entry penalty added at admission. The order after the share is
//! DRF's ([`sorter_core::drf::DrfOrder`]), and so is what counts (names excluded by
//! `--fair_sharing_excluded_resource_names` and names with an empty pool count nothing;
//! revocable and reserved resources count under their plain name; a shared resource once).
//! Ordering by `V / weight` ascending is ordering by Slurm's classic fair-share factor
//! `2^(-U/S)` descending, the weight playing the part of the shares `S`.
//! [`dominant_share`](allocator_api::Sorter::dominant_share) answers `share(c)` (unweighted,
//! as DRF's), with the usage as of the last `set_time` (or, for a client added since, the last
//! sort).
//!
//! # Worked example
//!
//! One agent `cpus:100;mem:1000`, `H` = 600 s. Role `a` holds everything from t = 0 to 60, then
//! keeps `cpus:1;mem:10`; role `b` holds `cpus:99;mem:990` from t = 3540 to 3600. At t = 3660:
//!
//! | role | holds now | DRF share | decayed share |
//! |---|---|---|---|
//! | `a` | `cpus:1;mem:10` | 0.01 | `V` = (2^-6 − 2^-6.1) · 1 + 0.01 · (1 − 2^-6) ≈ 0.0109; 0.9 `V` + 0.1 · 0.01 ≈ 0.0108 |
//! | `b` | nothing | 0 | `V` = (2^-0.1 − 2^-0.2) · 0.99 ≈ 0.0619; 0.9 `V` ≈ 0.0557 |
//!
//! `drf` serves `b` first; `drf_decay` serves `a` first (the scenario test
//! `a_role_that_used_the_cluster_an_hour_ago_comes_before_one_that_used_it_a_minute_ago`
//! replays it through the built-in allocator).
//!
//! # Time, and what is remembered
//!
//! * The clock starts at the first `set_time`: nothing accrues before it. The built-in
//!   allocator calls it once per allocation run, before the run's first sort.
//! * A change heard between two readings counts from the earlier one: a grant made during a run
//!   counts from the run's time (exact); a give-back between runs counts from the last run (at
//!   most one allocation interval early).
//! * Usage is kept by client path. A client removed and added again at the same path finds its
//!   usage (decayed meanwhile); a removed client's usage still counts for its ancestors, and is
//!   forgotten once it has decayed below 10⁻⁹ of a unit of every resource.
//! * An inner node's usage is the sum of the usage of every client path below it, so a parent
//!   role's share is over its whole subtree, as DRF's holdings are.
//! * A sorter swapped in at run time (`set_sorters`) starts with no usage: it hears what is
//!   held now, and accrues from its first `set_time`.
//!
//! Cost: every `set_time` that moves the clock updates every remembered client (O(clients ×
//! resource names)) and marks the order for a full re-sort at the next `sort`, as a change of
//! weights does for DRF; between two readings, grants reorder incrementally as DRF's do.
//!
//! # Parameters
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `half_life` | `3600` | `H`, seconds (finite, positive) |
//! | `current_weight` | `0.1` | `w`, in [0, 1]: how much what a client holds now counts beside its decayed usage (0: usage alone; 1: DRF) |
//!
//! ```json
//! {"name": "drf_decay_sorter", "modules": [{"name": "drf_decay",
//!   "parameters": [{"key": "half_life", "value": "600"}]}]}
//! ```
#![deny(missing_docs)]

use std::collections::{HashMap, HashSet};

use allocator_api::{ClientId, Parameters, RVec, SorterConfig};
use sorter_core::drf::DrfOrder;
use sorter_core::{NodeKind, Ordered, Policy, Tree, TreeSorter};

/// Usage below this (in thousandths of a unit) for every name: a removed client's usage is
/// forgotten.
const FORGET_BELOW: f64 = 1e-6;

/// The default of `current_weight` (see the crate docs).
pub const DEFAULT_CURRENT_WEIGHT: f64 = 0.1;

/// Decayed usage by client path, and the DRF order over it.
#[derive(Debug)]
pub struct Decayed {
    half_life: f64,
    current_weight: f64,
    /// The last clock reading (`None` before the first).
    now: Option<f64>,
    /// `V` by client path, by the tree's name ids, in thousandths of a unit.
    usage: HashMap<String, Vec<f64>>,
    order: Ordered<DrfOrder>,
}

impl Decayed {
    /// A policy with half-life `half_life` seconds and `current_weight` (see the crate docs);
    /// an error names a value that is not finite and positive (`half_life`) or not in [0, 1]
    /// (`current_weight`).
    pub fn new(half_life: f64, current_weight: f64) -> Result<Decayed, String> {
        if !(half_life.is_finite() && half_life > 0.0) {
            return Err(format!("parameter 'half_life' = {half_life}: must be finite and > 0"));
        }
        if !(0.0..=1.0).contains(&current_weight) {
            return Err(format!(
                "parameter 'current_weight' = {current_weight}: must be between 0 and 1"
            ));
        }
        Ok(Decayed {
            half_life,
            current_weight,
            now: None,
            usage: HashMap::new(),
            order: Ordered::default(),
        })
    }

    /// The policy the module's parameters describe (`half_life`, `current_weight`).
    pub fn from_parameters(params: Parameters<'_>) -> Result<Decayed, String> {
        Decayed::new(
            params.parse_or("half_life", 3600.0)?,
            params.parse_or("current_weight", DEFAULT_CURRENT_WEIGHT)?,
        )
    }

    /// The half-life, in seconds.
    pub fn half_life(&self) -> f64 {
        self.half_life
    }

    /// How much what a client holds now counts beside its decayed usage (`w`).
    pub fn current_weight(&self) -> f64 {
        self.current_weight
    }

    /// The normalised decayed usage `V` of the client at `path`, by the tree's name ids, in
    /// thousandths of a unit (empty when it has none).
    pub fn usage_of(&self, path: &str) -> &[f64] {
        self.usage.get(path).map_or(&[], Vec::as_slice)
    }

    /// Moves the clock to `now`: every remembered usage decays by `d = 2^(-(now - t0)/H)` and
    /// every client adds what it holds × `(1 - d)`. Returns whether the clock moved.
    fn advance(&mut self, tree: &Tree, now: f64) -> bool {
        let last = match self.now {
            Some(last) if now > last => last,
            Some(_) => return false,
            None => {
                // The clock starts here.
                self.now = Some(now);
                return false;
            }
        };
        self.now = Some(now);
        let decay = (-(now - last) / self.half_life).exp2();
        let gain = 1.0 - decay;
        for u in self.usage.values_mut() {
            for x in u.iter_mut() {
                *x *= decay;
            }
        }
        let mut present = HashSet::with_capacity(tree.client_count());
        for (_, leaf) in tree.clients() {
            let path = tree.node(leaf).client_path.as_str();
            let held = tree.holdings(leaf);
            present.insert(path);
            if held.iter().all(|&h| h == 0) {
                continue;
            }
            let u = match self.usage.get_mut(path) {
                Some(u) => u,
                None => self.usage.entry(path.to_owned()).or_default(),
            };
            accrue(u, held, gain);
        }
        self.usage.retain(|path, u| {
            present.contains(path.as_str()) || u.iter().any(|&x| x >= FORGET_BELOW)
        });
        true
    }

    /// Gives every node of the tree its usage, weighted `1 − w`: each remembered path's usage
    /// goes to the client's leaf (or, for a removed client, to the deepest node left on its
    /// path) and to every ancestor.
    fn apply(&self, tree: &mut Tree) {
        tree.clear_usage();
        let keep = 1.0 - self.current_weight;
        let mut scaled = Vec::new();
        for (path, u) in &self.usage {
            if let Some(node) = target(tree, path) {
                scaled.clear();
                scaled.extend(u.iter().map(|x| x * keep));
                tree.add_usage(node, &scaled);
            }
        }
    }
}

/// `u ← u + held × gain`, name by name (`u` grows to the names `held` has).
fn accrue(u: &mut Vec<f64>, held: &[i64], gain: f64) {
    if u.len() < held.len() {
        u.resize(held.len(), 0.0);
    }
    for (x, &h) in u.iter_mut().zip(held) {
        *x += h as f64 * gain;
    }
}

/// The node that carries the usage of client path `path`: the client's leaf (`a/.` when it
/// has children), or for a path with no client now, the deepest node left on it.
fn target(tree: &Tree, path: &str) -> Option<usize> {
    if let Some(i) = tree.node_at(path) {
        if tree.node(i).kind == NodeKind::Internal {
            return Some(tree.node_at(&format!("{path}/.")).unwrap_or(i));
        }
        return Some(i);
    }
    let mut prefix = path;
    while let Some((head, _)) = prefix.rsplit_once('/') {
        if let Some(i) = tree.node_at(head) {
            return Some(i);
        }
        prefix = head;
    }
    None
}

impl Policy for Decayed {
    fn configure(&self, tree: &mut Tree) {
        tree.share_on_usage(self.current_weight);
    }

    fn on_allocated(&mut self, tree: &mut Tree, leaf: usize) {
        self.order.on_allocated(tree, leaf);
    }

    fn sort(&mut self, tree: &mut Tree, dirty: bool, out: &mut RVec<ClientId>) {
        if dirty {
            self.apply(tree);
        }
        self.order.sort(tree, dirty, out);
    }

    fn sort_prefix(
        &mut self,
        tree: &mut Tree,
        dirty: bool,
        len: usize,
        out: &mut RVec<ClientId>,
    ) -> bool {
        if dirty {
            self.apply(tree);
        }
        self.order.sort_prefix(tree, dirty, len, out)
    }

    fn set_time(&mut self, tree: &mut Tree, now: f64) -> bool {
        let moved = self.advance(tree, now);
        if moved {
            self.apply(tree);
        }
        moved
    }
}

/// The decayed-DRF sorter.
pub type DrfDecaySorter = TreeSorter<Decayed>;

/// Creates a decayed-DRF sorter with the given policy.
pub fn with_policy(config: &SorterConfig, policy: Decayed) -> DrfDecaySorter {
    DrfDecaySorter::new(config, policy)
}

/// Creates a decayed-DRF sorter (the module's factory): parameters `half_life` and
/// `current_weight` (see the crate docs).
pub fn create(config: &SorterConfig, params: Parameters<'_>) -> Result<DrfDecaySorter, String> {
    Ok(with_policy(config, Decayed::from_parameters(params)?))
}

allocator_api::export_modules! {
    sorter {
        name: "drf_decay",
        author: "allocator project",
        description: "Dominant Resource Fairness on usage decayed with a half-life (Slurm, Kueue)",
        create: create,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use allocator_api::{AgentId, ErrorKind, Quantities, Resources, Sorter};

    const H: f64 = 600.0;

    fn res(text: &str) -> Resources {
        text.parse().unwrap()
    }

    /// A sorter with half-life `H`, one agent `cpus:100;mem:1000` and active clients at
    /// `paths` (client `i` at `paths[i]`), its clock started at 0.
    fn sorter(paths: &[&str], current_weight: f64) -> DrfDecaySorter {
        let policy = Decayed::new(H, current_weight).unwrap();
        let mut s = with_policy(&SorterConfig::default(), policy);
        assert!(s.keep_scalars_only());
        s.add_agent(AgentId(0), &Quantities::parse("cpus:100;mem:1000").unwrap()).unwrap();
        for (c, path) in (0..).zip(paths) {
            s.add(ClientId(c), path).unwrap();
            s.activate(ClientId(c)).unwrap();
        }
        s.set_time(0.0).unwrap();
        s
    }

    fn share(s: &DrfDecaySorter, c: u32) -> f64 {
        s.dominant_share(ClientId(c)).unwrap()
    }

    fn order(s: &mut DrfDecaySorter) -> Vec<u32> {
        let mut out = RVec::new();
        s.sort(&mut out).unwrap();
        out.iter().map(|c| c.0).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-3)
    }

    #[test]
    fn usage_halves_after_one_half_life() {
        let mut s = sorter(&["a"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:50")).unwrap();
        s.set_time(1000.0).unwrap();
        s.unallocated(ClientId(0), AgentId(0), &res("cpus:50")).unwrap();
        s.set_time(1000.0).unwrap();
        let before = share(&s, 0);
        assert!(close(before, 0.5 * (1.0 - (-1000.0 / H).exp2())), "{before}");
        for k in 1..=4 {
            s.set_time(1000.0 + f64::from(k) * H).unwrap();
            let now = share(&s, 0);
            assert!(close(now, before / f64::from(1 << k)), "after {k} half-lives: {now}");
        }
    }

    #[test]
    fn the_integral_is_exact_for_piecewise_constant_holdings() {
        // Holdings: cpus:40 on [0, 100), cpus:10 on [100, 700), nothing on [700, 1000].
        let steps: [(f64, &str, &str); 3] =
            [(100.0, "cpus:40", "cpus:30"), (700.0, "cpus:10", "cpus:10"), (1000.0, "", "")];
        // Read the clock once per step, or every second: the same usage.
        let mut coarse = sorter(&["a"], 0.0);
        let mut fine = sorter(&["a"], 0.0);
        for s in [&mut coarse, &mut fine] {
            s.allocated(ClientId(0), AgentId(0), &res("cpus:40")).unwrap();
        }
        let mut t = 0.0;
        for (end, _, give_back) in steps {
            coarse.set_time(end).unwrap();
            while t < end {
                t += 1.0;
                fine.set_time(t).unwrap();
            }
            if !give_back.is_empty() {
                for s in [&mut coarse, &mut fine] {
                    s.unallocated(ClientId(0), AgentId(0), &res(give_back)).unwrap();
                }
            }
        }
        // ∫ held(s) 2^(-(t-s)/H) ds · ln 2 / H over each piece, ÷ the pool (cpus:100).
        let piece = |held: f64, from: f64, to: f64| {
            held * ((-(1000.0 - to) / H).exp2() - (-(1000.0 - from) / H).exp2()) / 100.0
        };
        let exact = piece(40.0, 0.0, 100.0) + piece(10.0, 100.0, 700.0);
        assert!(close(share(&coarse, 0), exact), "{} vs {exact}", share(&coarse, 0));
        assert!((share(&fine, 0) - exact).abs() < 1e-9, "{} vs {exact}", share(&fine, 0));
    }

    #[test]
    fn a_client_that_used_the_cluster_an_hour_ago_comes_before_one_that_used_it_a_minute_ago() {
        let mut s = sorter(&["a", "b"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:100;mem:1000")).unwrap();
        s.set_time(60.0).unwrap();
        s.unallocated(ClientId(0), AgentId(0), &res("cpus:99;mem:990")).unwrap();
        s.set_time(3540.0).unwrap();
        s.allocated(ClientId(1), AgentId(0), &res("cpus:99;mem:990")).unwrap();
        s.set_time(3600.0).unwrap();
        s.unallocated(ClientId(1), AgentId(0), &res("cpus:99;mem:990")).unwrap();
        s.set_time(3660.0).unwrap();
        // `a` still holds cpus:1 (DRF would serve `b` first); its usage is older.
        assert_eq!(order(&mut s), [0, 1]);
        let a = (-6.0f64).exp2() - (-6.1f64).exp2() + 0.01 * (1.0 - (-6.0f64).exp2());
        let b = 0.99 * ((-0.1f64).exp2() - (-0.2f64).exp2());
        assert!(close(share(&s, 0), a), "{} vs {a}", share(&s, 0));
        assert!(close(share(&s, 1), b), "{} vs {b}", share(&s, 1));
    }

    #[test]
    fn a_grant_counts_in_the_share_as_time_passes_and_as_current_weight_says_at_once() {
        for w in [0.0, 0.1, 1.0] {
            let mut s = sorter(&["a"], w);
            s.allocated(ClientId(0), AgentId(0), &res("cpus:10")).unwrap();
            assert!(close(share(&s, 0), w * 0.1), "current_weight {w}: {}", share(&s, 0));
            s.set_time(1.0).unwrap();
            let used = 0.1 * (1.0 - (-1.0 / H).exp2());
            let want = (1.0 - w) * used + w * 0.1;
            assert!(close(share(&s, 0), want), "current_weight {w}: {}", share(&s, 0));
        }
    }

    #[test]
    fn holding_a_part_for_ever_tends_to_its_drf_share_whatever_the_current_weight() {
        for w in [0.0, 0.1, 0.5, 1.0] {
            let mut s = sorter(&["a"], w);
            s.allocated(ClientId(0), AgentId(0), &res("cpus:30;mem:100")).unwrap();
            s.set_time(60.0 * H).unwrap();
            assert!(close(share(&s, 0), 0.3), "current_weight {w}: {}", share(&s, 0));
        }
    }

    #[test]
    fn with_current_weight_one_the_order_is_drf_on_what_is_held_now() {
        let mut s = sorter(&["a", "b"], 1.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:90")).unwrap();
        s.set_time(H).unwrap();
        s.unallocated(ClientId(0), AgentId(0), &res("cpus:90")).unwrap();
        s.allocated(ClientId(1), AgentId(0), &res("cpus:1")).unwrap();
        s.set_time(H + 1.0).unwrap();
        assert_eq!(order(&mut s), [0, 1], "a holds nothing now, b cpus:1");
    }

    #[test]
    fn weights_divide_the_decayed_share() {
        let mut s = sorter(&["a", "b"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:20")).unwrap();
        s.allocated(ClientId(1), AgentId(0), &res("cpus:30")).unwrap();
        s.set_time(H).unwrap();
        assert_eq!(order(&mut s), [0, 1]);
        s.update_weight("b", 2.0).unwrap();
        assert_eq!(order(&mut s), [1, 0], "0.15 / 2 < 0.1");
        assert!(close(share(&s, 1), 0.15), "dominant_share is unweighted: {}", share(&s, 1));
    }

    #[test]
    fn equal_usage_falls_back_to_the_drf_tie_break() {
        let mut s = sorter(&["b", "a"], 0.0);
        assert_eq!(order(&mut s), [1, 0], "by path");
        s.allocated(ClientId(1), AgentId(0), &res("cpus:1")).unwrap();
        assert_eq!(order(&mut s), [0, 1], "by allocation count");
    }

    #[test]
    fn usage_is_kept_by_path_across_remove_and_add_and_counts_for_the_parent() {
        let mut s = sorter(&["eng/ml", "eng/web", "ops"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:50")).unwrap();
        s.allocated(ClientId(2), AgentId(0), &res("cpus:10")).unwrap();
        s.set_time(H).unwrap();
        s.unallocated(ClientId(0), AgentId(0), &res("cpus:50")).unwrap();
        s.remove(ClientId(0)).unwrap();
        s.set_time(2.0 * H).unwrap();
        // `eng` holds nothing now, but `eng/ml` used 0.25 by H, decayed to 0.125 by 2H; `ops`
        // used 0.05 by H, 0.025 + 0.05 by 2H.
        assert_eq!(order(&mut s), [2, 1], "ops (0.075) before eng (0.125): by subtree usage");
        s.add(ClientId(5), "eng/ml").unwrap();
        s.activate(ClientId(5)).unwrap();
        assert_eq!(order(&mut s), [2, 1, 5], "ml's usage came back with its path");
        assert!(close(share(&s, 5), 0.125), "{}", share(&s, 5));
    }

    #[test]
    fn a_client_that_gains_children_keeps_its_usage_in_its_virtual_leaf() {
        let mut s = sorter(&["a", "b"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:10")).unwrap();
        s.set_time(H).unwrap();
        let before = share(&s, 0);
        s.add(ClientId(2), "a/x").unwrap();
        s.activate(ClientId(2)).unwrap();
        order(&mut s);
        assert!(close(share(&s, 0), before), "{} vs {before}", share(&s, 0));
        assert_eq!(order(&mut s), [1, 2, 0], "b (0) first; a/x (0) before a/. (0.05)");
    }

    #[test]
    fn time_that_does_not_move_changes_nothing() {
        let mut s = sorter(&["a"], 0.0);
        s.allocated(ClientId(0), AgentId(0), &res("cpus:10")).unwrap();
        s.set_time(10.0).unwrap();
        let at_ten = share(&s, 0);
        s.set_time(10.0).unwrap();
        s.set_time(5.0).unwrap();
        assert_eq!(share(&s, 0), at_ten);
    }

    #[test]
    fn excluded_names_count_nothing() {
        let config = SorterConfig {
            fairness_excluded_resource_names: vec!["gpus".into()].into(),
            ..SorterConfig::default()
        };
        let mut s = with_policy(&config, Decayed::new(H, 0.0).unwrap());
        s.add_agent(AgentId(0), &Quantities::parse("cpus:100;gpus:4").unwrap()).unwrap();
        s.add(ClientId(0), "a").unwrap();
        s.set_time(0.0).unwrap();
        s.allocated(ClientId(0), AgentId(0), &res("cpus:1;gpus:4")).unwrap();
        s.set_time(60.0 * H).unwrap();
        assert!(close(share(&s, 0), 0.01), "{}", share(&s, 0));
    }

    #[test]
    fn unknown_clients_are_rejected() {
        let mut s = sorter(&["a"], 0.0);
        let e = s.allocated(ClientId(9), AgentId(0), &res("cpus:1")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::REJECTED);
        assert_eq!(s.dominant_share(ClientId(9)), None);
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        use allocator_api::abi::Parameter;
        let p = |k: &str, v: &str| [Parameter { key: k.into(), value: v.into() }];
        for (k, v, said) in [
            ("half_life", "0", "parameter 'half_life' = 0"),
            ("half_life", "-5", "parameter 'half_life' = -5"),
            ("half_life", "soon", "parameter 'half_life' = 'soon'"),
            ("current_weight", "-1", "parameter 'current_weight' = -1"),
            ("current_weight", "1.5", "parameter 'current_weight' = 1.5"),
            ("current_weight", "NaN", "parameter 'current_weight' = NaN"),
        ] {
            let e = Decayed::from_parameters(Parameters(&p(k, v))).unwrap_err();
            assert!(e.starts_with(said), "{k}={v}: {e}");
        }
        let ok = Decayed::from_parameters(Parameters(&p("half_life", "600"))).unwrap();
        assert_eq!(ok.half_life(), 600.0);
        let default = Decayed::from_parameters(Parameters(&[])).unwrap();
        assert_eq!((default.half_life(), default.current_weight()), (3600.0, 0.1));
    }
}

//! `SweepCost`: what a sweep used (core-seconds and GPU-seconds per node, measured as the busy
//! time of its scorers) and, given a small price file, what it cost on owned hardware against
//! rented instances and the utilisation at which owning breaks even. Written as `cost.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::node_stats::NodeStats;

/// Seconds in a year (365 days).
const YEAR_S: f64 = 365.0 * 86_400.0;

/// Prices of owned and rented hardware (`--prices FILE`, JSON).
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// let p: gridtest::sweep::Prices = serde_json::from_str(r#"{
///   "owned": { "hardware_cost": 20000, "lifetime_years": 4, "cores": 64, "watts": 500 },
///   "power_price_per_kwh": 0.2,
///   "rented": { "per_hour": 4.0, "cores": 64 }
/// }"#)?;
/// assert_eq!(p.owned.cores, 64);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// An owned machine.
    pub owned: OwnedMachine,
    /// Price of electricity, per kWh.
    pub power_price_per_kwh: f64,
    /// A rented instance.
    pub rented: RentedMachine,
}

/// An owned machine: its price, written off over its lifetime, and its power draw under load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnedMachine {
    /// Purchase price (any currency, the same as the others).
    pub hardware_cost: f64,
    /// Years it is written off over.
    pub lifetime_years: f64,
    /// Its cores.
    pub cores: u32,
    /// Watts it draws under load.
    pub watts: f64,
}

/// A rented instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RentedMachine {
    /// Price per hour.
    pub per_hour: f64,
    /// Its cores.
    pub cores: u32,
}

/// What a sweep used and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepCost {
    /// Core-seconds per node: the busy time of its CPU scorers (one core each).
    pub core_seconds: BTreeMap<String, f64>,
    /// GPU scorer-seconds per GPU scorer (several scorers may share a device, so their sum can
    /// exceed the device's time).
    pub gpu_scorer_seconds: BTreeMap<String, f64>,
    /// GPU scorer-seconds per node (its GPU scorers' sum).
    #[serde(default)]
    pub gpu_scorer_seconds_per_node: BTreeMap<String, f64>,
    /// All core-seconds.
    pub total_core_seconds: f64,
    /// All GPU scorer-seconds.
    pub total_gpu_scorer_seconds: f64,
    /// Energy the devices used during the sweep, joules, from NVML's counters (none: no device
    /// reported it).
    pub gpu_energy_joules: Option<f64>,
    /// The same per device (`node/gpuD`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gpu_energy_per_device: BTreeMap<String, f64>,
    /// Bytes the sweep read from its dataset, and the dataset's bytes (a store bills transfer
    /// and requests by them).
    #[serde(default)]
    pub reads: crate::data::DataReads,
    /// Bytes read per byte of the dataset.
    #[serde(default)]
    pub read_ratio: f64,
    /// The prices, when given.
    pub prices: Option<Prices>,
    /// On owned hardware kept busy all the time: the write-off of the core-hours used plus their
    /// power (at utilisation `u` the write-off share is `1/u` times larger).
    pub owned_cost: Option<f64>,
    /// On rented instances: the core-seconds at the rented price per core-hour.
    pub rented_cost: Option<f64>,
    /// Share of the time an owned machine must be busy for owning to cost less than renting
    /// (`None`: owning never does, at these prices).
    pub break_even_utilisation: Option<f64>,
}

impl SweepCost {
    /// The cost of a sweep whose nodes and GPU scorers did `nodes` and `gpu_scorers`, priced
    /// with `prices` when given.
    ///
    /// Per core-hour: owning costs `hardware_cost / (lifetime · cores)` for every hour of its
    /// life, busy or not, plus `watts / cores` of power when busy; renting costs
    /// `per_hour / cores` when busy. Owning breaks even at the utilisation `u` where
    /// `fixed = u · (rented − power)`.
    ///
    /// ```
    /// # extern crate gridtest_sweep as gridtest;
    /// use std::collections::BTreeMap;
    /// use gridtest::sweep::{NodeStats, Prices, SweepCost};
    /// let nodes = BTreeMap::from([("a".to_owned(), NodeStats {
    ///     busy: std::time::Duration::from_secs(3600), ..NodeStats::default() })]);
    /// let prices: Prices = serde_json::from_str(r#"{
    ///   "owned": { "hardware_cost": 8760, "lifetime_years": 1, "cores": 1, "watts": 1000 },
    ///   "power_price_per_kwh": 0.5, "rented": { "per_hour": 2.0, "cores": 1 } }"#)?;
    /// let c = SweepCost::measure(&nodes, &BTreeMap::new(), Some(prices));
    /// // one core-hour: owned 8760/(365·24) = 1.0 write-off + 1 kWh · 0.5; rented 2.0
    /// assert!((c.owned_cost.unwrap() - (8760.0 / (365.0 * 24.0) + 0.5)).abs() < 1e-12);
    /// assert_eq!(c.rented_cost, Some(2.0));
    /// // fixed 1.0 per hour = u · (2.0 − 0.5) → u = 2/3
    /// assert!((c.break_even_utilisation.unwrap() - 8760.0 / (365.0 * 24.0) / 1.5).abs() < 1e-12);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn measure(
        nodes: &BTreeMap<String, NodeStats>,
        gpu_scorers: &BTreeMap<String, NodeStats>,
        prices: Option<Prices>,
    ) -> Self {
        let seconds = |m: &BTreeMap<String, NodeStats>| -> BTreeMap<String, f64> {
            m.iter()
                .map(|(k, s)| (k.clone(), s.busy.as_secs_f64()))
                .collect()
        };
        let core_seconds = seconds(nodes);
        let gpu_scorer_seconds = seconds(gpu_scorers);
        let total_core_seconds = core_seconds.values().sum::<f64>();
        let mut per_node = BTreeMap::<String, f64>::new();
        for (scorer, s) in &gpu_scorer_seconds {
            // A GPU scorer is named `node/gpuD-K`.
            let node = scorer.rsplit_once('/').map_or(scorer.as_str(), |(n, _)| n);
            *per_node.entry(node.to_owned()).or_default() += s;
        }
        let mut cost = Self {
            total_gpu_scorer_seconds: gpu_scorer_seconds.values().sum(),
            gpu_scorer_seconds_per_node: per_node,
            core_seconds,
            gpu_scorer_seconds,
            total_core_seconds,
            gpu_energy_joules: None,
            gpu_energy_per_device: BTreeMap::new(),
            reads: crate::data::DataReads::default(),
            read_ratio: 0.0,
            prices: None,
            owned_cost: None,
            rented_cost: None,
            break_even_utilisation: None,
        };
        if let Some(p) = prices {
            let core_hours = total_core_seconds / 3600.0;
            let owned_cores = f64::from(p.owned.cores.max(1));
            let fixed =
                p.owned.hardware_cost / (p.owned.lifetime_years * YEAR_S / 3600.0) / owned_cores;
            let power = p.owned.watts / 1000.0 * p.power_price_per_kwh / owned_cores;
            let rented = p.rented.per_hour / f64::from(p.rented.cores.max(1));
            cost.owned_cost = Some(core_hours * (fixed + power));
            cost.rented_cost = Some(core_hours * rented);
            cost.break_even_utilisation = (rented > power).then(|| fixed / (rented - power));
            cost.prices = Some(p);
        }
        cost
    }

    /// The same cost with the energy each device (`node/gpuD`) used, joules.
    ///
    /// ```
    /// # extern crate gridtest_sweep as gridtest;
    /// use std::collections::BTreeMap;
    /// use gridtest::sweep::SweepCost;
    /// let idle = SweepCost::measure(&BTreeMap::new(), &BTreeMap::new(), None);
    /// assert_eq!(idle.clone().with_gpu_energy(BTreeMap::new()).gpu_energy_joules, None);
    /// let two = BTreeMap::from([("n/gpu0".to_owned(), 150.0), ("n/gpu1".to_owned(), 50.0)]);
    /// assert_eq!(idle.with_gpu_energy(two).gpu_energy_joules, Some(200.0));
    /// ```
    #[must_use]
    pub fn with_gpu_energy(mut self, per_device: BTreeMap<String, f64>) -> Self {
        self.gpu_energy_joules = (!per_device.is_empty()).then(|| per_device.values().sum());
        self.gpu_energy_per_device = per_device;
        self
    }

    /// The same cost with what the sweep read from its dataset.
    #[must_use]
    pub fn with_reads(mut self, reads: crate::data::DataReads) -> Self {
        self.reads = reads;
        self.read_ratio = reads.ratio();
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn gpu_scorer_seconds_add_up_per_node() {
        let busy = |s: u64| NodeStats {
            busy: Duration::from_secs(s),
            ..NodeStats::default()
        };
        let scorers = BTreeMap::from([
            ("w1/gpu0-0".to_owned(), busy(10)),
            ("w1/gpu0-1".to_owned(), busy(5)),
            ("w1/gpu1-0".to_owned(), busy(1)),
            ("w2/gpu0-0".to_owned(), busy(7)),
        ]);
        let cost = SweepCost::measure(&BTreeMap::new(), &scorers, None);
        let per_node: Vec<(&str, f64)> = cost
            .gpu_scorer_seconds_per_node
            .iter()
            .map(|(n, s)| (n.as_str(), *s))
            .collect();
        assert_eq!(per_node, [("w1", 16.0), ("w2", 7.0)]);
        assert_eq!(cost.total_gpu_scorer_seconds, 23.0);
    }
}

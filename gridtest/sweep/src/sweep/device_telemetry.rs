//! `DeviceTelemetry`: one reading of a node's device (a GPU), as the supervisor receives it.

use serde::{Deserialize, Serialize};

/// One reading of one device: clock against its maximum, temperature, throttling, energy used.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceTelemetry {
    /// The device on its node (`gpu0`).
    pub device: String,
    /// Current SM clock, MHz.
    pub sm_clock_mhz: u32,
    /// Maximum SM clock, MHz.
    pub max_sm_clock_mhz: u32,
    /// Temperature, °C.
    pub temperature_c: u32,
    /// Whether the device reports a thermal or power slowdown.
    pub throttled: bool,
    /// Energy the device used since its driver loaded, millijoules (NVML's counter, Volta and
    /// later; `None` where the device does not report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_mj: Option<u64>,
}

impl std::fmt::Display for DeviceTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}/{} MHz {}°C{}",
            self.device,
            self.sm_clock_mhz,
            self.max_sm_clock_mhz,
            self.temperature_c,
            if self.throttled { " throttled" } else { "" }
        )
    }
}

//! GPU telemetry through NVML (loaded at run time; absent NVML means no telemetry, never an
//! error): SM clock against its maximum, temperature, and whether the card is throttling, so a
//! throttled card shows in the head's progress view.

use std::sync::OnceLock;

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().ok()).as_ref()
}

/// One reading of one GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuTelemetry {
    /// Device ordinal.
    pub ordinal: u32,
    /// Current SM clock, MHz.
    pub sm_clock_mhz: u32,
    /// Maximum SM clock, MHz.
    pub max_sm_clock_mhz: u32,
    /// GPU temperature, °C.
    pub temperature_c: u32,
    /// Whether the card reports a thermal or power slowdown.
    pub throttled: bool,
    /// Energy since the driver loaded, millijoules (Volta and later).
    pub energy_mj: Option<u64>,
}

impl std::fmt::Display for GpuTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "gpu{} {}/{} MHz {}°C{}",
            self.ordinal,
            self.sm_clock_mhz,
            self.max_sm_clock_mhz,
            self.temperature_c,
            if self.throttled { " THROTTLED" } else { "" }
        )
    }
}

impl GpuTelemetry {
    /// As the supervisor receives it.
    #[must_use]
    pub fn reading(self) -> gridtest::sweep::DeviceTelemetry {
        gridtest::sweep::DeviceTelemetry {
            device: format!("gpu{}", self.ordinal),
            sm_clock_mhz: self.sm_clock_mhz,
            max_sm_clock_mhz: self.max_sm_clock_mhz,
            temperature_c: self.temperature_c,
            throttled: self.throttled,
            energy_mj: self.energy_mj,
        }
    }
}

/// Reads device `ordinal`, or `None` without NVML.
#[must_use]
pub fn sample(ordinal: u32) -> Option<GpuTelemetry> {
    let device = nvml()?.device_by_index(ordinal).ok()?;
    let slow = ThrottleReasons::HW_SLOWDOWN
        | ThrottleReasons::SW_THERMAL_SLOWDOWN
        | ThrottleReasons::HW_THERMAL_SLOWDOWN
        | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN;
    Some(GpuTelemetry {
        ordinal,
        sm_clock_mhz: device.clock_info(Clock::SM).unwrap_or(0),
        max_sm_clock_mhz: device.max_clock_info(Clock::SM).unwrap_or(0),
        temperature_c: device.temperature(TemperatureSensor::Gpu).unwrap_or(0),
        throttled: device
            .current_throttle_reasons()
            .is_ok_and(|r| r.intersects(slow)),
        energy_mj: device.total_energy_consumption().ok(),
    })
}

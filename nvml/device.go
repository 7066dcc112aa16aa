package nvml

import "strings"

// ClockType selects a clock domain (nvmlClockType_t).
type ClockType uint32

// Clock domains.
const (
	ClockGraphics ClockType = 0
	ClockSM       ClockType = 1
	ClockMem      ClockType = 2
	ClockVideo    ClockType = 3
)

// Clock-event reasons (nvmlClocksEventReason*, formerly ClocksThrottleReason*):
// bits of the mask returned by Device.ClockEventReasons.
const (
	ReasonGPUIdle                   uint64 = 0x1
	ReasonApplicationsClocksSetting uint64 = 0x2
	ReasonSWPowerCap                uint64 = 0x4
	ReasonHWSlowdown                uint64 = 0x8
	ReasonSyncBoost                 uint64 = 0x10
	ReasonSWThermalSlowdown         uint64 = 0x20
	ReasonHWThermalSlowdown         uint64 = 0x40
	ReasonHWPowerBrakeSlowdown      uint64 = 0x80
	ReasonDisplayClockSetting       uint64 = 0x100
)

var reasonNames = []struct {
	bit  uint64
	name string
}{
	{ReasonGPUIdle, "gpu_idle"},
	{ReasonApplicationsClocksSetting, "applications_clocks_setting"},
	{ReasonSWPowerCap, "sw_power_cap"},
	{ReasonHWSlowdown, "hw_slowdown"},
	{ReasonSyncBoost, "sync_boost"},
	{ReasonSWThermalSlowdown, "sw_thermal_slowdown"},
	{ReasonHWThermalSlowdown, "hw_thermal_slowdown"},
	{ReasonHWPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{ReasonDisplayClockSetting, "display_clock_setting"},
}

// ReasonNames names the bits set in a clock-event-reason mask, in bit
// order, joined by "|" ("" for 0). Unknown bits appear as hex.
func ReasonNames(mask uint64) string {
	var parts []string
	for _, r := range reasonNames {
		if mask&r.bit != 0 {
			parts = append(parts, r.name)
			mask &^= r.bit
		}
	}
	if mask != 0 {
		parts = append(parts, "0x"+strings.TrimLeft(hex64(mask), "0"))
	}
	return strings.Join(parts, "|")
}

func hex64(v uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b)
}

// Device is one GPU's NVML handle. Its methods only read.
type Device struct {
	lib *Lib
	h   uintptr
}

// Valid reports whether d came from a successful lookup.
func (d Device) Valid() bool { return d.lib != nil && d.h != 0 }

func (d Device) str(fn string, call func(*byte, uint32) Return) (string, error) {
	if !d.lib.has(fn) {
		return "", d.lib.absent(fn)
	}
	buf := make([]byte, 256)
	if err := d.lib.check(fn, call(&buf[0], uint32(len(buf)))); err != nil {
		return "", err
	}
	return cstr(buf), nil
}

func (d Device) u32(fn string, call func(*uint32) Return) (uint32, error) {
	if !d.lib.has(fn) {
		return 0, d.lib.absent(fn)
	}
	var v uint32
	if err := d.lib.check(fn, call(&v)); err != nil {
		return 0, err
	}
	return v, nil
}

// Name is the product name, e.g. "NVIDIA H100 80GB HBM3".
func (d Device) Name() (string, error) {
	return d.str("nvmlDeviceGetName", func(b *byte, n uint32) Return { return d.lib.nvmlGetName(d.h, b, n) })
}

// UUID is the GPU's UUID, "GPU-xxxxxxxx-...".
func (d Device) UUID() (string, error) {
	return d.str("nvmlDeviceGetUUID", func(b *byte, n uint32) Return { return d.lib.nvmlGetUUID(d.h, b, n) })
}

// TotalEnergyMJ is the energy counter in millijoules since the driver was
// last loaded (nvmlDeviceGetTotalEnergyConsumption; Volta and newer). The
// counter advances in steps at the driver's update period, not
// continuously.
func (d Device) TotalEnergyMJ() (uint64, error) {
	const fn = "nvmlDeviceGetTotalEnergyConsumption"
	if !d.lib.has(fn) {
		return 0, d.lib.absent(fn)
	}
	var v uint64
	if err := d.lib.check(fn, d.lib.nvmlGetTotalEnergy(d.h, &v)); err != nil {
		return 0, err
	}
	return v, nil
}

// PowerUsageMW is the board's power draw in milliwatts
// (nvmlDeviceGetPowerUsage; on recent GPUs an average over about 1 s).
func (d Device) PowerUsageMW() (uint32, error) {
	return d.u32("nvmlDeviceGetPowerUsage", func(v *uint32) Return { return d.lib.nvmlGetPowerUsage(d.h, v) })
}

// EnforcedPowerLimitMW is the power limit in force, mW
// (nvmlDeviceGetEnforcedPowerLimit).
func (d Device) EnforcedPowerLimitMW() (uint32, error) {
	return d.u32("nvmlDeviceGetEnforcedPowerLimit", func(v *uint32) Return { return d.lib.nvmlGetEnforcedLimit(d.h, v) })
}

// PowerLimitConstraintsMW is the range a power limit may be set to, mW
// (nvmlDeviceGetPowerManagementLimitConstraints).
func (d Device) PowerLimitConstraintsMW() (minMW, maxMW uint32, err error) {
	const fn = "nvmlDeviceGetPowerManagementLimitConstraints"
	if !d.lib.has(fn) {
		return 0, 0, d.lib.absent(fn)
	}
	err = d.lib.check(fn, d.lib.nvmlGetLimitRange(d.h, &minMW, &maxMW))
	return minMW, maxMW, err
}

// DefaultPowerLimitMW is the factory power limit, mW
// (nvmlDeviceGetPowerManagementDefaultLimit).
func (d Device) DefaultPowerLimitMW() (uint32, error) {
	return d.u32("nvmlDeviceGetPowerManagementDefaultLimit", func(v *uint32) Return { return d.lib.nvmlGetDefaultLimit(d.h, v) })
}

// ClockMHz is the current clock of a domain, MHz (nvmlDeviceGetClockInfo).
func (d Device) ClockMHz(t ClockType) (uint32, error) {
	return d.u32("nvmlDeviceGetClockInfo", func(v *uint32) Return { return d.lib.nvmlGetClockInfo(d.h, t, v) })
}

// MaxClockMHz is the highest clock of a domain, MHz
// (nvmlDeviceGetMaxClockInfo).
func (d Device) MaxClockMHz(t ClockType) (uint32, error) {
	return d.u32("nvmlDeviceGetMaxClockInfo", func(v *uint32) Return { return d.lib.nvmlGetMaxClockInfo(d.h, t, v) })
}

// listClocks calls an NVML "supported clocks" function, growing the
// buffer when NVML answers INSUFFICIENT_SIZE.
func (d Device) listClocks(fn string, call func(n *uint32, buf *uint32) Return) ([]uint32, error) {
	if !d.lib.has(fn) {
		return nil, d.lib.absent(fn)
	}
	size := uint32(128)
	for range 4 {
		buf := make([]uint32, size)
		n := size
		r := call(&n, &buf[0])
		if r == ErrorInsufficientSize && n > size {
			size = n
			continue
		}
		if err := d.lib.check(fn, r); err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
	return nil, &Error{Func: fn, Code: ErrorInsufficientSize, Msg: "list keeps growing"}
}

// SupportedMemoryClocksMHz lists the memory clocks the GPU supports, MHz,
// as NVML orders them (highest first). Read-only: listing changes nothing.
func (d Device) SupportedMemoryClocksMHz() ([]uint32, error) {
	return d.listClocks("nvmlDeviceGetSupportedMemoryClocks", func(n, buf *uint32) Return {
		return d.lib.nvmlGetMemClocks(d.h, n, buf)
	})
}

// SupportedGraphicsClocksMHz lists the graphics clocks supported with the
// memory clock memMHz, MHz, highest first.
func (d Device) SupportedGraphicsClocksMHz(memMHz uint32) ([]uint32, error) {
	return d.listClocks("nvmlDeviceGetSupportedGraphicsClocks", func(n, buf *uint32) Return {
		return d.lib.nvmlGetGraphicsClocks(d.h, memMHz, n, buf)
	})
}

// TemperatureC is the GPU die temperature, °C (nvmlDeviceGetTemperature,
// sensor NVML_TEMPERATURE_GPU).
func (d Device) TemperatureC() (uint32, error) {
	return d.u32("nvmlDeviceGetTemperature", func(v *uint32) Return { return d.lib.nvmlGetTemperature(d.h, 0, v) })
}

// ClockEventReasons is the mask of reasons the clocks are below their
// maximum right now (Reason* bits), from
// nvmlDeviceGetCurrentClocksEventReasons or, on drivers before 535,
// nvmlDeviceGetCurrentClocksThrottleReasons.
func (d Device) ClockEventReasons() (uint64, error) {
	const fn = "nvmlDeviceGetCurrentClocksEventReasons"
	if !d.lib.has(fn) {
		return 0, d.lib.absent(fn)
	}
	var v uint64
	if err := d.lib.check(d.lib.eventReasonsName, d.lib.nvmlGetEventReasons(d.h, &v)); err != nil {
		return 0, err
	}
	return v, nil
}

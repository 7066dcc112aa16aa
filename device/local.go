package device

import (
	"fmt"
	"sort"
	"strings"
)

// MatchName returns a copy of the database description whose Name equals
// the driver's device name (case and surrounding space ignored), or nil.
func MatchName(name string) *Description {
	m, err := load()
	if err != nil {
		return nil
	}
	key := strings.ToLower(strings.TrimSpace(name))
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if strings.ToLower(m[id].Name) == key {
			return m[id].clone()
		}
	}
	return nil
}

// LookupName is MatchName with an error: the database description of a
// GPU by the product name its driver reports ("NVIDIA H100 80GB HBM3" is
// h100_sxm; case and surrounding space ignored). Error: a name not in the
// database, listing the known names with their ids.
func LookupName(name string) (*Description, error) {
	if d := MatchName(name); d != nil {
		return d, nil
	}
	var known []string
	for _, d := range All() {
		known = append(known, fmt.Sprintf("%q (%s)", d.Name, d.ID))
	}
	return nil, fmt.Errorf("GPU %q is not in the device database (known: %s)", name, strings.Join(known, ", "))
}

// FromLocal returns the description of the local GPU: base (the database
// file for this model; nil when there is none) with every value the driver
// reports in info overriding it — compute capability, SM count, threads,
// blocks, registers and shared memory per SM and per block, opt-in and
// reserved shared memory (cuDeviceGetAttribute), memory size, L2 size, and
// from NVML the supported clocks per memory clock and the power-limit
// constraints. Zero values in info (not reported) leave base's value.
// Allocation units, carveouts and barrier slots, which no driver attribute
// reports, come from base, or from ComputeLimits when there is no base or
// the capability differs. The sources of overridden fields name the driver.
//
// Without a base the description has the CUDA limits and what info gives,
// but no peak throughputs or idle power: fine for occupancy, not for the
// simulator. The description's Local is info. Errors: info is not a CUDA
// device (no compute capability), or its capability is neither base's nor
// in ComputeLimits' table.
func FromLocal(base *Description, info Local) (*Description, error) {
	if info.ComputeMajor <= 0 {
		return nil, fmt.Errorf("device: local GPU %q reports no CUDA compute capability", info.Name)
	}
	var d *Description
	if base != nil {
		d = base.clone()
	} else {
		d = &Description{ID: "local", Vendor: "NVIDIA", Architecture: "unknown", WarpSize: 32, Sources: map[string]string{}}
	}
	by := fmt.Sprintf("local GPU %q, driver %s", info.Name, info.Driver)
	if base == nil || base.ComputeMajor != info.ComputeMajor || base.ComputeMinor != info.ComputeMinor {
		l, err := ComputeLimits(info.ComputeMajor, info.ComputeMinor)
		if err != nil {
			return nil, fmt.Errorf("device: local GPU %q: %w", info.Name, err)
		}
		d.applyLimits(l, l.Source)
		d.ComputeMajor, d.ComputeMinor = info.ComputeMajor, info.ComputeMinor
		d.Sources["compute_major"] = by + ": cuDeviceGetAttribute COMPUTE_CAPABILITY_MAJOR"
		d.Sources["compute_minor"] = by + ": cuDeviceGetAttribute COMPUTE_CAPABILITY_MINOR"
	}
	setInt := func(field string, dst *int, v int, attr string) {
		if v > 0 {
			*dst = v
			d.Sources[field] = by + ": " + attr
		}
	}
	if info.Name != "" {
		d.Name = info.Name
		d.Sources["name"] = by + ": cuDeviceGetName"
	}
	setInt("sms", &d.SMs, info.SMs, "cuDeviceGetAttribute MULTIPROCESSOR_COUNT")
	setInt("warp_size", &d.WarpSize, info.WarpSize, "cuDeviceGetAttribute WARP_SIZE")
	setInt("max_threads_per_block", &d.MaxThreadsPerBlock, info.MaxThreadsPerBlock, "cuDeviceGetAttribute MAX_THREADS_PER_BLOCK")
	setInt("max_threads_per_sm", &d.MaxThreadsPerSM, info.MaxThreadsPerSM, "cuDeviceGetAttribute MAX_THREADS_PER_MULTIPROCESSOR")
	if d.WarpSize > 0 && info.MaxThreadsPerSM > 0 {
		d.MaxWarpsPerSM = d.MaxThreadsPerSM / d.WarpSize
		d.Sources["max_warps_per_sm"] = by + ": MAX_THREADS_PER_MULTIPROCESSOR / WARP_SIZE"
	}
	setInt("max_blocks_per_sm", &d.MaxBlocksPerSM, info.MaxBlocksPerSM, "cuDeviceGetAttribute MAX_BLOCKS_PER_MULTIPROCESSOR")
	setInt("registers_per_sm", &d.RegistersPerSM, info.RegistersPerSM, "cuDeviceGetAttribute MAX_REGISTERS_PER_MULTIPROCESSOR")
	setInt("max_registers_per_block", &d.MaxRegistersPerBlock, info.MaxRegistersPerBlock, "cuDeviceGetAttribute MAX_REGISTERS_PER_BLOCK")
	setInt("shared_memory_per_sm", &d.SharedMemoryPerSM, info.SharedMemoryPerSM, "cuDeviceGetAttribute MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")
	setInt("shared_memory_per_block", &d.SharedMemoryPerBlock, info.SharedMemoryPerBlock, "cuDeviceGetAttribute MAX_SHARED_MEMORY_PER_BLOCK")
	setInt("shared_memory_per_block_optin", &d.SharedMemoryPerBlockOptin, info.SharedMemoryPerBlockOptin, "cuDeviceGetAttribute MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
	// 0 is a real answer (before CC 8.0) once the driver reported the
	// other shared-memory attributes.
	if info.SharedMemoryPerSM > 0 {
		d.ReservedSharedMemoryPerBlock = info.ReservedSharedMemoryPerBlock
		d.Sources["reserved_shared_memory_per_block"] = by + ": cuDeviceGetAttribute RESERVED_SHARED_MEMORY_PER_BLOCK"
	}
	// Carveouts above the reported shared memory per SM cannot be chosen.
	if n := len(d.SharedMemoryCarveoutsKiB); n > 0 && d.SharedMemoryCarveoutsKiB[n-1]*1024 != d.SharedMemoryPerSM {
		var cs []int
		for _, c := range d.SharedMemoryCarveoutsKiB {
			if c*1024 < d.SharedMemoryPerSM {
				cs = append(cs, c)
			}
		}
		if d.SharedMemoryPerSM%1024 == 0 {
			cs = append(cs, d.SharedMemoryPerSM/1024)
		}
		d.SharedMemoryCarveoutsKiB = cs
		d.Sources["shared_memory_carveouts_kib"] += "; cut to " + by + "'s shared memory per SM"
	}
	if info.MemoryBytes > 0 {
		d.MemoryBytes = info.MemoryBytes
		d.Sources["memory_bytes"] = by + ": cuDeviceTotalMem"
	}
	if info.L2Bytes > 0 {
		d.L2Bytes = info.L2Bytes
		d.Sources["l2_bytes"] = by + ": cuDeviceGetAttribute L2_CACHE_SIZE"
	}

	// NVML: clocks and power-limit constraints.
	if len(info.SupportedClocksMHz) > 0 {
		var mems []int
		for m := range info.SupportedClocksMHz {
			mems = append(mems, m)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(mems)))
		d.MemoryClocksMHz = mems
		d.ClockTables = nil
		for _, m := range mems {
			cs := append([]int(nil), info.SupportedClocksMHz[m]...)
			sort.Sort(sort.Reverse(sort.IntSlice(cs)))
			d.ClockTables = append(d.ClockTables, ClockTable{MemoryClockMHz: m, CoreClocksMHz: cs})
		}
		d.MemoryClockMHz = mems[0]
		d.CoreClocksMHz = append([]int(nil), d.ClockTables[0].CoreClocksMHz...)
		if len(d.CoreClocksMHz) > 0 {
			d.BoostClockMHz = d.CoreClocksMHz[0]
		}
		for _, f := range []string{"memory_clocks_mhz", "clock_tables", "memory_clock_mhz", "core_clocks_mhz", "boost_clock_mhz"} {
			d.Sources[f] = by + ": NVML nvmlDeviceGetSupportedMemoryClocks / nvmlDeviceGetSupportedGraphicsClocks"
		}
	}
	setF := func(field string, dst *float64, v float64, fn string) {
		if v > 0 {
			*dst = v
			d.Sources[field] = by + ": NVML " + fn
		}
	}
	setF("power_limit_min_w", &d.PowerLimitMinW, info.MinPowerLimitW, "nvmlDeviceGetPowerManagementLimitConstraints")
	setF("power_limit_max_w", &d.PowerLimitMaxW, info.MaxPowerLimitW, "nvmlDeviceGetPowerManagementLimitConstraints")
	setF("power_limit_default_w", &d.PowerLimitDefaultW, info.DefaultPowerLimitW, "nvmlDeviceGetPowerManagementDefaultLimit")
	if info.HasEnergyCounter {
		d.HasPowerSensor = true
		d.Sources["has_power_sensor"] = by + ": NVML nvmlDeviceGetTotalEnergyConsumption"
	}
	d.Local = info
	return d, nil
}

// Local describes a GPU as its driver (or a simulator) reports it: what a
// backend answers for Backend.Device (backend.DeviceInfo). Units in the
// field names; 0 where the backend does not report a field.
type Local struct {
	Backend            string  `json:"backend"` // "cuda" | "sim"
	Index              int     `json:"index"`
	Name               string  `json:"name"`
	UUID               string  `json:"uuid"`
	Driver             string  `json:"driver"` // driver version string
	ComputeMajor       int     `json:"compute_major"`
	ComputeMinor       int     `json:"compute_minor"`
	SMs                int     `json:"sms"`
	MemoryBytes        int64   `json:"memory_bytes"`
	MaxThreadsPerBlock int     `json:"max_threads_per_block"`
	SMClockMHz         int     `json:"sm_clock_mhz"`     // current SM clock
	MaxSMClockMHz      int     `json:"max_sm_clock_mhz"` // highest supported SM clock
	MemClockMHz        int     `json:"mem_clock_mhz"`
	PowerLimitW        float64 `json:"power_limit_w"` // enforced power limit
	MinPowerLimitW     float64 `json:"min_power_limit_w"`
	MaxPowerLimitW     float64 `json:"max_power_limit_w"`
	HasEnergyCounter   bool    `json:"has_energy_counter"`

	// Occupancy limits as the driver reports them (cuDeviceGetAttribute);
	// 0 where the backend does not report them. Bytes and registers.
	WarpSize                     int   `json:"warp_size,omitempty"`
	MaxThreadsPerSM              int   `json:"max_threads_per_sm,omitempty"`
	MaxBlocksPerSM               int   `json:"max_blocks_per_sm,omitempty"`
	RegistersPerSM               int   `json:"registers_per_sm,omitempty"`
	MaxRegistersPerBlock         int   `json:"max_registers_per_block,omitempty"`
	SharedMemoryPerSM            int   `json:"shared_memory_per_sm,omitempty"`
	SharedMemoryPerBlock         int   `json:"shared_memory_per_block,omitempty"`
	SharedMemoryPerBlockOptin    int   `json:"shared_memory_per_block_optin,omitempty"`
	ReservedSharedMemoryPerBlock int   `json:"reserved_shared_memory_per_block,omitempty"`
	L2Bytes                      int64 `json:"l2_bytes,omitempty"`
	// From NVML (read-only): the default power limit (W) and the supported
	// SM clocks (MHz, descending) keyed by supported memory clock (MHz).
	DefaultPowerLimitW float64       `json:"default_power_limit_w,omitempty"`
	SupportedClocksMHz map[int][]int `json:"supported_clocks_mhz,omitempty"`
}

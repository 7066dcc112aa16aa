package device

import (
	"reflect"
	"strings"
	"testing"
)

// The papers' GPUs and the modern ones, each with values from its sources
// (the source string is checked to name where the value comes from).
func TestSpotValuesPerGPU(t *testing.T) {
	type spot struct {
		id                   string
		arch                 string
		major, minor, units  int // units: SMs, or CUs on AMD
		maxClock, memClock   int
		pMin, pDefault, pMax float64
		fp32, bw             float64
		capacitance          float64
		source               map[string]string // field → substring its source must contain
	}
	mk := "multi-kernel-autotuning-performance-energy.md"
	pc := "autotuning-energy-efficiency-power-capping.md"
	pp := "performance-projection-heterogeneous-gpus.md"
	spots := []spot{
		{"gtx580", "Fermi", 2, 0, 16, 1544, 2004, 244, 244, 244, 1581, 192.4, 0, map[string]string{"sms": mk + " Table III"}},
		{"gtx680", "Kepler", 3, 0, 8, 1058, 3004, 195, 195, 195, 3250, 192.3, 0, map[string]string{"boost_clock_mhz": mk + " Table III"}},
		{"k20c", "Kepler", 3, 5, 13, 758, 2600, 150, 225, 225, 3520, 208, 0.833, map[string]string{"sensor_capacitance_s": "equation 6"}},
		{"k20m", "Kepler", 3, 5, 13, 758, 2600, 150, 225, 225, 3524, 208, 0, map[string]string{"peak_fp32_gflops": pc + " Table 3.2"}},
		{"k20x", "Kepler", 3, 5, 14, 784, 2600, 150, 235, 235, 3935, 250, 0, map[string]string{"power_limit_min_w": "unsure"}},
		{"k40c", "Kepler", 3, 5, 15, 875, 3004, 180, 235, 235, 5040, 288, 0.79, map[string]string{"core_clocks_mhz": mk + " Table III", "sensor_capacitance_s": "C_K40c = 0.79"}},
		{"gtx_titan", "Kepler", 3, 5, 14, 876, 3004, 150, 250, 265, 4709, 288, 0, map[string]string{"power_limit_max_w": pc + " Table 3.2"}},
		{"gtx980", "Maxwell", 5, 2, 16, 1216, 3505, 100, 180, 225, 4981, 224, 0, map[string]string{"tdp_w": pc + " Table 3.2"}},
		{"gtx_titan_x", "Maxwell", 5, 2, 24, 1089, 3505, 150, 250, 275, 6691, 336, 0, map[string]string{"peak_fp64_gflops": pc + " Table 3.2"}},
		{"titan_x_pascal", "Pascal", 6, 1, 28, 1531, 5005, 125, 250, 300, 10974, 480, 0, map[string]string{"peak_fp64_gflops": "3429"}},
		{"c1060", "Tesla", 1, 3, 30, 1296, 800, 187.8, 187.8, 187.8, 933, 102, 0, map[string]string{"peak_fp32_gflops": pp + " Table I"}},
		{"c2050", "Fermi", 2, 0, 14, 1150, 1500, 238, 238, 238, 1030, 144, 0, map[string]string{"sms": pp + " Table I"}},
		{"hd5870", "Evergreen (TeraScale 2, VLIW5)", 0, 0, 20, 850, 1200, 188, 188, 188, 2720, 153.6, 0, map[string]string{"memory_bandwidth_gbs": "swapped"}},
		{"hd7970", "Southern Islands (GCN 1.0)", 0, 0, 32, 925, 1375, 250, 250, 250, 3789, 264, 0, map[string]string{"compute_units": pp + " Table I"}},
		{"v100_sxm2", "Volta", 7, 0, 80, 1530, 877, 150, 300, 300, 15700, 900, 0, map[string]string{"peak_fp32_gflops": "V100 datasheet"}},
		{"a100_40gb", "Ampere", 8, 0, 108, 1410, 1215, 150, 250, 250, 19500, 1555, 0, map[string]string{"memory_bandwidth_gbs": "1555"}},
		{"a100_80gb", "Ampere", 8, 0, 108, 1410, 1593, 100, 400, 400, 19500, 2039, 0, map[string]string{"memory_bandwidth_gbs": "2039"}},
		{"rtx_a4000", "Ampere", 8, 6, 48, 2100, 7001, 100, 140, 140, 19170, 448, 0, map[string]string{"memory_bandwidth_gbs": "448"}},
		{"rtx_a6000", "Ampere", 8, 6, 84, 1800, 8001, 100, 300, 300, 38710, 768, 0, map[string]string{"memory_bandwidth_gbs": "768", "sms": "10752"}},
		{"h100_sxm", "Hopper", 9, 0, 132, 1980, 2619, 200, 700, 700, 66900, 3352, 0, map[string]string{"power_limit_min_w": "measured"}},
		{"h200", "Hopper", 9, 0, 132, 1980, 3201, 200, 700, 700, 66900, 4800, 0, map[string]string{"memory_bandwidth_gbs": "4.8 TB/s", "memory_clock_mhz": "unsure"}},
	}
	if n := len(All()); n != len(spots) {
		t.Errorf("database holds %d GPUs, the test checks %d", n, len(spots))
	}
	for _, s := range spots {
		d, err := Lookup(s.id)
		if err != nil {
			t.Error(err)
			continue
		}
		units := d.SMs
		if d.Vendor == "AMD" {
			units = d.ComputeUnits
		}
		if d.Architecture != s.arch || d.ComputeMajor != s.major || d.ComputeMinor != s.minor || units != s.units ||
			d.MaxCoreClockMHz() != s.maxClock || d.MemoryClockMHz != s.memClock || d.PowerLimitMinW != s.pMin ||
			d.PowerLimitDefaultW != s.pDefault || d.PowerLimitMaxW != s.pMax || d.PeakFP32GFLOPS != s.fp32 ||
			d.MemoryBandwidthGBs != s.bw || d.SensorCapacitanceS != s.capacitance {
			t.Errorf("%s: %s CC %d.%d units %d clocks %d/%d power %v/%v/%v fp32 %v bw %v C %v; want %+v", s.id, d.Architecture,
				d.ComputeMajor, d.ComputeMinor, units, d.MaxCoreClockMHz(), d.MemoryClockMHz, d.PowerLimitMinW, d.PowerLimitDefaultW,
				d.PowerLimitMaxW, d.PeakFP32GFLOPS, d.MemoryBandwidthGBs, d.SensorCapacitanceS, s)
		}
		for field, sub := range s.source {
			if !strings.Contains(d.Sources[field], sub) {
				t.Errorf("%s: source of %s %q does not mention %q", s.id, field, d.Sources[field], sub)
			}
		}
		if d.IsCUDA() != (d.Vendor == "NVIDIA") {
			t.Errorf("%s: IsCUDA %v for vendor %s", s.id, d.IsCUDA(), d.Vendor)
		}
	}
	// Table III of the multi-kernel paper: GTX 580's 32K registers, 1536 threads
	// and 8 blocks per SM; GTX 680's 64K, 2048, 16.
	f, _ := Lookup("gtx580")
	k, _ := Lookup("gtx680")
	if f.RegistersPerSM != 32768 || f.MaxThreadsPerSM != 1536 || f.MaxBlocksPerSM != 8 || f.SharedMemoryPerBlock != 48<<10 ||
		k.RegistersPerSM != 65536 || k.MaxThreadsPerSM != 2048 || k.MaxBlocksPerSM != 16 || k.MaxRegistersPerThread != 63 {
		t.Errorf("Table III limits: gtx580 %+v gtx680 %+v", f.limitsOf(), k.limitsOf())
	}
	// Both H100 memory clocks support the same 110 SM clocks (nvidia-smi).
	h, _ := Lookup("h100_sxm")
	if len(h.ClockTables) != 2 || h.ClockTables[1].MemoryClockMHz != 1593 || len(h.ClockTables[1].CoreClocksMHz) != 110 {
		t.Errorf("h100 clock tables: %+v", h.ClockTables)
	}
	a, _ := Lookup("hd7970")
	if a.WavefrontSize != 64 || a.LDSBytesPerCU != 64<<10 || a.MaxWorkGroupSize != 256 || a.IsCUDA() {
		t.Errorf("hd7970: %+v", a)
	}
}

func TestComputeLimits(t *testing.T) {
	cases := []struct {
		major, minor                   int
		threads, blocks, smemKiB, unit int
	}{
		{1, 3, 1024, 8, 16, 512}, {2, 0, 1536, 8, 48, 128}, {3, 0, 2048, 16, 48, 256}, {5, 2, 2048, 32, 96, 256},
		{6, 0, 2048, 32, 64, 256}, {7, 0, 2048, 32, 96, 256}, {7, 5, 1024, 16, 64, 256}, {8, 0, 2048, 32, 164, 128},
		{8, 6, 1536, 16, 100, 128}, {8, 9, 1536, 24, 100, 128}, {9, 0, 2048, 32, 228, 128}, {10, 0, 2048, 32, 228, 128},
		{12, 0, 1536, 24, 100, 128},
	}
	for _, c := range cases {
		l, err := ComputeLimits(c.major, c.minor)
		if err != nil {
			t.Error(err)
			continue
		}
		if l.MaxThreadsPerSM != c.threads || l.MaxBlocksPerSM != c.blocks || l.SharedMemoryPerSM != c.smemKiB<<10 || l.SharedMemoryAllocUnit != c.unit {
			t.Errorf("CC %d.%d: %+v", c.major, c.minor, l)
		}
		if n := len(l.SharedMemoryCarveoutsKiB); n > 0 && l.SharedMemoryCarveoutsKiB[n-1] != c.smemKiB {
			t.Errorf("CC %d.%d: largest carveout %d KiB", c.major, c.minor, l.SharedMemoryCarveoutsKiB[n-1])
		}
		if (c.major >= 8) != (l.ReservedSharedMemoryPerBlock == 1024) || (c.major >= 9) != (l.BlockBarriersPerSM > 0) {
			t.Errorf("CC %d.%d: reserved %d barriers %d", c.major, c.minor, l.ReservedSharedMemoryPerBlock, l.BlockBarriersPerSM)
		}
	}
	if _, err := ComputeLimits(3, 7); err == nil || !strings.Contains(err.Error(), "3.7 not in gtune's table") {
		t.Errorf("CC 3.7: %v", err)
	}
	// A file whose limits drift from its capability is rejected.
	d, _ := Lookup("k40c")
	d.MaxBlocksPerSM = 32
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "compute capability 3.5") {
		t.Errorf("k40c with 32 blocks/SM: %v", err)
	}
	a, _ := Lookup("hd5870")
	a.ComputeMajor = 3
	if err := a.Validate(); err == nil || !strings.Contains(err.Error(), "AMD GPU has no CUDA compute capability") {
		t.Errorf("AMD with a compute capability: %v", err)
	}
}

// The H100 driver's answers (occupancy/testdata/h100_occupancy.csv.gz
// header, nvidia-smi) applied over the database file change nothing of the
// limits, and the clocks and power limits come from NVML.
func TestFromLocal(t *testing.T) {
	info := Local{
		Backend: "cuda", Name: "NVIDIA H100 80GB HBM3", Driver: "580.159.04", ComputeMajor: 9, ComputeMinor: 0, SMs: 132,
		MemoryBytes: 85017493504, MaxThreadsPerBlock: 1024, WarpSize: 32, MaxThreadsPerSM: 2048, MaxBlocksPerSM: 32,
		RegistersPerSM: 65536, MaxRegistersPerBlock: 65536, SharedMemoryPerSM: 233472, SharedMemoryPerBlock: 49152,
		SharedMemoryPerBlockOptin: 232448, ReservedSharedMemoryPerBlock: 1024, L2Bytes: 52428800,
		MinPowerLimitW: 200, MaxPowerLimitW: 700, DefaultPowerLimitW: 700, HasEnergyCounter: true,
		SupportedClocksMHz: map[int][]int{2619: {1980, 1965, 345}, 1593: {1980, 345}},
	}
	base := MatchName(" nvidia h100 80gb hbm3 ")
	if base == nil || base.ID != "h100_sxm" {
		t.Fatalf("MatchName: %+v", base)
	}
	d, err := FromLocal(base, info)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.limitsOf(), base.limitsOf(); !reflect.DeepEqual(got, want) {
		t.Errorf("limits changed: %+v vs %+v", got, want)
	}
	if !reflect.DeepEqual(d.CoreClocksMHz, []int{1980, 1965, 345}) || !reflect.DeepEqual(d.MemoryClocksMHz, []int{2619, 1593}) ||
		len(d.ClockTables) != 2 || d.ClockTables[1].MemoryClockMHz != 1593 || d.PowerLimitMinW != 200 || d.ID != "h100_sxm" {
		t.Errorf("clocks/power: %v %v %+v %v", d.CoreClocksMHz, d.MemoryClocksMHz, d.ClockTables, d.PowerLimitMinW)
	}
	if !strings.Contains(d.Sources["shared_memory_per_block_optin"], "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") ||
		!strings.Contains(d.Sources["core_clocks_mhz"], "NVML") || base.Sources["core_clocks_mhz"] == d.Sources["core_clocks_mhz"] {
		t.Errorf("sources not updated: %q", d.Sources["shared_memory_per_block_optin"])
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	// A driver that reports a smaller shared memory per SM (a MIG slice or a
	// future driver) overrides the file, and the carveouts are cut to it.
	info2 := info
	info2.SharedMemoryPerSM, info2.SharedMemoryPerBlockOptin = 164<<10, 163<<10
	d2, err := FromLocal(base, info2)
	if err != nil || d2.SharedMemoryPerSM != 164<<10 || !reflect.DeepEqual(d2.SharedMemoryCarveoutsKiB, []int{0, 8, 16, 32, 64, 100, 132, 164}) {
		t.Errorf("smaller shared memory: %v %+v", err, d2)
	}
	// No database file: the capability's table row plus the driver.
	info3 := info
	info3.Name = "NVIDIA GB200"
	info3.ComputeMajor, info3.ComputeMinor = 10, 0
	d3, err := FromLocal(MatchName(info3.Name), info3)
	if err != nil || d3.ID != "local" || d3.ComputeMajor != 10 || d3.BlockBarriersPerSM != 64 || d3.SharedMemoryAllocUnit != 128 || d3.SMs != 132 {
		t.Errorf("no base: %v %+v", err, d3)
	}
	if _, err := FromLocal(nil, Local{Name: "x"}); err == nil || !strings.Contains(err.Error(), "no CUDA compute capability") {
		t.Errorf("no CC: %v", err)
	}
	info3.ComputeMajor = 11
	if _, err := FromLocal(nil, info3); err == nil || !strings.Contains(err.Error(), "11.0 not in gtune's table") {
		t.Errorf("unknown CC: %v", err)
	}
}

func TestLookupName(t *testing.T) {
	d, err := LookupName(" nvidia h100 80GB HBM3 ")
	if err != nil || d.ID != "h100_sxm" {
		t.Fatalf("H100: %v, %v", d, err)
	}
	if d, err := LookupName("Tesla K20c"); err != nil || d.ID != "k20c" {
		t.Fatalf("K20c: %v, %v", d, err)
	}
	if _, err := LookupName("NVIDIA GeForce RTX 4090"); err == nil || !strings.Contains(err.Error(), `"NVIDIA H100 80GB HBM3" (h100_sxm)`) {
		t.Fatalf("unknown GPU: %v", err)
	}
}

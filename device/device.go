// Package device describes GPUs: their limits (threads, warps, registers,
// shared memory per thread block and per SM), clocks, power limits and
// peak throughputs. The descriptions come from an embedded database, one
// JSON file per GPU under data/, each value traced to its source in the
// file's "sources" map (CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability"; vendor datasheets; the papers in
// ../shared/papers; measurements).
package device

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Description is what a GPU is. Sizes are in bytes, clocks in MHz, power in
// W, throughputs in GFLOP/s and GB/s (10^9 bytes/s).
type Description struct {
	ID           string `json:"id"`   // database key, e.g. "h100_sxm"
	Name         string `json:"name"` // product name as the driver reports it
	Vendor       string `json:"vendor"`
	Architecture string `json:"architecture"`
	ComputeMajor int    `json:"compute_major"`
	ComputeMinor int    `json:"compute_minor"`

	SMs                int    `json:"sms"`
	WarpSize           int    `json:"warp_size"`
	MaxThreadsPerBlock int    `json:"max_threads_per_block"`
	MaxBlockDims       [3]int `json:"max_block_dims"` // threads per thread block per dimension
	MaxGridDims        [3]int `json:"max_grid_dims"`  // thread blocks per grid per dimension
	MaxThreadsPerSM    int    `json:"max_threads_per_sm"`
	MaxBlocksPerSM     int    `json:"max_blocks_per_sm"`
	MaxWarpsPerSM      int    `json:"max_warps_per_sm"`

	RegistersPerSM        int `json:"registers_per_sm"`
	MaxRegistersPerBlock  int `json:"max_registers_per_block"`
	MaxRegistersPerThread int `json:"max_registers_per_thread"`
	RegisterAllocUnit     int `json:"register_alloc_unit"` // registers per warp are rounded up to this
	// WarpAllocGranularity is the number of SM sub-partitions (warp
	// schedulers): registers are allocated per sub-partition, and the
	// per-block register check rounds a block's warps up to it.
	WarpAllocGranularity int `json:"warp_alloc_granularity"`

	SharedMemoryPerSM            int `json:"shared_memory_per_sm"`             // largest configurable shared memory per SM
	SharedMemoryPerBlock         int `json:"shared_memory_per_block"`          // without opt-in
	SharedMemoryPerBlockOptin    int `json:"shared_memory_per_block_optin"`    // with cudaFuncAttributeMaxDynamicSharedMemorySize
	SharedMemoryAllocUnit        int `json:"shared_memory_alloc_unit"`         // per-block allocation granularity
	ReservedSharedMemoryPerBlock int `json:"reserved_shared_memory_per_block"` // reserved by the driver (CC >= 8.0)
	// SharedMemoryCarveoutsKiB are the shared-memory sizes per SM the L1/
	// shared split can be set to, ascending; empty when fixed.
	SharedMemoryCarveoutsKiB []int `json:"shared_memory_carveouts_kib"`
	// BlockBarriersPerSM is the number of named-barrier slots per SM that
	// limit occupancy (CC >= 9.0); 0 when barriers do not limit occupancy.
	BlockBarriersPerSM int `json:"block_barriers_per_sm"`

	BaseClockMHz    int   `json:"base_clock_mhz"`
	BoostClockMHz   int   `json:"boost_clock_mhz"`
	CoreClocksMHz   []int `json:"core_clocks_mhz"` // supported SM clocks at the default memory clock, descending
	MemoryClockMHz  int   `json:"memory_clock_mhz"`
	MemoryClocksMHz []int `json:"memory_clocks_mhz"` // supported memory clocks, descending

	PowerLimitMinW     float64 `json:"power_limit_min_w"`
	PowerLimitDefaultW float64 `json:"power_limit_default_w"`
	PowerLimitMaxW     float64 `json:"power_limit_max_w"`
	TDPW               float64 `json:"tdp_w"`
	IdlePowerW         float64 `json:"idle_power_w"` // board power with no work and the SM clock gated

	PeakFP32GFLOPS float64 `json:"peak_fp32_gflops"` // at the boost (max) SM clock
	PeakFP64GFLOPS float64 `json:"peak_fp64_gflops"`
	// PeakFP64TensorGFLOPS is the FP64 rate of the tensor cores (DMMA,
	// what cuBLAS's DGEMM runs on), GFLOP/s at the boost clock; 0 on a
	// GPU without them.
	PeakFP64TensorGFLOPS float64 `json:"peak_fp64_tensor_gflops,omitempty"`
	MemoryBandwidthGBs   float64 `json:"memory_bandwidth_gbs"` // at the default memory clock
	L2Bytes              int64   `json:"l2_bytes"`
	MemoryBytes          int64   `json:"memory_bytes"`

	HasPowerSensor bool `json:"has_power_sensor"`
	// SensorCapacitanceS is the constant C of the power-sensor lag correction
	// P̂(t_i) = P_m(t_i) + C·(P_m(t_{i+1}) − P_m(t_{i−1}))/(t_{i+1} − t_{i−1})
	// (multi-kernel-autotuning-performance-energy.md equation 6), in s
	// (W per W/s); 0 where no paper gives one.
	SensorCapacitanceS float64 `json:"sensor_capacitance_s"`

	// ClockTables lists the supported SM clocks per memory clock (nvidia-smi
	// -q -d SUPPORTED_CLOCKS), memory clocks descending; empty when only
	// CoreClocksMHz (at MemoryClockMHz) is known.
	ClockTables []ClockTable `json:"clock_tables,omitempty"`

	// AMD GPUs have no CUDA compute capability (ComputeMajor 0, the CUDA
	// limits above 0); these describe them instead.
	WavefrontSize    int `json:"wavefront_size,omitempty"`      // threads per wavefront
	ComputeUnits     int `json:"compute_units,omitempty"`       // CUs (SIMD engines on VLIW parts)
	LDSBytesPerCU    int `json:"lds_bytes_per_cu,omitempty"`    // local data share per CU
	MaxWorkGroupSize int `json:"max_work_group_size,omitempty"` // OpenCL work-items per work-group

	// Sources maps a JSON field name to where its value comes from.
	Sources map[string]string `json:"sources"`

	// Local is what a backend found of this GPU: its driver's (or the
	// simulator's) answers, as found (index, UUID, driver, current clocks,
	// enforced power limit, energy counter); zero in the database's
	// entries. Its fields not named above read through the description
	// (d.UUID, d.PowerLimitW, d.HasEnergyCounter, ...).
	Local `json:"local"`
}

// ClockTable is the SM clocks (MHz, descending) supported at one memory
// clock (MHz).
type ClockTable struct {
	MemoryClockMHz int   `json:"memory_clock_mhz"`
	CoreClocksMHz  []int `json:"core_clocks_mhz"`
}

// IsCUDA tells whether CUDA's occupancy rules apply: an NVIDIA GPU with a
// compute capability.
func (d *Description) IsCUDA() bool { return d.Vendor == "NVIDIA" && d.ComputeMajor > 0 }

// MaxCoreClockMHz is the highest supported SM clock: the first of
// CoreClocksMHz, or BoostClockMHz when the list is empty.
func (d *Description) MaxCoreClockMHz() int {
	m := d.BoostClockMHz
	for _, c := range d.CoreClocksMHz {
		if c > m {
			m = c
		}
	}
	return m
}

//go:embed data/*.json
var dataFS embed.FS

var (
	loadOnce sync.Once
	loaded   map[string]*Description
	loadErr  error
)

func load() (map[string]*Description, error) {
	loadOnce.Do(func() {
		loaded, loadErr = loadFS()
	})
	return loaded, loadErr
}

func loadFS() (map[string]*Description, error) {
	entries, err := dataFS.ReadDir("data")
	if err != nil {
		return nil, fmt.Errorf("device: reading embedded database: %w", err)
	}
	m := make(map[string]*Description, len(entries))
	for _, e := range entries {
		name := path.Join("data", e.Name())
		raw, err := dataFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("device: %s: %w", name, err)
		}
		d, err := Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("device: %s: %w", name, err)
		}
		if want := strings.TrimSuffix(e.Name(), ".json"); d.ID != want {
			return nil, fmt.Errorf("device: %s: id %q differs from the file name %q", name, d.ID, want)
		}
		if _, dup := m[d.ID]; dup {
			return nil, fmt.Errorf("device: %s: duplicate id %q", name, d.ID)
		}
		m[d.ID] = d
	}
	return m, nil
}

// Parse decodes one database file (JSON, unknown fields rejected) and
// checks it with Validate.
func Parse(raw []byte) (*Description, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d Description
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Validate checks that every field a model depends on is set and
// consistent. The error names the first offending field.
func (d *Description) Validate() error {
	fail := func(field string, format string, a ...any) error {
		return fmt.Errorf("device %q: %s: %s", d.ID, field, fmt.Sprintf(format, a...))
	}
	if d.ID == "" {
		return fail("id", "missing")
	}
	for field, s := range map[string]string{"name": d.Name, "vendor": d.Vendor, "architecture": d.Architecture} {
		if s == "" {
			return fail(field, "missing")
		}
	}
	type num struct {
		name string
		v    float64
	}
	positive := []num{
		{"base_clock_mhz", float64(d.BaseClockMHz)},
		{"boost_clock_mhz", float64(d.BoostClockMHz)},
		{"memory_clock_mhz", float64(d.MemoryClockMHz)},
		{"power_limit_min_w", d.PowerLimitMinW},
		{"power_limit_default_w", d.PowerLimitDefaultW},
		{"power_limit_max_w", d.PowerLimitMaxW},
		{"tdp_w", d.TDPW}, {"idle_power_w", d.IdlePowerW},
		{"peak_fp32_gflops", d.PeakFP32GFLOPS},
		{"peak_fp64_gflops", d.PeakFP64GFLOPS},
		{"memory_bandwidth_gbs", d.MemoryBandwidthGBs},
		{"memory_bytes", float64(d.MemoryBytes)},
	}
	switch d.Vendor {
	case "NVIDIA":
		positive = append(positive, []num{
			{"compute_major", float64(d.ComputeMajor)},
			{"sms", float64(d.SMs)}, {"warp_size", float64(d.WarpSize)},
			{"max_threads_per_block", float64(d.MaxThreadsPerBlock)},
			{"max_threads_per_sm", float64(d.MaxThreadsPerSM)},
			{"max_blocks_per_sm", float64(d.MaxBlocksPerSM)},
			{"max_warps_per_sm", float64(d.MaxWarpsPerSM)},
			{"registers_per_sm", float64(d.RegistersPerSM)},
			{"max_registers_per_block", float64(d.MaxRegistersPerBlock)},
			{"max_registers_per_thread", float64(d.MaxRegistersPerThread)},
			{"register_alloc_unit", float64(d.RegisterAllocUnit)},
			{"warp_alloc_granularity", float64(d.WarpAllocGranularity)},
			{"shared_memory_per_sm", float64(d.SharedMemoryPerSM)},
			{"shared_memory_per_block", float64(d.SharedMemoryPerBlock)},
			{"shared_memory_per_block_optin", float64(d.SharedMemoryPerBlockOptin)},
			{"shared_memory_alloc_unit", float64(d.SharedMemoryAllocUnit)},
		}...)
	case "AMD":
		positive = append(positive, []num{
			{"wavefront_size", float64(d.WavefrontSize)},
			{"compute_units", float64(d.ComputeUnits)},
			{"lds_bytes_per_cu", float64(d.LDSBytesPerCU)},
			{"max_work_group_size", float64(d.MaxWorkGroupSize)},
		}...)
		if d.ComputeMajor != 0 || d.SMs != 0 || d.RegistersPerSM != 0 || d.MaxThreadsPerSM != 0 {
			return fail("compute_major", "an AMD GPU has no CUDA compute capability or CUDA limits (use wavefront_size, compute_units, lds_bytes_per_cu)")
		}
	default:
		return fail("vendor", "%q is neither NVIDIA nor AMD", d.Vendor)
	}
	for _, p := range positive {
		if !(p.v > 0) {
			return fail(p.name, "must be > 0, got %v", p.v)
		}
	}
	if d.L2Bytes < 0 || d.SensorCapacitanceS < 0 {
		return fail("l2_bytes/sensor_capacitance_s", "must be >= 0 (0: none)")
	}
	if d.PeakFP64TensorGFLOPS < 0 || (d.PeakFP64TensorGFLOPS > 0 && d.PeakFP64TensorGFLOPS < d.PeakFP64GFLOPS) {
		return fail("peak_fp64_tensor_gflops", "%v: 0 (no FP64 tensor cores) or at least peak_fp64_gflops %v", d.PeakFP64TensorGFLOPS, d.PeakFP64GFLOPS)
	}
	if d.Vendor == "NVIDIA" {
		if err := d.validateCUDA(fail); err != nil {
			return err
		}
	}
	for name, list := range map[string][]int{"core_clocks_mhz": d.CoreClocksMHz, "memory_clocks_mhz": d.MemoryClocksMHz} {
		if err := descending(list); err != nil {
			return fail(name, "%v", err)
		}
	}
	if d.CoreClocksMHz[0] < d.BaseClockMHz {
		return fail("core_clocks_mhz", "highest clock %d below base clock %d", d.CoreClocksMHz[0], d.BaseClockMHz)
	}
	for i, t := range d.ClockTables {
		if err := descending(t.CoreClocksMHz); err != nil {
			return fail("clock_tables", "memory clock %d MHz: %v", t.MemoryClockMHz, err)
		}
		if !contains(d.MemoryClocksMHz, t.MemoryClockMHz) || (i > 0 && t.MemoryClockMHz >= d.ClockTables[i-1].MemoryClockMHz) {
			return fail("clock_tables", "memory clock %d MHz not in memory_clocks_mhz or not descending", t.MemoryClockMHz)
		}
		if t.MemoryClockMHz == d.MemoryClockMHz && !equalInts(t.CoreClocksMHz, d.CoreClocksMHz) {
			return fail("clock_tables", "table at the default memory clock %d MHz differs from core_clocks_mhz", t.MemoryClockMHz)
		}
	}
	if !contains(d.MemoryClocksMHz, d.MemoryClockMHz) {
		return fail("memory_clock_mhz", "%d not in memory_clocks_mhz", d.MemoryClockMHz)
	}
	if !(d.PowerLimitMinW <= d.PowerLimitDefaultW && d.PowerLimitDefaultW <= d.PowerLimitMaxW) {
		return fail("power_limit_default_w", "need min %v <= default %v <= max %v", d.PowerLimitMinW, d.PowerLimitDefaultW, d.PowerLimitMaxW)
	}
	if d.IdlePowerW >= d.PowerLimitMinW {
		return fail("idle_power_w", "%v must be below power_limit_min_w %v", d.IdlePowerW, d.PowerLimitMinW)
	}
	if len(d.Sources) == 0 {
		return fail("sources", "missing")
	}
	return nil
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Clone is a deep copy of d.
func (d *Description) Clone() *Description { return d.clone() }

func (d *Description) clone() *Description {
	c := *d
	c.SharedMemoryCarveoutsKiB = append([]int(nil), d.SharedMemoryCarveoutsKiB...)
	c.CoreClocksMHz = append([]int(nil), d.CoreClocksMHz...)
	c.MemoryClocksMHz = append([]int(nil), d.MemoryClocksMHz...)
	c.ClockTables = make([]ClockTable, len(d.ClockTables))
	for i, t := range d.ClockTables {
		c.ClockTables[i] = ClockTable{t.MemoryClockMHz, append([]int(nil), t.CoreClocksMHz...)}
	}
	if d.ClockTables == nil {
		c.ClockTables = nil
	}
	c.Sources = make(map[string]string, len(d.Sources))
	for k, v := range d.Sources {
		c.Sources[k] = v
	}
	if d.SupportedClocksMHz != nil {
		c.SupportedClocksMHz = make(map[int][]int, len(d.SupportedClocksMHz))
		for m, cs := range d.SupportedClocksMHz {
			c.SupportedClocksMHz[m] = append([]int(nil), cs...)
		}
	}
	return &c
}

// Lookup returns a copy of the description with the given id (case is
// ignored). An unknown id is an error that lists the closest ids.
func Lookup(id string) (*Description, error) {
	m, err := load()
	if err != nil {
		return nil, err
	}
	key := strings.ToLower(strings.TrimSpace(id))
	if d, ok := m[key]; ok {
		return d.clone(), nil
	}
	return nil, fmt.Errorf("device: unknown device id %q; closest: %s", id, strings.Join(closest(key, m, 3), ", "))
}

// All returns copies of every description, sorted by id. It panics if the
// embedded database is malformed, which the package tests rule out.
func All() []*Description {
	m, err := load()
	if err != nil {
		panic(err)
	}
	out := make([]*Description, 0, len(m))
	for _, d := range m {
		out = append(out, d.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// closest ranks ids by edit distance to key, ids containing key (or
// contained in it) first.
func closest(key string, m map[string]*Description, n int) []string {
	type cand struct {
		id   string
		dist int
	}
	var cs []cand
	for id := range m {
		d := levenshtein(key, id)
		if key != "" && (strings.Contains(id, key) || strings.Contains(key, id)) {
			d -= 100
		}
		cs = append(cs, cand{id, d})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].dist != cs[j].dist {
			return cs[i].dist < cs[j].dist
		}
		return cs[i].id < cs[j].id
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].id)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// validateCUDA checks the CUDA limits of an NVIDIA description: internal
// consistency, and equality with the compute capability's row of the
// table (ComputeLimits), so a file cannot drift from its capability.
func (d *Description) validateCUDA(fail func(string, string, ...any) error) error {
	for i := range 3 {
		if d.MaxBlockDims[i] <= 0 || d.MaxGridDims[i] <= 0 {
			return fail("max_block_dims/max_grid_dims", "every dimension must be > 0")
		}
	}
	if d.ReservedSharedMemoryPerBlock < 0 || d.BlockBarriersPerSM < 0 {
		return fail("reserved_shared_memory_per_block/block_barriers_per_sm", "must be >= 0")
	}
	if d.MaxWarpsPerSM*d.WarpSize != d.MaxThreadsPerSM {
		return fail("max_warps_per_sm", "%d warps × %d threads != max_threads_per_sm %d", d.MaxWarpsPerSM, d.WarpSize, d.MaxThreadsPerSM)
	}
	if d.SharedMemoryPerBlockOptin < d.SharedMemoryPerBlock || d.SharedMemoryPerBlockOptin > d.SharedMemoryPerSM {
		return fail("shared_memory_per_block_optin", "%d must lie between shared_memory_per_block %d and shared_memory_per_sm %d", d.SharedMemoryPerBlockOptin, d.SharedMemoryPerBlock, d.SharedMemoryPerSM)
	}
	for i, c := range d.SharedMemoryCarveoutsKiB {
		if c < 0 || (i > 0 && c <= d.SharedMemoryCarveoutsKiB[i-1]) {
			return fail("shared_memory_carveouts_kib", "must be ascending and >= 0")
		}
	}
	if n := len(d.SharedMemoryCarveoutsKiB); n > 0 && d.SharedMemoryCarveoutsKiB[n-1]*1024 != d.SharedMemoryPerSM {
		return fail("shared_memory_carveouts_kib", "largest carveout %d KiB != shared_memory_per_sm %d bytes", d.SharedMemoryCarveoutsKiB[n-1], d.SharedMemoryPerSM)
	}
	want, err := ComputeLimits(d.ComputeMajor, d.ComputeMinor)
	if err != nil {
		return fail("compute_major", "%v", err)
	}
	got := d.limitsOf()
	want.Source = ""
	if !reflect.DeepEqual(got, want) && !(len(got.SharedMemoryCarveoutsKiB) == 0 && len(want.SharedMemoryCarveoutsKiB) == 0 && sameButCarveouts(got, want)) {
		return fail("compute_major", "CUDA limits %+v differ from compute capability %d.%d's %+v", got, d.ComputeMajor, d.ComputeMinor, want)
	}
	return nil
}

func sameButCarveouts(a, b Limits) bool {
	a.SharedMemoryCarveoutsKiB, b.SharedMemoryCarveoutsKiB = nil, nil
	return reflect.DeepEqual(a, b)
}

func descending(list []int) error {
	if len(list) == 0 {
		return fmt.Errorf("missing")
	}
	for i, c := range list {
		if c <= 0 || (i > 0 && c >= list[i-1]) {
			return fmt.Errorf("must be positive and strictly descending")
		}
	}
	return nil
}

func equalInts(a, b []int) bool { return slices.Equal(a, b) }

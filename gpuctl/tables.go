package gpuctl

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
)

// Tables are what a GPU supports: memory clocks (MHz, descending), the SM
// clocks (MHz, descending) supported at each memory clock, and the range
// of the power limit (W).
type Tables struct {
	Device    string // name for messages
	MemMHz    []int
	CoreMHz   map[int][]int
	MinPowerW float64
	MaxPowerW float64
}

// TablesOf gives the tables of a device-database entry (the simulated GPU
// uses the same): ClockTables where given, else CoreClocksMHz at every
// memory clock of MemoryClocksMHz.
func TablesOf(d *device.Description) Tables {
	t := Tables{Device: d.Name, CoreMHz: map[int][]int{}, MinPowerW: d.PowerLimitMinW, MaxPowerW: d.PowerLimitMaxW}
	if len(d.ClockTables) > 0 {
		for _, ct := range d.ClockTables {
			t.MemMHz = append(t.MemMHz, ct.MemoryClockMHz)
			t.CoreMHz[ct.MemoryClockMHz] = slices.Clone(ct.CoreClocksMHz)
		}
	} else {
		for _, m := range d.MemoryClocksMHz {
			t.MemMHz = append(t.MemMHz, m)
			t.CoreMHz[m] = slices.Clone(d.CoreClocksMHz)
		}
	}
	t.normalise()
	return t
}

// TablesFromInfo gives the tables a backend reports (DeviceInfo's
// SupportedClocksMHz and power-limit range, read from NVML). Error: the
// backend reports no clock table.
func TablesFromInfo(info backend.DeviceInfo) (Tables, error) {
	t := Tables{Device: info.Name, CoreMHz: map[int][]int{}, MinPowerW: info.MinPowerLimitW, MaxPowerW: info.MaxPowerLimitW}
	for m, cores := range info.SupportedClocksMHz {
		t.MemMHz = append(t.MemMHz, m)
		t.CoreMHz[m] = slices.Clone(cores)
	}
	if len(t.MemMHz) == 0 {
		return t, fmt.Errorf("gpuctl: %s reports no supported clocks (NVML nvmlDeviceGetSupportedMemoryClocks)", info.Name)
	}
	t.normalise()
	return t, nil
}

func (t *Tables) normalise() {
	desc := func(a, b int) int { return b - a }
	slices.SortFunc(t.MemMHz, desc)
	t.MemMHz = slices.Compact(t.MemMHz)
	for m, c := range t.CoreMHz {
		slices.SortFunc(c, desc)
		t.CoreMHz[m] = slices.Compact(c)
	}
}

// AllCoreMHz is the union of the SM clocks over every memory clock,
// descending.
func (t Tables) AllCoreMHz() []int {
	var all []int
	for _, c := range t.CoreMHz {
		all = append(all, c...)
	}
	slices.SortFunc(all, func(a, b int) int { return b - a })
	return slices.Compact(all)
}

// DefaultCoreMHz is the SM clocks at the highest memory clock.
func (t Tables) DefaultCoreMHz() []int {
	if len(t.MemMHz) == 0 {
		return nil
	}
	return t.CoreMHz[t.MemMHz[0]]
}

// SettingError is a GPU setting the GPU does not support. gtune reports
// it as bad input (exit status 2).
type SettingError struct{ Msg string }

func (e *SettingError) Error() string { return e.Msg }

// nearest returns the element of list closest to v (the lower on a tie).
func nearest(list []int, v int) int {
	best := list[0]
	for _, x := range list {
		if d, bd := abs(x-v), abs(best-v); d < bd || (d == bd && x < best) {
			best = x
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// neighbours names the supported values around v: the nearest below and
// above (one of them at the ends).
func neighbours(list []int, v int) string {
	below, above := math.MinInt, math.MaxInt
	for _, x := range list {
		if x < v && x > below {
			below = x
		}
		if x > v && x < above {
			above = x
		}
	}
	switch {
	case below == math.MinInt:
		return fmt.Sprintf("%d MHz (the lowest)", above)
	case above == math.MaxInt:
		return fmt.Sprintf("%d MHz (the highest)", below)
	}
	return fmt.Sprintf("%d and %d MHz", below, above)
}

func (t Tables) checkCore(mhz, mem int) error {
	list := t.CoreMHz[mem]
	if mem == 0 {
		list = t.AllCoreMHz()
	}
	if slices.Contains(list, mhz) {
		return nil
	}
	at := ""
	if mem != 0 {
		at = fmt.Sprintf(" at memory clock %d MHz", mem)
	}
	return &SettingError{fmt.Sprintf("%s %d MHz is not a supported SM clock of %s%s; the nearest supported are %s", backend.ParamCoreClock, mhz, t.Device, at, neighbours(list, mhz))}
}

func (t Tables) checkMem(mhz int) error {
	if slices.Contains(t.MemMHz, mhz) {
		return nil
	}
	return &SettingError{fmt.Sprintf("%s %d MHz is not a supported memory clock of %s; the nearest supported are %s", backend.ParamMemClock, mhz, t.Device, neighbours(t.MemMHz, mhz))}
}

func (t Tables) checkPower(w float64) error {
	if w >= t.MinPowerW && w <= t.MaxPowerW {
		return nil
	}
	return &SettingError{fmt.Sprintf("%s %g W is outside the power-limit constraints of %s, %g–%g W", backend.ParamPowerLimit, w, t.Device, t.MinPowerW, t.MaxPowerW)}
}

// Check verifies every value of the GPU-setting parameters among params:
// each nvml_gr_clock a supported SM clock (at some supported memory
// clock), each nvml_mem_clock a supported memory clock, each
// nvml_pwr_limit within the constraints. Errors are *SettingError naming
// the parameter, the value and the nearest supported values.
func (t Tables) Check(params []space.Param) error {
	for _, p := range params {
		if !IsSetting(p.Name) {
			continue
		}
		for _, v := range p.Values {
			f, ok := v.Float()
			if !ok {
				return &SettingError{fmt.Sprintf("%s value %s is not a number", p.Name, v.String())}
			}
			var err error
			switch p.Name {
			case backend.ParamCoreClock:
				err = t.checkCore(int(f), 0)
			case backend.ParamMemClock:
				err = t.checkMem(int(f))
			default:
				err = t.checkPower(f)
			}
			if err == nil && p.Name != backend.ParamPowerLimit && f != math.Trunc(f) {
				err = &SettingError{fmt.Sprintf("%s value %s is not a whole number of MHz", p.Name, v.String())}
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// IsSetting reports whether a tunable parameter's name is one of the
// reserved GPU-setting names.
func IsSetting(name string) bool {
	return name == backend.ParamCoreClock || name == backend.ParamMemClock || name == backend.ParamPowerLimit
}

// Strategies are the GPU configuration strategies of
// autotuning-energy-efficiency-power-capping.md section 3 and the
// parameters each adds.
var Strategies = map[string][]string{
	"g1": {backend.ParamCoreClock, backend.ParamMemClock, backend.ParamPowerLimit},
	"g2": {backend.ParamCoreClock, backend.ParamMemClock},
	"g3": {backend.ParamPowerLimit},
}

// StepClocks picks clocks from a descending table: the highest, then the
// supported clock nearest to each of highest − k·step down to the lowest
// (the thesis's 100 MHz step); step ≤ 0 keeps them all.
func StepClocks(table []int, step int) []int {
	if step <= 0 || len(table) == 0 {
		return slices.Clone(table)
	}
	hi, lo := table[0], table[len(table)-1]
	var out []int
	for f := hi; f >= lo; f -= step {
		c := nearest(table, f)
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// StepPower gives power limits from min to max W in steps of step W (the
// thesis's 10 W), the maximum always included; step ≤ 0 gives 1 W steps.
func StepPower(minW, maxW, step float64) []float64 {
	if step <= 0 {
		step = 1
	}
	var out []float64
	for w := minW; w < maxW-1e-9; w += step {
		out = append(out, math.Round(w*1000)/1000)
	}
	return append(out, maxW)
}

// Values gives the parameters strategy ("g1", "g2", "g3") adds, in
// Kernel Tuner's order nvml_gr_clock, nvml_mem_clock, nvml_pwr_limit: SM
// clocks of the highest memory clock's table (StepClocks with
// clockStep), every supported memory clock, and power limits
// (StepPower with powerStep). Clocks are ints, power limits ints where
// whole. Error: an unknown strategy.
func (t Tables) Values(strategy string, clockStep int, powerStep float64) ([]space.Param, error) {
	names, ok := Strategies[strings.ToLower(strategy)]
	if !ok {
		keys := make([]string, 0, len(Strategies))
		for k := range Strategies {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, &SettingError{fmt.Sprintf("unknown GPU configuration strategy %q (valid: %s)", strategy, strings.Join(keys, ", "))}
	}
	var out []space.Param
	for _, n := range names {
		var vals []expr.Value
		switch n {
		case backend.ParamCoreClock:
			for _, c := range StepClocks(t.DefaultCoreMHz(), clockStep) {
				vals = append(vals, expr.Int(int64(c)))
			}
		case backend.ParamMemClock:
			for _, m := range t.MemMHz {
				vals = append(vals, expr.Int(int64(m)))
			}
		default:
			for _, w := range StepPower(t.MinPowerW, t.MaxPowerW, powerStep) {
				vals = append(vals, powerValue(w))
			}
		}
		out = append(out, space.Param{Name: n, Values: vals})
	}
	return out, nil
}

func powerValue(w float64) expr.Value {
	if w == math.Trunc(w) {
		return expr.Int(int64(w))
	}
	return expr.Float(w)
}

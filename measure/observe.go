package measure

import (
	"fmt"
	"math"
	"sort"
)

// Observation is one measured quantity of a plan, typed: what it is, its
// unit, how it was obtained. Launch is the index of the plan's launch it
// belongs to, or PlanScope for the whole plan.
type Observation struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Method string  `json:"method"` // provenance, e.g. "cuda-events", "nvml-energy-counter-trials", "sim-model"
	Launch int     `json:"launch"` // PlanScope or a launch index
}

// PlanScope is Observation.Launch for a quantity of the whole plan.
const PlanScope = -1

// Quantity describes an observation an Observer (or the timing routine)
// provides: the names a metric expression may read come from these.
type Quantity struct {
	Name string
	Unit string
	Doc  string
}

// Observations is a plan's observations. Several may share a name with
// different Launch values; within one scope a name appears once (Set
// replaces).
type Observations []Observation

// Get returns the whole-plan value of name.
func (o Observations) Get(name string) (float64, bool) { return o.GetLaunch(name, PlanScope) }

// GetLaunch returns the value of name for one launch (or PlanScope).
func (o Observations) GetLaunch(name string, launch int) (float64, bool) {
	for _, x := range o {
		if x.Name == name && x.Launch == launch {
			return x.Value, true
		}
	}
	return 0, false
}

// Set adds x, replacing an observation of the same name and scope.
func (o *Observations) Set(x Observation) {
	for i := range *o {
		if (*o)[i].Name == x.Name && (*o)[i].Launch == x.Launch {
			(*o)[i] = x
			return
		}
	}
	*o = append(*o, x)
}

// Plan returns the whole-plan observations as a map by name: the view
// metric expressions and objectives read.
func (o Observations) Plan() map[string]float64 {
	m := make(map[string]float64, len(o))
	for _, x := range o {
		if x.Launch == PlanScope {
			m[x.Name] = x.Value
		}
	}
	return m
}

// Sorted returns a copy ordered by scope (plan first) then name, the
// order in which they are stored and printed.
func (o Observations) Sorted() Observations {
	s := append(Observations(nil), o...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Launch != s[j].Launch {
			return s[i].Launch < s[j].Launch
		}
		return s[i].Name < s[j].Name
	})
	return s
}

// Validate reports the first observation that is not a finite number or
// has no name, unit or method: what the store refuses to keep.
func (o Observations) Validate() error {
	for _, x := range o {
		switch {
		case x.Name == "":
			return fmt.Errorf("observation without a name (value %g)", x.Value)
		case x.Method == "":
			return fmt.Errorf("observation %q has no method", x.Name)
		case math.IsNaN(x.Value):
			return fmt.Errorf("observation %q is NaN", x.Name)
		}
	}
	return nil
}

// obsBuilder adds observations of one method and scope.
type obsBuilder struct {
	out    *Observations
	method string
	launch int
}

func (b obsBuilder) add(name, unit string, v float64) {
	b.out.Set(Observation{Name: name, Unit: unit, Value: v, Method: b.method, Launch: b.launch})
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ResourceQuantities are what the compiler allotted a kernel instance,
// recorded for each launch and, for a plan of one launch, for the plan.
var ResourceQuantities = []Quantity{
	{"registers", "count", "registers per thread, as compiled"},
	{"shared_memory", "B", "static shared memory per thread block"},
	{"local_memory", "B", "local memory (spills, stack) per thread"},
	{"max_threads_per_block", "count", "largest thread block the compiled kernel can launch with"},
}

// RunQuantities are the tuner's own records of a configuration.
var RunQuantities = []Quantity{
	{"compile_time", "ms", "compile time of the configuration (sum over its kernels)"},
	{"benchmark_time", "ms", "GPU time the measurement took"},
}

// Quantities lists every built-in quantity once, in the order timing,
// energy, resources, run records: the names a metric may read.
func Quantities() []Quantity {
	var out []Quantity
	seen := map[string]bool{}
	for _, list := range [][]Quantity{TimeQuantities, EnergyQuantities, ClockObserver{}.Provides(), registeredQuantities(), ResourceQuantities, RunQuantities} {
		for _, q := range list {
			if !seen[q.Name] {
				seen[q.Name] = true
				out = append(out, q)
			}
		}
	}
	return out
}

// UnitOf returns the unit of a built-in or registered quantity ("" when
// unknown). A replay asks it for every observation of every
// configuration, so the units are indexed once (again after a Register).
func UnitOf(name string) string {
	registry.Lock()
	idx := registry.units
	registry.Unlock()
	if idx == nil {
		idx = map[string]string{}
		for _, q := range Quantities() {
			idx[q.Name] = q.Unit
		}
		registry.Lock()
		registry.units = idx
		registry.Unlock()
	}
	return idx[name]
}

package measure

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// The observer registry: what a spec may name in Gtune.Measurement.Observers
// (Request.Observers). A new sensor is one Observer type and one Register
// call in an init function of its file; Run finds it by name wherever the
// measurement runs (in the CUDA worker process for a real GPU), and its
// Provides become names a metric may read (Quantities).
var registry struct {
	sync.Mutex
	byName map[string]func() Observer
	order  []string
	units  map[string]string // UnitOf's index; nil after a Register
}

// Register makes an observer available by name. It panics on an empty or
// repeated name: registration happens at init, where a clash is a
// programming error.
func Register(name string, make func() Observer) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" || registry.byName[name] != nil {
		panic(fmt.Sprintf("measure: observer %q registered twice or unnamed", name))
	}
	if registry.byName == nil {
		registry.byName = map[string]func() Observer{}
	}
	registry.byName[name] = make
	registry.order = append(registry.order, name)
	registry.units = nil
}

// ObserverNames lists the registered observers, sorted.
func ObserverNames() []string {
	registry.Lock()
	defer registry.Unlock()
	out := append([]string(nil), registry.order...)
	sort.Strings(out)
	return out
}

// NewObserver returns a fresh observer of that name. Errors: an unknown
// name (the message lists the known ones).
func NewObserver(name string) (Observer, error) {
	registry.Lock()
	mk := registry.byName[name]
	registry.Unlock()
	if mk == nil {
		return nil, fmt.Errorf("unknown observer %q (known: %s)", name, strings.Join(ObserverNames(), ", "))
	}
	return mk(), nil
}

// registeredQuantities are the quantities of every registered observer.
func registeredQuantities() []Quantity {
	var out []Quantity
	for _, n := range ObserverNames() {
		o, _ := NewObserver(n)
		out = append(out, o.Provides()...)
	}
	return out
}

func init() {
	Register("energy", func() Observer { return EnergyObserver{} })
	Register("clocks", func() Observer { return ClockObserver{} })
	Register("power-samples", func() Observer { return &PowerSampleObserver{} })
}

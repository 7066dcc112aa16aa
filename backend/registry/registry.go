// Package registry opens gtune's backends by name: the CUDA GPU, the
// simulated GPU and its projection over a device profile. It is the
// backend factory the commands share (what a --backend flag names, and
// what each kind of backend can do before it is opened), so that no
// command asks which backend it is: it asks Kind what the backend can
// do (Modelled, Count).
package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/trace"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/nvml"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

func badInput(format string, a ...any) error { return badinput.New(format, a...) }

// Kind is what a backend name resolves to on this machine, before it is
// opened: Name is "cuda", "sim" or "model"; Modelled says its results
// come from a model (the simulated GPU, a projection), which needs a
// spec's Gtune.Simulation work and touches no GPU: it has no GPUs to
// count, no profiler to run and no settings to restore; Fallback says
// "auto" chose the simulated GPU for want of a CUDA driver (Why).
type Kind struct {
	Name     string
	Modelled bool
	Fallback bool
	Why      error
}

// Resolve gives the Kind of name ("auto": cuda where a CUDA driver
// loads, else sim). Errors: an unknown name (bad input).
func Resolve(name string) (Kind, error) {
	switch name {
	case "cuda":
		return Kind{Name: "cuda"}, nil
	case "sim", "model":
		return Kind{Name: name, Modelled: true}, nil
	case "auto":
		if err := cuda.Available(); err != nil {
			return Kind{Name: "sim", Modelled: true, Fallback: true, Why: err}, nil
		}
		return Kind{Name: "cuda"}, nil
	}
	return Kind{}, badInput("unknown backend %q (valid: auto, cuda, sim, model)", name)
}

// Count is how many GPUs the kind has on this host (NVML's count).
// Errors: a modelled kind (bad input: it has none to count), NVML's.
func (k Kind) Count() (int, error) {
	if k.Modelled {
		return 0, badInput("the simulated GPU has no GPUs to count")
	}
	lib, err := nvml.Load()
	if err != nil {
		return 0, err
	}
	if err := lib.Init(); err != nil {
		return 0, err
	}
	defer lib.Shutdown()
	return lib.DeviceCount()
}

// Options are what opening a backend takes besides its kind.
type Options struct {
	// Device is the CUDA GPU's index; a modelled GPU is device 0 (its
	// model is SimDevice) and Index tells several apart.
	Device int
	Index  int
	// SimDevice is the simulated GPU's device-database id; "" takes the
	// spec's Gtune.Simulation.Device, else spec.DefaultSimDevice.
	SimDevice string
	// Seed seeds the simulated GPU's noise where the spec does not.
	Seed int64
	// RunWall is the wall time each simulated Run takes (sim.Options).
	RunWall time.Duration
	// AllowSettings lets plans carry GPU settings (every GPU of a run
	// alike, real or simulated).
	AllowSettings bool
	// ProfileDB is the results database a projection ("model") takes
	// the device's newest measured profile from (gtune probe); "" or an
	// absent file: its specifications'.
	ProfileDB string
	// Spec is the kernel's spec (the simulated GPU's work and options).
	Spec *spec.Spec
}

// Open opens a backend of kind k. Errors: the CUDA driver's or GPU's;
// for a modelled kind, SimOptions'.
func Open(ctx context.Context, k Kind, o Options) (backend.Backend, error) {
	gpu := o.Device
	if k.Modelled {
		gpu = o.Index // a modelled GPU is device 0 of its model
	}
	defer trace.Step("prepare", "registry", fmt.Sprintf("GPU %d (%s) opened", gpu, k.Name), time.Now())
	switch k.Name {
	case "cuda":
		if err := cuda.Available(); err != nil {
			return nil, fmt.Errorf("--backend cuda: %w", err)
		}
		be, err := cuda.Open(ctx, o.Device, cuda.Options{AllowSettings: o.AllowSettings})
		if err != nil {
			return nil, err // not a nil *cuda.Backend in the interface
		}
		return be, nil
	case "sim", "model":
		d, opts, err := SimOptions(o)
		if err != nil {
			return nil, err
		}
		if k.Name == "model" {
			profiles, err := Profiles(o.ProfileDB, []*device.Description{d})
			if err != nil {
				return nil, err
			}
			opts.Profile = &profiles[0]
		}
		return sim.New(d, opts), nil
	}
	return nil, badInput("unknown backend %q", k.Name)
}

// WithCompileProcesses wraps be so that its kernels compile in n worker
// processes (compileproc): n -1 takes compileproc.DefaultSize() where the
// backend compiles (none for the simulated GPU, whose compilations take
// no time), 0 compiles in this process. On error be is closed.
func WithCompileProcesses(be backend.Backend, n int, timeout time.Duration) (backend.Backend, error) {
	if n == -1 {
		if backend.TraitsOf(be).InstantCompile {
			return be, nil
		}
		n = compileproc.DefaultSize()
	}
	if n == 0 {
		return be, nil
	}
	pool, err := compileproc.Wrap(be, compileproc.Options{Processes: n, Timeout: timeout})
	if err != nil {
		be.Close()
		return nil, err
	}
	return pool, nil
}

// SimOptions resolves the simulated GPU of o (SimDevice, else the spec's
// Gtune.Simulation.Device, else the H100) and its options (seed, noise,
// stragglers and a cold start from the spec's Simulation section).
// Errors (bad input): a device other than 0, an unknown device, a
// spec without Gtune.Simulation.
func SimOptions(o Options) (*device.Description, sim.Options, error) {
	s := o.Spec
	if o.Device != 0 {
		return nil, sim.Options{}, badInput("--device %d: the simulated GPU is device 0 (choose its model with --sim-device)", o.Device)
	}
	d, err := SimulatedGPU(o.SimDevice, s)
	if err != nil {
		return nil, sim.Options{}, err
	}
	if s == nil || s.Simulation == nil {
		path := ""
		if s != nil {
			path = s.Path
		}
		return nil, sim.Options{}, badInput("%s has no Gtune.Simulation section: the simulated GPU needs the kernel's work (Flops, Bytes) to model it", path)
	}
	opts := sim.Options{Seed: o.Seed, Index: o.Index, RunWall: o.RunWall, AllowSettings: o.AllowSettings}
	if s.Simulation.Noise > 0 {
		opts.Noise = s.Simulation.Noise
	}
	if s.Simulation.Seed != 0 {
		opts.Seed = s.Simulation.Seed
	}
	opts.Stragglers, opts.StragglerFactor = s.Simulation.Stragglers, s.Simulation.StragglerFactor
	if c := s.Simulation.ColdStartC; c > 0 {
		opts.ColdStart = &sim.ColdStart{StartC: c}
	}
	return d, opts, nil
}

// SimulatedGPU is the device-database entry the simulated GPU takes the
// shape of: id, else the spec's Gtune.Simulation.Device (s may be nil),
// else spec.DefaultSimDevice. Errors (bad input): an unknown id, a GPU
// that is not a CUDA GPU (the database also describes AMD and Intel
// GPUs for projection; the simulated GPU runs CUDA kernels, and such a
// GPU failed at run time with a compiler's "maximum 0 registers").
func SimulatedGPU(id string, s *spec.Spec) (*device.Description, error) {
	if id == "" && s != nil && s.Simulation != nil {
		id = s.Simulation.Device
	}
	d, err := device.Lookup(cmp.Or(id, spec.DefaultSimDevice))
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	if !d.IsCUDA() {
		return nil, badInput("simulated GPU %s: the %s is not a CUDA GPU (%s); the simulated GPU runs CUDA kernels: gtune devices --all lists those it can be", d.ID, d.Name, d.Vendor)
	}
	return d, nil
}

// Profiles gives each device's profile for projection: the newest one
// gtune probe measured in the database at path (read-only; an absent or
// empty file holds none); else one derived from the profiles measured
// there of other GPUs, its architecture's where there are any
// (model.DeriveProfile: a specification profile beside a measured one
// ranked the kind of profile, not the GPU); else its specifications'
// (model.SpecProfile).
// Errors: a database that cannot be read (bad input), a stored profile
// that does not decode.
func Profiles(path string, devs []*device.Description) ([]model.Profile, error) {
	measured := map[string]*store.Profile{}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		db, err := store.OpenReadOnly(path)
		if err != nil {
			return nil, badinput.Wrap(err)
		}
		defer db.Close()
		if measured, err = db.LatestProfiles(); err != nil {
			return nil, err
		}
	}
	stored := map[string]model.Profile{}
	var family []model.Measured
	for id, m := range measured {
		var p model.Profile
		if err := json.Unmarshal(m.JSON, &p); err != nil {
			return nil, fmt.Errorf("%s: device profile %d of %s: %v", path, m.ID, id, err)
		}
		stored[id] = p
		if d, err := device.Lookup(id); err == nil && p.Source == "measured" {
			family = append(family, model.Measured{Profile: p, Device: d})
		}
	}
	// Map order must not decide a median's ties.
	slices.SortFunc(family, func(a, b model.Measured) int { return strings.Compare(a.Device.ID, b.Device.ID) })
	out := make([]model.Profile, len(devs))
	for i, d := range devs {
		if p, ok := stored[d.ID]; ok {
			out[i] = p
			continue
		}
		out[i], _ = model.DeriveProfile(d, family)
	}
	return out, nil
}

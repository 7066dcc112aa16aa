package backend

import "github.com/gtune/gtune/device"

// Optional capabilities of a Backend, found by interface assertion:
// code outside cmd never asks which concrete backend it has.
//
//   - ResourceReporter (backend.go): a compiled configuration's registers
//     and shared memory without a launch.
//   - Simulator: the GPU is a model of a device-database description.
//   - Compiler: what decides a binary besides the job, for caching
//     binaries between runs (package compilecache).
//   - Replayer: the outcomes are recorded ones, verified when recorded.

// Simulator is a backend whose GPU is a model of a device-database
// description (backend/sim): its description is exact (not matched by
// the driver's name), its GPU settings are applied to a simulated control
// surface of that description (gpuctl) rather than through NVML, and the
// resources a spec declares for it (Gtune.Simulation) are what it runs.
type Simulator interface {
	Backend
	// Description is the simulated device's description (a copy).
	Description() device.Description
	// Simulated marks the capability; it does nothing.
	Simulated()
}

// Replayer is a backend that replays recorded outcomes (package cache):
// verification happened when they were recorded, so a run on it needs no
// reference output.
type Replayer interface {
	Backend
	// Replays marks the capability; it does nothing.
	Replays()
}

// Compiler is a backend whose binaries are decided by the kernel's source,
// name and options, the job's defines and simulated work, and its
// CompilerID: the compiler and target, e.g. "nvrtc 13.0 sm_90 cubin". Two
// compilations with equal inputs and CompilerID give interchangeable
// binaries (package compilecache keys them so). Errors: no compiler can
// be loaded.
type Compiler interface {
	Backend
	CompilerID() (string, error)
}

// Capability finds capability T of be, looking through wrappers (a
// backend with a method Unwrap() Backend, as gpuctl's GPU-settings
// wrapper has): a wrapper that adds behaviour does not hide what the
// backend it wraps can do.
func Capability[T any](be Backend) (T, bool) {
	for be != nil {
		if t, ok := be.(T); ok {
			return t, true
		}
		u, ok := be.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		be = u.Unwrap()
	}
	var zero T
	return zero, false
}

// SettingsRefused is the reason of a plan with GPU settings
// (Plan.Settings) run on a backend opened without permission to change
// them: the CUDA backend and the simulated GPU refuse it alike.
const SettingsRefused = "the configuration sets GPU settings (nvml_gr_clock, nvml_mem_clock or nvml_pwr_limit), " +
	"but the backend was opened without permission to change them (gtune tune --allow-gpu-settings)"

// Traits are what a backend says of itself, so that a caller decides by
// what the backend offers, not by which backend it is (no "is it the
// simulator?" outside this package).
type Traits struct {
	// InstantCompile: compiling takes no real time (the simulated GPU
	// compiles nothing; a replay looks the binary up), so there is
	// nothing to overlap with measuring.
	InstantCompile bool
	// Modelled: results come from a model or a record, not from
	// measuring a GPU (a profile it gives is "simulated", not
	// "measured").
	Modelled bool
	// DeclaredResources: a binary's registers and shared memory are the
	// spec's declared work (Gtune.Simulation), defaults included, not a
	// compiler's: they are known without compiling.
	DeclaredResources bool
}

// TraitDeclarer is a backend that states its Traits.
type TraitDeclarer interface {
	Backend
	Traits() Traits
}

// TraitsOf gives be's Traits (looking through wrappers); a backend that
// states none is a real GPU's: compiling takes time, results are
// measured, resources are the compiler's.
func TraitsOf(be Backend) Traits {
	if t, ok := Capability[TraitDeclarer](be); ok {
		return t.Traits()
	}
	return Traits{}
}

// Package nvml reads a GPU's sensors through NVIDIA's management library
// (libnvidia-ml.so.1), called with purego so that gtune builds with
// CGO_ENABLED=0: energy counter (mJ), power (mW), power limits (mW), clocks
// (MHz), temperature (°C) and clock-event reasons.
//
// Reading is the default: the Set*/Reset* functions that change clocks and
// the power limit (control.go) are looked up only when Device.Control is
// called, which package gpuctl does only under --allow-gpu-settings, after
// journalling the original settings. Nothing else in gtune calls them.
//
// Every NVML failure is an *Error carrying the NVML return code, so callers
// can tell a missing permission or an unsupported sensor from a broken GPU:
//
//	if errors.Is(err, nvml.ErrorNotSupported) { ... }
package nvml

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/gtune/gtune/internal/driverlib"
)

// EnvLibrary names the environment variable that overrides the library's
// path. When it is set, only that path is tried.
const EnvLibrary = "GTUNE_LIBNVML"

// libName is the versioned soname the driver installs; the unversioned
// libnvidia-ml.so exists only in development packages and CUDA's stubs.
const libName = "libnvidia-ml.so.1"

// candidates returns the paths Load tries, in order
// (driverlib.Candidates).
func candidates() []string { return driverlib.Candidates(EnvLibrary, libName) }

// Lib is a loaded libnvidia-ml.so.1 with its functions bound. It is safe
// for concurrent use (NVML is thread-safe).
type Lib struct {
	path   string
	handle uintptr
	// missing lists optional symbols this driver lacks; calls to them
	// return ErrorFunctionNotFound.
	missing map[string]bool

	nvmlInit              func() Return
	nvmlShutdown          func() Return
	nvmlErrorString       func(Return) string
	nvmlSystemGetDriver   func(buf *byte, n uint32) Return
	nvmlDeviceGetCount    func(n *uint32) Return
	nvmlGetHandleByIndex  func(i uint32, h *uintptr) Return
	nvmlGetHandleByPCI    func(id string, h *uintptr) Return
	nvmlGetHandleByUUID   func(id string, h *uintptr) Return
	nvmlGetName           func(h uintptr, buf *byte, n uint32) Return
	nvmlGetUUID           func(h uintptr, buf *byte, n uint32) Return
	nvmlGetTotalEnergy    func(h uintptr, mj *uint64) Return
	nvmlGetPowerUsage     func(h uintptr, mw *uint32) Return
	nvmlGetEnforcedLimit  func(h uintptr, mw *uint32) Return
	nvmlGetLimitRange     func(h uintptr, minMW, maxMW *uint32) Return
	nvmlGetDefaultLimit   func(h uintptr, mw *uint32) Return
	nvmlGetClockInfo      func(h uintptr, t ClockType, mhz *uint32) Return
	nvmlGetMaxClockInfo   func(h uintptr, t ClockType, mhz *uint32) Return
	nvmlGetMemClocks      func(h uintptr, n *uint32, mhz *uint32) Return
	nvmlGetGraphicsClocks func(h uintptr, mem uint32, n *uint32, mhz *uint32) Return
	nvmlGetTemperature    func(h uintptr, sensor uint32, c *uint32) Return
	nvmlGetEventReasons   func(h uintptr, mask *uint64) Return
	eventReasonsName      string
}

// symbol binds one C function. Required symbols make Load fail; optional
// ones are recorded as missing.
type symbol struct {
	names    []string // first found wins (newest name first)
	fn       any      // pointer to a func variable
	required bool
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load opens libnvidia-ml.so.1 and binds its functions; it does not call
// nvmlInit. The library is searched at $GTUNE_LIBNVML (alone, when set),
// then through the dynamic loader, then in /usr/lib/x86_64-linux-gnu,
// /usr/lib64, /usr/local/nvidia/lib64, /usr/lib/aarch64-linux-gnu and
// /usr/lib/wsl/lib. The result is cached for the process.
//
// Errors: a missing library ("nvml: libnvidia-ml.so.1 not found (searched
// ...; set GTUNE_LIBNVML)") or a missing required symbol (nvmlInit_v2,
// nvmlShutdown, nvmlErrorString, nvmlDeviceGetCount_v2,
// nvmlDeviceGetHandleByIndex_v2), each in one sentence.
func Load() (*Lib, error) {
	loadOnce.Do(func() { loaded, loadErr = load(candidates()) })
	return loaded, loadErr
}

func load(cands []string) (*Lib, error) {
	handle, path, err := driverlib.Open("nvml", libName, EnvLibrary, cands)
	if err != nil {
		return nil, err
	}
	l := &Lib{path: path, handle: handle, missing: map[string]bool{}}
	syms := []symbol{
		{[]string{"nvmlInit_v2"}, &l.nvmlInit, true},
		{[]string{"nvmlShutdown"}, &l.nvmlShutdown, true},
		{[]string{"nvmlErrorString"}, &l.nvmlErrorString, true},
		{[]string{"nvmlDeviceGetCount_v2"}, &l.nvmlDeviceGetCount, true},
		{[]string{"nvmlDeviceGetHandleByIndex_v2"}, &l.nvmlGetHandleByIndex, true},
		{[]string{"nvmlSystemGetDriverVersion"}, &l.nvmlSystemGetDriver, false},
		{[]string{"nvmlDeviceGetHandleByPciBusId_v2"}, &l.nvmlGetHandleByPCI, false},
		{[]string{"nvmlDeviceGetHandleByUUID"}, &l.nvmlGetHandleByUUID, false},
		{[]string{"nvmlDeviceGetName"}, &l.nvmlGetName, false},
		{[]string{"nvmlDeviceGetUUID"}, &l.nvmlGetUUID, false},
		{[]string{"nvmlDeviceGetTotalEnergyConsumption"}, &l.nvmlGetTotalEnergy, false},
		{[]string{"nvmlDeviceGetPowerUsage"}, &l.nvmlGetPowerUsage, false},
		{[]string{"nvmlDeviceGetEnforcedPowerLimit"}, &l.nvmlGetEnforcedLimit, false},
		{[]string{"nvmlDeviceGetPowerManagementLimitConstraints"}, &l.nvmlGetLimitRange, false},
		{[]string{"nvmlDeviceGetPowerManagementDefaultLimit"}, &l.nvmlGetDefaultLimit, false},
		{[]string{"nvmlDeviceGetClockInfo"}, &l.nvmlGetClockInfo, false},
		{[]string{"nvmlDeviceGetMaxClockInfo"}, &l.nvmlGetMaxClockInfo, false},
		{[]string{"nvmlDeviceGetSupportedMemoryClocks"}, &l.nvmlGetMemClocks, false},
		{[]string{"nvmlDeviceGetSupportedGraphicsClocks"}, &l.nvmlGetGraphicsClocks, false},
		{[]string{"nvmlDeviceGetTemperature"}, &l.nvmlGetTemperature, false},
		// Renamed in driver 535; the old name stays as an alias on new
		// drivers and is the only one on old drivers.
		{[]string{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}, &l.nvmlGetEventReasons, false},
	}
	for _, s := range syms {
		found := false
		for _, name := range s.names {
			addr, err := purego.Dlsym(handle, name)
			if err != nil || addr == 0 {
				continue
			}
			purego.RegisterFunc(s.fn, addr)
			if s.fn == any(&l.nvmlGetEventReasons) {
				l.eventReasonsName = name
			}
			found = true
			break
		}
		if !found {
			if s.required {
				return nil, fmt.Errorf("nvml: symbol %s not found in %s (driver too old or not an NVML library)", s.names[0], path)
			}
			l.missing[s.names[0]] = true
		}
	}
	return l, nil
}

// Path is the file (or loader name) the library was loaded from.
func (l *Lib) Path() string { return l.path }

// has reports whether an optional symbol was bound.
func (l *Lib) has(name string) bool { return !l.missing[name] }

// check turns a return code into nil or an *Error.
func (l *Lib) check(fn string, r Return) error {
	if r == Success {
		return nil
	}
	return &Error{Func: fn, Code: r, Msg: l.nvmlErrorString(r)}
}

// absent is the error of a call to a symbol the driver lacks.
func (l *Lib) absent(fn string) error {
	return &Error{Func: fn, Code: ErrorFunctionNotFound, Msg: "function not found in " + l.path}
}

// Init initialises NVML (nvmlInit_v2). Calls nest: each Init needs one
// Shutdown.
func (l *Lib) Init() error { return l.check("nvmlInit_v2", l.nvmlInit()) }

// Shutdown undoes one Init (nvmlShutdown).
func (l *Lib) Shutdown() error { return l.check("nvmlShutdown", l.nvmlShutdown()) }

// ErrorString is NVML's text for a return code (nvmlErrorString).
func (l *Lib) ErrorString(r Return) string { return l.nvmlErrorString(r) }

// DriverVersion is the kernel driver's version string, e.g. "580.159.04".
func (l *Lib) DriverVersion() (string, error) {
	if !l.has("nvmlSystemGetDriverVersion") {
		return "", l.absent("nvmlSystemGetDriverVersion")
	}
	buf := make([]byte, 96)
	if err := l.check("nvmlSystemGetDriverVersion", l.nvmlSystemGetDriver(&buf[0], uint32(len(buf)))); err != nil {
		return "", err
	}
	return cstr(buf), nil
}

// DeviceCount is the number of GPUs NVML sees (nvmlDeviceGetCount_v2).
func (l *Lib) DeviceCount() (int, error) {
	var n uint32
	if err := l.check("nvmlDeviceGetCount_v2", l.nvmlDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DeviceByIndex returns the GPU at NVML's index i (PCI order, which may
// differ from CUDA's order; prefer DeviceByPCIBusID to match a CUDA device).
func (l *Lib) DeviceByIndex(i int) (Device, error) {
	var h uintptr
	if err := l.check("nvmlDeviceGetHandleByIndex_v2", l.nvmlGetHandleByIndex(uint32(i), &h)); err != nil {
		return Device{}, err
	}
	return Device{lib: l, h: h}, nil
}

// DeviceByPCIBusID returns the GPU with PCI bus id "domain:bus:device.function"
// (as cuDeviceGetPCIBusId writes it, e.g. "0000:3B:00.0").
func (l *Lib) DeviceByPCIBusID(id string) (Device, error) {
	if !l.has("nvmlDeviceGetHandleByPciBusId_v2") {
		return Device{}, l.absent("nvmlDeviceGetHandleByPciBusId_v2")
	}
	var h uintptr
	if err := l.check("nvmlDeviceGetHandleByPciBusId_v2", l.nvmlGetHandleByPCI(id, &h)); err != nil {
		return Device{}, err
	}
	return Device{lib: l, h: h}, nil
}

// DeviceByUUID returns the GPU with the given UUID ("GPU-...").
func (l *Lib) DeviceByUUID(uuid string) (Device, error) {
	if !l.has("nvmlDeviceGetHandleByUUID") {
		return Device{}, l.absent("nvmlDeviceGetHandleByUUID")
	}
	var h uintptr
	if err := l.check("nvmlDeviceGetHandleByUUID", l.nvmlGetHandleByUUID(uuid, &h)); err != nil {
		return Device{}, err
	}
	return Device{lib: l, h: h}, nil
}

// cstr returns the NUL-terminated prefix of b.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

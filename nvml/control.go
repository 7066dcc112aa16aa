package nvml

import (
	"sync"

	"github.com/ebitengine/purego"
)

// Control changes a GPU's clocks and power limit: locked clocks
// (nvmlDeviceSetGpuLockedClocks, nvmlDeviceSetMemoryLockedClocks; Volta
// and newer), application clocks (nvmlDeviceSetApplicationsClocks; the
// older mechanism) and the power limit
// (nvmlDeviceSetPowerManagementLimit), and resets them.
//
// The setting functions are not bound by Load: they are looked up
// (Dlsym) only when Device.Control is called, so a program that never
// asks for a Control has no way to change the GPU (the rest of the
// package stays read-only). A symbol the driver lacks makes its method
// return an *Error with ErrorFunctionNotFound rather than crash. Most
// setters need root (or the driver's "unrestricted" mode for application
// clocks) and answer ErrorNoPermission otherwise.
//
// Never use Control on a GPU other people share: gtune calls it only
// with --allow-gpu-settings (see ../docs/CONTRIBUTING.md).
type Control struct {
	d Device
	c *controlFuncs
}

type controlFuncs struct {
	missing            map[string]bool
	setGpuLocked       func(h uintptr, minMHz, maxMHz uint32) Return
	resetGpuLocked     func(h uintptr) Return
	setMemLocked       func(h uintptr, minMHz, maxMHz uint32) Return
	resetMemLocked     func(h uintptr) Return
	setAppClocks       func(h uintptr, memMHz, gfxMHz uint32) Return
	resetAppClocks     func(h uintptr) Return
	setPowerLimit      func(h uintptr, mw uint32) Return
	getPowerLimit      func(h uintptr, mw *uint32) Return
	getAppClock        func(h uintptr, t ClockType, mhz *uint32) Return
	getDefaultAppClock func(h uintptr, t ClockType, mhz *uint32) Return
}

// Names of the control functions in libnvidia-ml (nvml.h).
const (
	fnSetGpuLocked       = "nvmlDeviceSetGpuLockedClocks"
	fnResetGpuLocked     = "nvmlDeviceResetGpuLockedClocks"
	fnSetMemLocked       = "nvmlDeviceSetMemoryLockedClocks"
	fnResetMemLocked     = "nvmlDeviceResetMemoryLockedClocks"
	fnSetAppClocks       = "nvmlDeviceSetApplicationsClocks"
	fnResetAppClocks     = "nvmlDeviceResetApplicationsClocks"
	fnSetPowerLimit      = "nvmlDeviceSetPowerManagementLimit"
	fnGetPowerLimit      = "nvmlDeviceGetPowerManagementLimit"
	fnGetAppClock        = "nvmlDeviceGetApplicationsClock"
	fnGetDefaultAppClock = "nvmlDeviceGetDefaultApplicationsClock"
)

var (
	controlMu    sync.Mutex
	controlCache = map[*Lib]*controlFuncs{}
)

// bindControl looks up the control symbols in l once per library.
func bindControl(l *Lib) *controlFuncs {
	controlMu.Lock()
	defer controlMu.Unlock()
	if c, ok := controlCache[l]; ok {
		return c
	}
	c := &controlFuncs{missing: map[string]bool{}}
	for _, s := range []struct {
		name string
		fn   any
	}{
		{fnSetGpuLocked, &c.setGpuLocked},
		{fnResetGpuLocked, &c.resetGpuLocked},
		{fnSetMemLocked, &c.setMemLocked},
		{fnResetMemLocked, &c.resetMemLocked},
		{fnSetAppClocks, &c.setAppClocks},
		{fnResetAppClocks, &c.resetAppClocks},
		{fnSetPowerLimit, &c.setPowerLimit},
		{fnGetPowerLimit, &c.getPowerLimit},
		{fnGetAppClock, &c.getAppClock},
		{fnGetDefaultAppClock, &c.getDefaultAppClock},
	} {
		addr, err := purego.Dlsym(l.handle, s.name)
		if err != nil || addr == 0 {
			c.missing[s.name] = true
			continue
		}
		purego.RegisterFunc(s.fn, addr)
	}
	controlCache[l] = c
	return c
}

// Control binds the control functions of d's library (once per library)
// and returns d's Control. It changes nothing by itself.
func (d Device) Control() *Control { return &Control{d: d, c: bindControl(d.lib)} }

// Missing lists the control functions this driver lacks, sorted.
func (c *Control) Missing() []string {
	var out []string
	for _, n := range []string{fnGetAppClock, fnGetDefaultAppClock, fnGetPowerLimit,
		fnResetAppClocks, fnResetGpuLocked, fnResetMemLocked, fnSetAppClocks, fnSetGpuLocked, fnSetMemLocked, fnSetPowerLimit} {
		if c.c.missing[n] {
			out = append(out, n)
		}
	}
	return out
}

// Device is the GPU this Control acts on.
func (c *Control) Device() Device { return c.d }

func (c *Control) call(fn string, f func() Return) error {
	if c.c.missing[fn] {
		return c.d.lib.absent(fn)
	}
	return c.d.lib.check(fn, f())
}

// SetGpuLockedClocks holds the graphics (SM) clock within [minMHz, maxMHz]
// (nvmlDeviceSetGpuLockedClocks; Volta and newer; root).
func (c *Control) SetGpuLockedClocks(minMHz, maxMHz uint32) error {
	return c.call(fnSetGpuLocked, func() Return { return c.c.setGpuLocked(c.d.h, minMHz, maxMHz) })
}

// ResetGpuLockedClocks lets the SM clock float again
// (nvmlDeviceResetGpuLockedClocks).
func (c *Control) ResetGpuLockedClocks() error {
	return c.call(fnResetGpuLocked, func() Return { return c.c.resetGpuLocked(c.d.h) })
}

// SetMemoryLockedClocks holds the memory clock within [minMHz, maxMHz]
// (nvmlDeviceSetMemoryLockedClocks; Ampere and newer; root).
func (c *Control) SetMemoryLockedClocks(minMHz, maxMHz uint32) error {
	return c.call(fnSetMemLocked, func() Return { return c.c.setMemLocked(c.d.h, minMHz, maxMHz) })
}

// ResetMemoryLockedClocks lets the memory clock float again
// (nvmlDeviceResetMemoryLockedClocks).
func (c *Control) ResetMemoryLockedClocks() error {
	return c.call(fnResetMemLocked, func() Return { return c.c.resetMemLocked(c.d.h) })
}

// SetApplicationsClocks sets the application clocks, a supported pair of
// memory and graphics clocks in MHz (nvmlDeviceSetApplicationsClocks;
// Kepler and newer, mostly Tesla boards; root unless unrestricted).
func (c *Control) SetApplicationsClocks(memMHz, gfxMHz uint32) error {
	return c.call(fnSetAppClocks, func() Return { return c.c.setAppClocks(c.d.h, memMHz, gfxMHz) })
}

// ResetApplicationsClocks returns the application clocks to their
// defaults (nvmlDeviceResetApplicationsClocks).
func (c *Control) ResetApplicationsClocks() error {
	return c.call(fnResetAppClocks, func() Return { return c.c.resetAppClocks(c.d.h) })
}

// SetPowerManagementLimitMW sets the power limit, mW, within
// PowerLimitConstraintsMW (nvmlDeviceSetPowerManagementLimit; root).
func (c *Control) SetPowerManagementLimitMW(mw uint32) error {
	return c.call(fnSetPowerLimit, func() Return { return c.c.setPowerLimit(c.d.h, mw) })
}

// PowerManagementLimitMW is the power limit as set (before any external
// cap is applied; see Device.EnforcedPowerLimitMW), mW
// (nvmlDeviceGetPowerManagementLimit).
func (c *Control) PowerManagementLimitMW() (uint32, error) {
	var v uint32
	err := c.call(fnGetPowerLimit, func() Return { return c.c.getPowerLimit(c.d.h, &v) })
	return v, err
}

// ApplicationsClockMHz is the application clock of a domain, MHz
// (nvmlDeviceGetApplicationsClock).
func (c *Control) ApplicationsClockMHz(t ClockType) (uint32, error) {
	var v uint32
	err := c.call(fnGetAppClock, func() Return { return c.c.getAppClock(c.d.h, t, &v) })
	return v, err
}

// DefaultApplicationsClockMHz is the default application clock of a
// domain, MHz (nvmlDeviceGetDefaultApplicationsClock).
func (c *Control) DefaultApplicationsClockMHz(t ClockType) (uint32, error) {
	var v uint32
	err := c.call(fnGetDefaultAppClock, func() Return { return c.c.getDefaultAppClock(c.d.h, t, &v) })
	return v, err
}

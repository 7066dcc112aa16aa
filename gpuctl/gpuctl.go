// Package gpuctl makes a GPU's SM clock, memory clock and power limit
// tunable parameters (nvml_gr_clock, nvml_mem_clock, nvml_pwr_limit, as
// Kernel Tuner names them), the three GPU configuration strategies of
// autotuning-energy-efficiency-power-capping.md section 3 (G1 = {core,
// memory, power limit}, G2 = {core, memory}, G3 = {power limit}):
//
//   - Controller changes and restores the settings, through NVML on a real
//     GPU or through the simulated GPU's control surface (sim.Control); both
//     go through the same code (surfaceController), so the simulator
//     exercises the real logic: locked clocks first, application clocks
//     when locked clocks are not supported, NVML's return codes;
//   - Journal records the original settings on disk before the first
//     change, so that `gtune restore` can put them back after a crash;
//   - Session applies a configuration's Settings before each Run (Wrap),
//     writing the journal first and restoring at Close;
//   - Tables holds the supported clocks and power-limit range and makes
//     the parameter values of G1/G2/G3 (Values) and checks user values
//     (Check);
//   - CappingRatio is the thesis's power-capping ratio;
//   - FitRidge fits Kernel Tuner's power–frequency model with a voltage
//     knee and RidgeWindow picks the clocks around it.
//
// Where the setting happens: on a real GPU the worker process holds the
// CUDA context, but clocks and the power limit are device-wide NVML
// settings, not CUDA state, so gtune applies them from the parent process
// (this package, NVML only) before each Run; the worker only observes the
// clocks during the energy window (the sm_clock and mem_clock
// observations of measure.EnergyObserver), and those observed clocks, not the requested ones, are
// what the results database records as sm_clock and mem_clock.
package gpuctl

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/nvml"
)

// State is a GPU's settings. Clocks in MHz, power in W; 0 means "not
// locked" for the locked clocks and "unknown" for the others.
type State struct {
	CoreLockedMHz int     `json:"core_locked_mhz"` // SM clock held by locked clocks
	MemLockedMHz  int     `json:"mem_locked_mhz"`  // memory clock held by locked clocks
	AppCoreMHz    int     `json:"app_core_mhz"`    // application SM clock
	AppMemMHz     int     `json:"app_mem_mhz"`     // application memory clock
	PowerLimitW   float64 `json:"power_limit_w"`   // power management limit
}

// Controller reads and changes one GPU's settings.
type Controller interface {
	// Get reads the current settings. Locked clocks come from the surface
	// where it can tell (the simulator), else from what this Controller
	// itself locked (NVML has no query for locked clocks).
	Get() (State, error)
	// SetCoreClock holds the SM clock at mhz: locked clocks, or the
	// application clocks where locked clocks are not supported.
	SetCoreClock(mhz int) error
	// SetMemClock holds the memory clock at mhz, likewise.
	SetMemClock(mhz int) error
	// SetPowerLimit sets the power limit, W.
	SetPowerLimit(w float64) error
	// Restore puts back a State from Get: unlocks clocks that were not
	// locked, sets the application clocks and the power limit that
	// differ. It tries every part and joins the errors.
	Restore(State) error
	// DeviceUUID is the GPU's UUID.
	DeviceUUID() string
	// Tables are the supported clocks and the power-limit range.
	Tables() Tables
}

// Surface is the part of NVML a Controller uses: nvml.Device with its
// nvml.Control, or sim.Control. Clocks MHz, power mW.
type Surface interface {
	UUID() (string, error)
	SupportedMemoryClocksMHz() ([]uint32, error)
	SupportedGraphicsClocksMHz(memMHz uint32) ([]uint32, error)
	PowerLimitConstraintsMW() (minMW, maxMW uint32, err error)
	PowerManagementLimitMW() (uint32, error)
	ApplicationsClockMHz(t nvml.ClockType) (uint32, error)
	SetGpuLockedClocks(minMHz, maxMHz uint32) error
	ResetGpuLockedClocks() error
	SetMemoryLockedClocks(minMHz, maxMHz uint32) error
	ResetMemoryLockedClocks() error
	SetApplicationsClocks(memMHz, gfxMHz uint32) error
	ResetApplicationsClocks() error
	SetPowerManagementLimitMW(mw uint32) error
}

// lockedReader is offered by surfaces that can tell their locked clocks
// (sim.Control).
type lockedReader interface {
	LockedClocksMHz() (core, mem [2]uint32)
}

// ErrNoPermission is matched (errors.Is) by a setting refused for lack of
// permission (NVML_ERROR_NO_PERMISSION).
var ErrNoPermission = nvml.ErrorNoPermission

// New returns the Controller of a surface, reading its UUID and tables.
func New(s Surface) (Controller, error) {
	uuid, err := s.UUID()
	if err != nil {
		return nil, fmt.Errorf("gpuctl: %w", err)
	}
	t, err := readTables(s)
	if err != nil {
		return nil, err
	}
	t.Device = uuid
	if n, ok := s.(interface{ Name() (string, error) }); ok {
		if name, err := n.Name(); err == nil {
			t.Device = name
		}
	}
	return &surfaceController{s: s, uuid: uuid, t: t}, nil
}

// NewSim is the Controller of the simulated GPU's control surface.
func NewSim(c *sim.Control) (Controller, error) { return New(c) }

// OpenNVML loads NVML, initialises it and returns the Controller of the
// GPU with the given UUID. It binds NVML's setting functions
// (nvml.Device.Control) but changes nothing. Call it only when the user
// allowed GPU settings (--allow-gpu-settings).
func OpenNVML(uuid string) (Controller, error) {
	lib, err := nvml.Load()
	if err != nil {
		return nil, err
	}
	if err := lib.Init(); err != nil {
		return nil, err
	}
	d, err := lib.DeviceByUUID(uuid)
	if err != nil {
		return nil, fmt.Errorf("gpuctl: GPU %s: %w", uuid, err)
	}
	return New(nvmlSurface{d: d, c: d.Control()})
}

// nvmlSurface joins a real device's read-only queries and its Control.
type nvmlSurface struct {
	d nvml.Device
	c *nvml.Control
}

func (n nvmlSurface) UUID() (string, error) { return n.d.UUID() }
func (n nvmlSurface) Name() (string, error) { return n.d.Name() }
func (n nvmlSurface) SupportedMemoryClocksMHz() ([]uint32, error) {
	return n.d.SupportedMemoryClocksMHz()
}
func (n nvmlSurface) SupportedGraphicsClocksMHz(m uint32) ([]uint32, error) {
	return n.d.SupportedGraphicsClocksMHz(m)
}
func (n nvmlSurface) PowerLimitConstraintsMW() (uint32, uint32, error) {
	return n.d.PowerLimitConstraintsMW()
}
func (n nvmlSurface) PowerManagementLimitMW() (uint32, error) { return n.c.PowerManagementLimitMW() }
func (n nvmlSurface) ApplicationsClockMHz(t nvml.ClockType) (uint32, error) {
	return n.c.ApplicationsClockMHz(t)
}
func (n nvmlSurface) SetGpuLockedClocks(lo, hi uint32) error { return n.c.SetGpuLockedClocks(lo, hi) }
func (n nvmlSurface) ResetGpuLockedClocks() error            { return n.c.ResetGpuLockedClocks() }
func (n nvmlSurface) SetMemoryLockedClocks(lo, hi uint32) error {
	return n.c.SetMemoryLockedClocks(lo, hi)
}
func (n nvmlSurface) ResetMemoryLockedClocks() error          { return n.c.ResetMemoryLockedClocks() }
func (n nvmlSurface) SetApplicationsClocks(m, g uint32) error { return n.c.SetApplicationsClocks(m, g) }
func (n nvmlSurface) ResetApplicationsClocks() error          { return n.c.ResetApplicationsClocks() }
func (n nvmlSurface) SetPowerManagementLimitMW(mw uint32) error {
	return n.c.SetPowerManagementLimitMW(mw)
}

func readTables(s Surface) (Tables, error) {
	var t Tables
	mems, err := s.SupportedMemoryClocksMHz()
	if err != nil {
		return t, fmt.Errorf("gpuctl: supported memory clocks: %w", err)
	}
	t.CoreMHz = map[int][]int{}
	for _, m := range mems {
		cores, err := s.SupportedGraphicsClocksMHz(m)
		if err != nil {
			return t, fmt.Errorf("gpuctl: supported SM clocks at memory clock %d MHz: %w", m, err)
		}
		t.MemMHz = append(t.MemMHz, int(m))
		for _, c := range cores {
			t.CoreMHz[int(m)] = append(t.CoreMHz[int(m)], int(c))
		}
	}
	lo, hi, err := s.PowerLimitConstraintsMW()
	if err != nil {
		return t, fmt.Errorf("gpuctl: power-limit constraints: %w", err)
	}
	t.MinPowerW, t.MaxPowerW = float64(lo)/1000, float64(hi)/1000
	t.normalise()
	return t, nil
}

// unsupported reports an answer that calls for the fallback.
func unsupported(err error) bool {
	return errors.Is(err, nvml.ErrorNotSupported) || errors.Is(err, nvml.ErrorFunctionNotFound)
}

type surfaceController struct {
	s    Surface
	uuid string
	t    Tables

	mu                    sync.Mutex
	coreLocked, memLocked int // what this controller locked (MHz), 0 none
}

func (c *surfaceController) DeviceUUID() string { return c.uuid }
func (c *surfaceController) Tables() Tables     { return c.t }

func (c *surfaceController) Get() (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var st State
	st.CoreLockedMHz, st.MemLockedMHz = c.coreLocked, c.memLocked
	if lr, ok := c.s.(lockedReader); ok {
		core, mem := lr.LockedClocksMHz()
		st.CoreLockedMHz, st.MemLockedMHz = int(core[1]), int(mem[1])
	}
	var errs []error
	if v, err := c.s.ApplicationsClockMHz(nvml.ClockGraphics); err == nil {
		st.AppCoreMHz = int(v)
	} else if !unsupported(err) {
		errs = append(errs, err)
	}
	if v, err := c.s.ApplicationsClockMHz(nvml.ClockMem); err == nil {
		st.AppMemMHz = int(v)
	} else if !unsupported(err) {
		errs = append(errs, err)
	}
	if v, err := c.s.PowerManagementLimitMW(); err == nil {
		st.PowerLimitW = float64(v) / 1000
	} else if !unsupported(err) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return st, fmt.Errorf("gpuctl: reading the settings of %s: %w", c.uuid, errors.Join(errs...))
	}
	return st, nil
}

// memNow is the memory clock the SM-clock table applies to: the locked
// one, else the application one, else the highest.
func (c *surfaceController) memNow() int {
	if c.memLocked != 0 {
		return c.memLocked
	}
	if v, err := c.s.ApplicationsClockMHz(nvml.ClockMem); err == nil && slices.Contains(c.t.MemMHz, int(v)) {
		return int(v)
	}
	return c.t.MemMHz[0]
}

func (c *surfaceController) SetCoreClock(mhz int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	mem := c.memNow()
	if err := c.t.checkCore(mhz, mem); err != nil {
		return err
	}
	err := c.s.SetGpuLockedClocks(uint32(mhz), uint32(mhz))
	if err == nil {
		c.coreLocked = mhz
		return nil
	}
	if !unsupported(err) {
		return fmt.Errorf("gpuctl: SM clock %d MHz: %w", mhz, err)
	}
	if err := c.s.SetApplicationsClocks(uint32(mem), uint32(mhz)); err != nil {
		return fmt.Errorf("gpuctl: SM clock %d MHz (application clocks; locked clocks not supported): %w", mhz, err)
	}
	return nil
}

func (c *surfaceController) SetMemClock(mhz int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.t.checkMem(mhz); err != nil {
		return err
	}
	err := c.s.SetMemoryLockedClocks(uint32(mhz), uint32(mhz))
	if err == nil {
		c.memLocked = mhz
		return nil
	}
	if !unsupported(err) {
		return fmt.Errorf("gpuctl: memory clock %d MHz: %w", mhz, err)
	}
	// Application clocks set both; keep the SM clock, or the nearest one
	// supported at the new memory clock.
	core := c.t.CoreMHz[mhz][0]
	if v, err := c.s.ApplicationsClockMHz(nvml.ClockGraphics); err == nil {
		core = nearest(c.t.CoreMHz[mhz], int(v))
	}
	if err := c.s.SetApplicationsClocks(uint32(mhz), uint32(core)); err != nil {
		return fmt.Errorf("gpuctl: memory clock %d MHz (application clocks; locked clocks not supported): %w", mhz, err)
	}
	return nil
}

func (c *surfaceController) SetPowerLimit(w float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.t.checkPower(w); err != nil {
		return err
	}
	if err := c.s.SetPowerManagementLimitMW(uint32(math.Round(w * 1000))); err != nil {
		return fmt.Errorf("gpuctl: power limit %g W: %w", w, err)
	}
	return nil
}

func (c *surfaceController) Restore(orig State) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	keep := func(what string, err error) {
		if err != nil && !unsupported(err) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	// Locked clocks override application clocks: undo them first. NVML
	// cannot say whether clocks are locked, so unlock unconditionally.
	if orig.CoreLockedMHz == 0 {
		keep("unlocking the SM clock", c.s.ResetGpuLockedClocks())
		c.coreLocked = 0
	} else {
		keep("locking the SM clock", c.s.SetGpuLockedClocks(uint32(orig.CoreLockedMHz), uint32(orig.CoreLockedMHz)))
		c.coreLocked = orig.CoreLockedMHz
	}
	if orig.MemLockedMHz == 0 {
		keep("unlocking the memory clock", c.s.ResetMemoryLockedClocks())
		c.memLocked = 0
	} else {
		keep("locking the memory clock", c.s.SetMemoryLockedClocks(uint32(orig.MemLockedMHz), uint32(orig.MemLockedMHz)))
		c.memLocked = orig.MemLockedMHz
	}
	if orig.AppCoreMHz > 0 && orig.AppMemMHz > 0 {
		core, e1 := c.s.ApplicationsClockMHz(nvml.ClockGraphics)
		mem, e2 := c.s.ApplicationsClockMHz(nvml.ClockMem)
		if e1 != nil || e2 != nil || int(core) != orig.AppCoreMHz || int(mem) != orig.AppMemMHz {
			keep("application clocks", c.s.SetApplicationsClocks(uint32(orig.AppMemMHz), uint32(orig.AppCoreMHz)))
		}
	}
	if orig.PowerLimitW > 0 {
		want := uint32(math.Round(orig.PowerLimitW * 1000))
		if cur, err := c.s.PowerManagementLimitMW(); err != nil || cur != want {
			keep("power limit", c.s.SetPowerManagementLimitMW(want))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("gpuctl: restoring the settings of %s: %w", c.uuid, errors.Join(errs...))
	}
	return nil
}

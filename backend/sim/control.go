package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/bounded"
	"github.com/gtune/gtune/nvml"
)

// Control is the simulated GPU's management surface: the subset of NVML
// that reads and changes clocks and the power limit, with NVML's rules
// and return codes, so that code written against NVML (package gpuctl)
// can be exercised, crash recovery included, without a GPU:
//
//   - supported tables: memory clocks from Description.MemoryClocksMHz,
//     SM clocks per memory clock from Description.ClockTables (else
//     CoreClocksMHz at every memory clock);
//   - locked SM clocks need compute capability ≥ 7.0 (Volta; NVML answers
//     NVML_ERROR_NOT_SUPPORTED before), locked memory clocks ≥ 8.0
//     (Ampere); application clocks work on every simulated GPU and must
//     be a supported (memory, SM) pair;
//   - the power limit must lie within the constraints
//     [PowerLimitMinW, PowerLimitMaxW] (NVML_ERROR_INVALID_ARGUMENT);
//   - every setter answers NVML_ERROR_NO_PERMISSION when the simulated
//     user lacks permission (ControlState.NoPermission).
//
// With a state file every change is written through to it (fsync, then
// rename) before the setter returns, like a real GPU whose settings
// outlive the process that changed them: a process killed after a change
// leaves the file changed, and another process (gtune restore) can open
// it and put the settings back.
type Control struct {
	dev  *device.Description
	path string

	mu sync.Mutex
	st ControlState
}

// ControlState is what the simulated driver holds. Clocks in MHz, power in
// mW (NVML's units).
type ControlState struct {
	Device       string `json:"device"` // device-database id
	UUID         string `json:"uuid"`
	NoPermission bool   `json:"no_permission"` // setters answer NVML_ERROR_NO_PERMISSION
	// LockedCoreMHz and LockedMemMHz are the locked ranges [min, max];
	// {0, 0} when not locked.
	LockedCoreMHz [2]uint32 `json:"locked_core_mhz"`
	LockedMemMHz  [2]uint32 `json:"locked_mem_mhz"`
	AppCoreMHz    uint32    `json:"app_core_mhz"`
	AppMemMHz     uint32    `json:"app_mem_mhz"`
	PowerLimitMW  uint32    `json:"power_limit_mw"`
}

// ControlOptions configure NewControl.
type ControlOptions struct {
	// StateFile keeps the state across processes; "" keeps it in memory.
	// An existing file is loaded (it must describe the same device).
	StateFile string
	// NoPermission makes a new state's setters answer
	// NVML_ERROR_NO_PERMISSION (an existing file keeps its own value).
	NoPermission bool
	// UUID is a new state's GPU UUID (default "SIM-<id>"): a further
	// simulated GPU of one model has its own (Sim.Device, Options.Index).
	UUID string
}

// DefaultControlState is the state of a freshly booted d: nothing locked,
// default application clocks (the base clock, snapped to the table, before
// Volta; the highest clock from Volta on, as nvidia-smi reports them on a
// K20 and an H100), the default power limit.
func DefaultControlState(d *device.Description) ControlState {
	app := d.MaxCoreClockMHz()
	if d.ComputeMajor < 7 && d.BaseClockMHz > 0 {
		app = snapClock(d, d.BaseClockMHz)
	}
	return ControlState{
		Device: d.ID, UUID: "SIM-" + d.ID,
		AppCoreMHz: uint32(app), AppMemMHz: uint32(d.MemoryClockMHz),
		PowerLimitMW: uint32(math.Round(d.PowerLimitDefaultW * 1000)),
	}
}

// NewControl returns the control surface of the simulated d. Errors: an
// unreadable or malformed state file, or one written for another device.
func NewControl(d *device.Description, opts ControlOptions) (*Control, error) {
	dc := *d
	c := &Control{dev: &dc, path: opts.StateFile}
	if opts.StateFile != "" {
		abs, err := filepath.Abs(opts.StateFile)
		if err != nil {
			return nil, err
		}
		c.path = abs
		st, err := readControlState(abs)
		switch {
		case err == nil:
			if st.Device != d.ID {
				return nil, fmt.Errorf("sim: state file %s is for device %q, not %q", abs, st.Device, d.ID)
			}
			c.st = st
			return c, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	c.st = DefaultControlState(d)
	c.st.NoPermission = opts.NoPermission
	if opts.UUID != "" {
		c.st.UUID = opts.UUID
	}
	if c.path != "" {
		if err := c.save(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// OpenControl opens an existing state file, whatever device it is for.
// Errors: a missing, unreadable or malformed file, or an unknown device.
func OpenControl(path string) (*Control, error) {
	st, err := readControlState(path)
	if err != nil {
		return nil, err
	}
	d, err := device.Lookup(st.Device)
	if err != nil {
		return nil, fmt.Errorf("sim: state file %s: %w", path, err)
	}
	return NewControl(d, ControlOptions{StateFile: path})
}

func readControlState(path string) (ControlState, error) {
	var st ControlState
	b, err := bounded.ReadFile(path, bounded.MiB, "a simulated GPU's state file")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("sim: state file %s: %w", path, err)
	}
	if st.Device == "" {
		return st, fmt.Errorf("sim: state file %s names no device", path)
	}
	return st, nil
}

// save writes the state through: temporary file, fsync, rename.
func (c *Control) save() error {
	b, err := json.MarshalIndent(c.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}

// State is a copy of the simulated driver's state.
func (c *Control) State() ControlState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// StateFile is the absolute path of the state file, "" in memory.
func (c *Control) StateFile() string { return c.path }

// Description is a copy of the simulated device.
func (c *Control) Description() device.Description { return *c.dev }

var nvmlText = map[nvml.Return]string{
	nvml.ErrorNoPermission:     "Insufficient Permissions",
	nvml.ErrorNotSupported:     "Not Supported",
	nvml.ErrorInvalidArgument:  "Invalid Argument",
	nvml.ErrorFreqNotSupported: "Requested frequency not supported",
}

func nvmlErr(fn string, code nvml.Return) error {
	return &nvml.Error{Func: fn, Code: code, Msg: nvmlText[code]}
}

// UUID is the simulated GPU's UUID, "SIM-<id>" (as Sim.Device reports).
func (c *Control) UUID() (string, error) { return c.State().UUID, nil }

// Name is the product name of the simulated GPU (as the device database
// gives it; NVML's nvmlDeviceGetName).
func (c *Control) Name() (string, error) { return c.dev.Name, nil }

// SupportedMemoryClocksMHz lists the memory clocks, highest first.
func (c *Control) SupportedMemoryClocksMHz() ([]uint32, error) {
	var out []uint32
	for _, m := range c.dev.MemoryClocksMHz {
		out = append(out, uint32(m))
	}
	return out, nil
}

// SupportedGraphicsClocksMHz lists the SM clocks supported with memory
// clock memMHz, highest first; NVML_ERROR_NOT_FOUND for a memory clock
// that is not supported.
func (c *Control) SupportedGraphicsClocksMHz(memMHz uint32) ([]uint32, error) {
	core := c.coreTable(int(memMHz))
	if core == nil {
		return nil, nvmlErr("nvmlDeviceGetSupportedGraphicsClocks", nvml.ErrorNotFound)
	}
	out := make([]uint32, len(core))
	for i, f := range core {
		out[i] = uint32(f)
	}
	return out, nil
}

func (c *Control) coreTable(mem int) []int {
	for _, t := range c.dev.ClockTables {
		if t.MemoryClockMHz == mem {
			return t.CoreClocksMHz
		}
	}
	if len(c.dev.ClockTables) == 0 && slices.Contains(c.dev.MemoryClocksMHz, mem) {
		return c.dev.CoreClocksMHz
	}
	return nil
}

// PowerLimitConstraintsMW is the settable range of the power limit, mW.
func (c *Control) PowerLimitConstraintsMW() (uint32, uint32, error) {
	return uint32(math.Round(c.dev.PowerLimitMinW * 1000)), uint32(math.Round(c.dev.PowerLimitMaxW * 1000)), nil
}

// PowerManagementLimitMW is the power limit, mW.
func (c *Control) PowerManagementLimitMW() (uint32, error) { return c.State().PowerLimitMW, nil }

// ApplicationsClockMHz is the application clock of a domain (SM/graphics
// or memory), MHz.
func (c *Control) ApplicationsClockMHz(t nvml.ClockType) (uint32, error) {
	st := c.State()
	switch t {
	case nvml.ClockGraphics, nvml.ClockSM:
		return st.AppCoreMHz, nil
	case nvml.ClockMem:
		return st.AppMemMHz, nil
	}
	return 0, nvmlErr("nvmlDeviceGetApplicationsClock", nvml.ErrorInvalidArgument)
}

// LockedClocksMHz are the locked SM and memory clock ranges, {0, 0} when
// not locked. Real NVML has no such query; gpuctl uses it where the
// surface offers it.
func (c *Control) LockedClocksMHz() (core, mem [2]uint32) {
	st := c.State()
	return st.LockedCoreMHz, st.LockedMemMHz
}

// ClockMHz is the clock a busy kernel would see now: the top of a locked
// range, else the application clock.
func (c *Control) ClockMHz(t nvml.ClockType) (uint32, error) {
	st := c.State()
	switch t {
	case nvml.ClockGraphics, nvml.ClockSM:
		if st.LockedCoreMHz[1] != 0 {
			return st.LockedCoreMHz[1], nil
		}
		return st.AppCoreMHz, nil
	case nvml.ClockMem:
		if st.LockedMemMHz[1] != 0 {
			return st.LockedMemMHz[1], nil
		}
		return st.AppMemMHz, nil
	}
	return 0, nvmlErr("nvmlDeviceGetClockInfo", nvml.ErrorInvalidArgument)
}

// change runs f on the state under the lock when the user has
// permission, then writes the state through.
func (c *Control) change(fn string, f func(st *ControlState) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.NoPermission {
		return nvmlErr(fn, nvml.ErrorNoPermission)
	}
	next := c.st
	if err := f(&next); err != nil {
		return err
	}
	c.st = next
	if c.path == "" {
		return nil
	}
	return c.save()
}

func inRange(v uint32, list []int) bool {
	return len(list) > 0 && int(v) <= list[0] && int(v) >= list[len(list)-1]
}

// SetGpuLockedClocks locks the SM clock to [minMHz, maxMHz]; both must lie
// within the supported range, min ≤ max (nvmlDeviceSetGpuLockedClocks).
func (c *Control) SetGpuLockedClocks(minMHz, maxMHz uint32) error {
	const fn = "nvmlDeviceSetGpuLockedClocks"
	if c.dev.ComputeMajor < 7 {
		return nvmlErr(fn, nvml.ErrorNotSupported)
	}
	return c.change(fn, func(st *ControlState) error {
		core := c.coreTable(int(st.AppMemMHz))
		if minMHz > maxMHz || !inRange(minMHz, core) || !inRange(maxMHz, core) {
			return nvmlErr(fn, nvml.ErrorInvalidArgument)
		}
		st.LockedCoreMHz = [2]uint32{minMHz, maxMHz}
		return nil
	})
}

// ResetGpuLockedClocks unlocks the SM clock.
func (c *Control) ResetGpuLockedClocks() error {
	const fn = "nvmlDeviceResetGpuLockedClocks"
	if c.dev.ComputeMajor < 7 {
		return nvmlErr(fn, nvml.ErrorNotSupported)
	}
	return c.change(fn, func(st *ControlState) error { st.LockedCoreMHz = [2]uint32{}; return nil })
}

// SetMemoryLockedClocks locks the memory clock to [minMHz, maxMHz], each a
// supported memory clock (nvmlDeviceSetMemoryLockedClocks).
func (c *Control) SetMemoryLockedClocks(minMHz, maxMHz uint32) error {
	const fn = "nvmlDeviceSetMemoryLockedClocks"
	if c.dev.ComputeMajor < 8 {
		return nvmlErr(fn, nvml.ErrorNotSupported)
	}
	return c.change(fn, func(st *ControlState) error {
		if minMHz > maxMHz || !slices.Contains(c.dev.MemoryClocksMHz, int(minMHz)) || !slices.Contains(c.dev.MemoryClocksMHz, int(maxMHz)) {
			return nvmlErr(fn, nvml.ErrorInvalidArgument)
		}
		st.LockedMemMHz = [2]uint32{minMHz, maxMHz}
		return nil
	})
}

// ResetMemoryLockedClocks unlocks the memory clock.
func (c *Control) ResetMemoryLockedClocks() error {
	const fn = "nvmlDeviceResetMemoryLockedClocks"
	if c.dev.ComputeMajor < 8 {
		return nvmlErr(fn, nvml.ErrorNotSupported)
	}
	return c.change(fn, func(st *ControlState) error { st.LockedMemMHz = [2]uint32{}; return nil })
}

// SetApplicationsClocks sets the application clocks to a supported
// (memory, SM) pair (nvmlDeviceSetApplicationsClocks); any other pair is
// NVML_ERROR_INVALID_ARGUMENT.
func (c *Control) SetApplicationsClocks(memMHz, gfxMHz uint32) error {
	const fn = "nvmlDeviceSetApplicationsClocks"
	return c.change(fn, func(st *ControlState) error {
		if !slices.Contains(c.coreTable(int(memMHz)), int(gfxMHz)) {
			return nvmlErr(fn, nvml.ErrorInvalidArgument)
		}
		st.AppCoreMHz, st.AppMemMHz = gfxMHz, memMHz
		return nil
	})
}

// ResetApplicationsClocks returns the application clocks to the defaults.
func (c *Control) ResetApplicationsClocks() error {
	def := DefaultControlState(c.dev)
	return c.change("nvmlDeviceResetApplicationsClocks", func(st *ControlState) error {
		st.AppCoreMHz, st.AppMemMHz = def.AppCoreMHz, def.AppMemMHz
		return nil
	})
}

// SetPowerManagementLimitMW sets the power limit, mW, within
// PowerLimitConstraintsMW (nvmlDeviceSetPowerManagementLimit).
func (c *Control) SetPowerManagementLimitMW(mw uint32) error {
	const fn = "nvmlDeviceSetPowerManagementLimit"
	lo, hi, _ := c.PowerLimitConstraintsMW()
	return c.change(fn, func(st *ControlState) error {
		if mw < lo || mw > hi {
			return nvmlErr(fn, nvml.ErrorInvalidArgument)
		}
		st.PowerLimitMW = mw
		return nil
	})
}

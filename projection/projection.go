// Package projection projects a kernel's configurations onto GPUs
// without running them (performance-projection-heterogeneous-gpus.md,
// section IV-D): each configuration's work over each GPU's device
// profile at the kernel's occupancy (model.Project), ranked, optionally
// anchored on a tuning run measured on another GPU (model.Anchored), and
// written as Kernel Tuner caches (a prior for the transfer strategy).
// The work comes from the spec's Gtune.Simulation section, from
// emulating one thread block of a configuration's PTX, or from the PTX
// tuning runs kept (Work). Errors the user's input causes are
// badinput's.
package projection

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// Configuration is one configuration's projections onto the GPUs that
// can launch it, fastest first (model.Rank).
type Configuration struct {
	Key         string             `json:"key"`
	Projections []model.Projection `json:"projections"`
}

// Work is where a projection takes each configuration's work besides
// the spec's Gtune.Simulation: Emulated for every configuration (one
// thread block of a PTX emulated), Kept by configuration key (the PTX
// tuning runs kept), and Anchor, the run whose measured times scale the
// projections.
type Work struct {
	Emulated *backend.Work
	Kept     map[string]*backend.Work
	Anchor   *MeasuredRun
}

// Project projects configuration i of sp (a space of s) onto each GPU of
// devs over its profile (profiles, in devs' order) and ranks them; with
// an anchor, each projection is scaled by the anchor run's measured time
// (model.Anchored), and the configuration is projected with the
// registers the compiler gave it there. ok is false where the model
// cannot place the configuration where the anchor run measured it
// (nothing to anchor on). A GPU that cannot launch it is left out.
// Errors: a spec that gives no work (bad input), the model's.
func Project(s *spec.Spec, sp *space.Space, i int, devs []*device.Description, profiles []model.Profile, w Work) (Configuration, bool, error) {
	pc := Configuration{Key: sp.Key(i)}
	j, err := s.Job(sp.Values(i))
	if err != nil {
		return pc, false, err
	}
	if w.Emulated != nil {
		j.Work = w.Emulated
	}
	if k, ok := w.Kept[pc.Key]; ok {
		j.Work = k
	}
	var from model.Projection
	if a := w.Anchor; a != nil {
		if r := a.Registers[pc.Key]; r > 0 && j.Work != nil {
			wk := *j.Work
			wk.Registers = r
			j.Work = &wk
		}
		from, err = model.Project(a.Device, a.Profile, j.Work, j.Geometry())
		if _, bad := errors.AsType[*model.LaunchError](err); bad {
			return pc, false, nil
		} else if err != nil {
			return pc, false, fmt.Errorf("--from: configuration %s on %s: %w", pc.Key, a.Device.ID, err)
		}
	}
	for k, d := range devs {
		p, err := model.Project(d, profiles[k], j.Work, j.Geometry())
		if err == nil && w.Anchor != nil {
			ms := w.Anchor.Times[pc.Key]
			p.TimeMs, p.From, p.MeasuredMs = model.Anchored(ms, from, p), w.Anchor.Device.ID, ms
		}
		switch {
		case errors.Is(err, model.ErrNoWork):
			return pc, false, badinput.New("%s: configuration %s: the Gtune.Simulation section gives no work (Flops and Bytes are 0)", s.Path, pc.Key)
		case err != nil:
			if _, bad := errors.AsType[*model.LaunchError](err); bad {
				continue // this GPU cannot launch it: not among the candidates
			}
			return pc, false, err
		}
		pc.Projections = append(pc.Projections, p)
	}
	model.Rank(pc.Projections)
	return pc, true, nil
}

// Devices resolves a comma-separated list of device-database ids; an
// empty list is every CUDA GPU of compute capability 5.0 on. Errors
// (bad input): an unknown id, one given twice, a GPU that is not a CUDA
// GPU.
func Devices(list string) ([]*device.Description, error) {
	var out []*device.Description
	if strings.TrimSpace(list) == "" {
		for _, d := range device.All() {
			if d.IsCUDA() && d.ComputeMajor >= 5 {
				out = append(out, d)
			}
		}
		return out, nil
	}
	seen := map[string]bool{}
	for _, id := range strings.Split(list, ",") {
		d, err := device.Lookup(strings.TrimSpace(id))
		if err != nil {
			return nil, badinput.Wrap(fmt.Errorf("--devices: %w", err))
		}
		if seen[d.ID] {
			return nil, badinput.New("--devices: %s is given twice", d.ID)
		}
		seen[d.ID] = true
		if !d.IsCUDA() {
			return nil, badinput.New("--devices: %s is not a CUDA GPU (the projection models CUDA GPUs)", d.ID)
		}
		out = append(out, d)
	}
	return out, nil
}

// MeasuredRun is a tuning run a projection is anchored on: its GPU, that
// GPU's profile (the caller's to set), each valid configuration's
// measured time per launch (ms) and registers per thread as compiled for
// the run's GPU, by configuration key.
type MeasuredRun struct {
	Device    *device.Description
	Profile   model.Profile
	Times     map[string]float64
	Registers map[string]int
}

// LoadRun reads from: RUN of the database at dbPath, or FILE:RUN
// (read-only). The run must have tuned s (same spec hash) on a GPU the
// device database knows, and measured a valid configuration. Errors are
// bad input, but for the database's reads.
func LoadRun(from, dbPath string, s *spec.Spec) (*MeasuredRun, error) {
	file, runText := dbPath, from
	if i := strings.LastIndex(from, ":"); i >= 0 {
		file, runText = from[:i], from[i+1:]
	}
	id, err := strconv.ParseInt(runText, 10, 64)
	if err != nil || id <= 0 || file == "" {
		return nil, badinput.New("--from %q: want RUN (a run of --db) or FILE:RUN, e.g. h100.db:3", from)
	}
	if _, err := os.Stat(file); err != nil {
		return nil, badinput.New("--from %q: %v", from, err)
	}
	db, err := store.OpenReadOnly(file)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	defer db.Close()
	run, err := db.Run(id)
	if err != nil {
		return nil, badinput.Wrap(fmt.Errorf("--from %q: %w", from, err))
	}
	if run.SpecHash != s.Hash {
		return nil, badinput.New("--from %q: run %d tuned %s (spec hash %.12s), not %s as it is now (%.12s)", from, id, run.SpecPath, run.SpecHash, s.Path, s.Hash)
	}
	d, err := device.LookupName(strings.TrimPrefix(run.DeviceName, "Simulated "))
	if err != nil {
		return nil, badinput.Wrap(fmt.Errorf("--from %q: the run's GPU: %w", from, err))
	}
	evs, err := db.RunEvaluations(id)
	if err != nil {
		return nil, err
	}
	m := &MeasuredRun{Device: d, Times: map[string]float64{}, Registers: map[string]int{}}
	for _, e := range evs {
		if t, ok := e.Observations["time"]; ok && e.Status == "valid" && t > 0 {
			m.Times[e.Key], m.Registers[e.Key] = t, e.Registers
		}
	}
	if len(m.Times) == 0 {
		return nil, badinput.New("--from %q: run %d has no valid configuration with a measured time", from, id)
	}
	return m, nil
}

// CheckCacheDir checks --write-cache's folder before anything is
// projected: "" (none) or an existing directory. Errors are bad input.
func CheckCacheDir(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badinput.New("--write-cache %s: want an existing directory (each GPU's cache is written there as DEVICE.json)", dir)
	}
	return nil
}

// WriteCaches writes each GPU's projected times as dir/DEVICE.json
// (WriteCache) and says so on log; nothing where dir is "". Errors:
// WriteCache's.
func WriteCaches(log io.Writer, dir string, s *spec.Spec, sp *space.Space, idx []int, out []Configuration, devs []*device.Description) error {
	if dir == "" {
		return nil
	}
	for _, d := range devs {
		if err := WriteCache(filepath.Join(dir, d.ID+".json"), s, sp, idx, out, d); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "gtune: projected times written to %s as Kernel Tuner caches, one per GPU (DEVICE.json)\n", dir)
	return nil
}

// WriteCache writes the times projected on d (out, of the configurations
// idx of sp) as a Kernel Tuner cache file at path (cache.FromRun): each
// configuration's projected time as its time, one the model cannot
// launch on d as a launch failure. The device name says it is a
// projection. Errors: nothing projected (bad input), the file's.
func WriteCache(path string, s *spec.Spec, sp *space.Space, idx []int, out []Configuration, d *device.Description) error {
	byKey := map[string]Configuration{}
	for _, pc := range out {
		byKey[pc.Key] = pc
	}
	run := &store.Run{DeviceName: d.Name + " (projected by gtune)", Kernel: s.KernelName, Objective: "time"}
	var evs []*store.Evaluation
	names := sp.Params()
	for _, i := range idx {
		key := sp.Key(i)
		cfg := sp.Values(i)
		e := &store.Evaluation{Key: key, Status: string(backend.StatusLaunchFailed)}
		for k, p := range names {
			e.Params = append(e.Params, store.Param{Name: p.Name, Value: cfg[k].GoValue()})
		}
		for _, p := range byKey[key].Projections {
			if p.Device == d.ID {
				e.Status, e.Observations = string(backend.StatusValid), map[string]float64{"time": p.TimeMs}
			}
		}
		evs = append(evs, e)
	}
	if len(evs) == 0 {
		return badinput.New("--write-cache: no configuration projected")
	}
	c, err := cache.FromRun(run, evs)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return badinput.Wrap(fmt.Errorf("--write-cache: %v", err))
	}
	return nil
}

package tuner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/strategy"
	"github.com/gtune/gtune/workload"
)

// WorkloadParts gives the multi-kernel strategies each kernel of a
// workload (strategy.Part): its own search space, its occupancy target
// (OccupancyTarget) and its compiled resources (NewResourceProvider, over
// its own spec and space), where its parameters sit in the combined
// space (lay), and with alone its times run alone on be's GPU
// (AloneTimes). Errors: a kernel whose space does not build, a GPU
// missing from the device database, the database.
func WorkloadParts(ctx context.Context, log io.Writer, be backend.Backend, db *store.DB, set *workload.Set, lay *workload.Layout, alone bool) ([]strategy.Part, error) {
	var parts []strategy.Part
	for i, m := range set.Members {
		sp, err := set.MemberSpace(ctx, i, space.BuildOptions{})
		if err != nil {
			return nil, err
		}
		t, err := OccupancyTarget(be, m.Spec, sp)
		if err != nil {
			return nil, err
		}
		part := strategy.Part{
			Name: m.Name, Space: sp, First: lay.Members[i], Target: t,
			Resources: NewResourceProvider(ctx, log, be, m.Spec, sp, db).Resources,
		}
		if alone {
			if part.AloneTimes, err = AloneTimes(db, m.Spec.Hash, be.Device().UUID, sp); err != nil {
				return nil, err
			}
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// AloneTimes gives the time (ms) of every configuration of sp measured
// valid for the spec of hash specHash run alone on the GPU of uuid, the
// newest such evaluation in db (any run: tune, measure, import), NaN
// where there is none. A configuration flagged implausible counts as
// unmeasured. Errors: the database.
func AloneTimes(db *store.DB, specHash, uuid string, sp *space.Space) ([]float64, error) {
	prev, err := db.Previous(specHash, uuid)
	if err != nil {
		return nil, err
	}
	out := make([]float64, sp.Len())
	for i := range out {
		out[i] = math.NaN()
		e, ok := prev[sp.Key(i)]
		if !ok || e.Status != string(backend.StatusValid) || e.Observations[implausibleKey] != 0 {
			continue
		}
		if t, ok := e.Observations["time"]; ok {
			out[i] = t
		}
	}
	return out, nil
}

// Provide fills the inputs the run's strategy declares it needs
// (strategy.Needs) and only those: compiled resources
// (NewResourceProvider), the GPU's description with each configuration's
// launch geometry (OccupancyTarget), the kernel's times on other GPUs (the
// caches its prior hyperparameter names, matched to the space by
// cache.LoadSpaceTimes). c.Subject, c.Space, c.Backend, c.DB and
// c.StrategyParams must be set; log receives the resource provider's
// notes. Errors (*ConfigError): an unknown strategy, a GPU missing from
// the device database for a strategy that needs its description, a
// prior cache that cannot be read or does not match the space.
func (c *Config) Provide(ctx context.Context, log io.Writer) error {
	needs, err := strategy.NeedsOf(c.Strategy)
	if err != nil {
		return &ConfigError{err}
	}
	if c.Subject == nil {
		return &ConfigError{errors.New("tuner: no spec or workload to tune")}
	}
	s := c.Subject.spec()
	set, lay := c.Subject.workloadSet()
	if set != nil && (needs.Resources || needs.Target || needs.Priors) {
		return &ConfigError{fmt.Errorf("strategy %s tunes one kernel; a workload's kernels are tuned together by multi_occupancy_greedy, multi_occupancy_greedy_energy, multi_alone_greedy or a strategy that needs only the combined space", c.Strategy)}
	}
	if needs.Kernels && c.Kernels == nil {
		if set == nil {
			return &ConfigError{fmt.Errorf("strategy %s tunes several kernels run together: give it a workload file (gtune tune WORKLOAD), not a spec", c.Strategy)}
		}
		parts, err := WorkloadParts(ctx, log, c.Backend, c.DB, set, lay, needs.AloneTimes)
		if err != nil {
			return &ConfigError{fmt.Errorf("strategy %s: %w", c.Strategy, err)}
		}
		c.Kernels = parts
	}
	if needs.Resources && c.Resources == nil {
		rp := NewResourceProvider(ctx, log, c.Backend, s, c.Space, c.DB)
		rp.UseCompileCache(c.CompileCache) // its binaries kept for the run
		c.Resources = rp.Resources
	}
	if needs.Target && c.Target == nil {
		t, err := OccupancyTarget(c.Backend, s, c.Space)
		if err != nil {
			return &ConfigError{fmt.Errorf("strategy %s: %w", c.Strategy, err)}
		}
		c.Target = t
	}
	if needs.Priors && c.Priors == nil {
		// "database" is every other GPU of the results database; the
		// other entries are loaded one prior each.
		v := c.StrategyParams["prior"]
		var fromDB []strategy.PriorTimes
		if paths, err := strategy.PriorPaths(v); err == nil && slices.Contains(paths, PriorDatabase) {
			if c.DB == nil {
				return &ConfigError{errors.New("transfer: prior database: the run has no results database")}
			}
			if fromDB, err = DatabasePriors(c.DB, c.Subject.hash(), c.Backend.Device().UUID, c.Space, c.Objective); err != nil {
				return &ConfigError{err}
			}
			if len(fromDB) == 0 {
				return &ConfigError{fmt.Errorf("transfer: prior database: %s holds no GPU other than this one (%s) with %d or more valid configurations of this kernel's search space", c.DB.Path(), c.Backend.Device().UUID, strategy.MinPriorValid)}
			}
			for _, p := range fromDB {
				fmt.Fprintf(log, "transfer: prior %s\n", p.Source)
			}
			v = slices.DeleteFunc(paths, func(p string) bool { return p == PriorDatabase })
		}
		priors, err := strategy.LoadPriors(v, func(path string) ([]float64, error) {
			if id, ok := strings.CutPrefix(path, "projection"); ok && (id == "" || strings.HasPrefix(id, ":")) {
				return c.projectedTimes(log, strings.TrimPrefix(id, ":"))
			}
			return cache.LoadSpaceTimes(path, c.Space)
		})
		if err != nil {
			return &ConfigError{err}
		}
		c.Priors = append(fromDB, priors...)
	}
	return nil
}

// projectedTimes are the projected times (ms) of every configuration of
// the run's space on GPU id (the run's GPU when ""), model.Project over
// its newest profile measured in the run's database (gtune probe), else
// its specifications'; NaN where the model cannot place a configuration.
// A configuration's work is the emulation of its first thread blocks
// (emulate.JobWork, section IV-C) where the database keeps its PTX from
// an earlier run (with that run's registers), else the spec's
// Gtune.Simulation section's. They are transfer's prior
// "projection[:ID]": a run on a GPU starts from the configurations
// projected best (performance-projection-heterogeneous-gpus.md applied
// to search). Errors: neither work (no Gtune.Simulation section and no
// PTX kept), an unknown GPU, the database's.
func (c *Config) projectedTimes(log io.Writer, id string) ([]float64, error) {
	s := c.Subject.spec()
	if s == nil {
		return nil, errors.New("projection: the run has no spec (a workload's kernels are projected one by one)")
	}
	var d *device.Description
	var err error
	if id == "" {
		d, err = Description(c.Backend)
	} else {
		d, err = device.Lookup(id)
	}
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	prof := model.SpecProfile(d)
	if c.DB != nil {
		latest, err := c.DB.LatestProfiles()
		if err != nil {
			return nil, err
		}
		if p, ok := latest[d.ID]; ok {
			if err := json.Unmarshal(p.JSON, &prof); err != nil {
				return nil, fmt.Errorf("projection: device profile %d of %s: %v", p.ID, d.ID, err)
			}
		}
	}
	// Configurations whose PTX a run kept take their work from it.
	var kept *Kept
	if c.DB != nil {
		idx := make([]int, c.Space.Len())
		for i := range idx {
			idx[i] = i
		}
		if kept, err = KeptWork(c.DB, s, c.Space, idx); err != nil {
			return nil, err
		}
	}
	out := make([]float64, c.Space.Len())
	for i := range out {
		out[i] = math.NaN()
		j, err := s.Job(c.Space.Values(i))
		if err != nil {
			continue
		}
		w := j.Work
		if kept != nil && kept.Work[i] != nil {
			w = kept.Work[i]
		}
		if w == nil {
			continue
		}
		if p, err := model.Project(d, prof, w, j.Geometry()); err == nil {
			out[i] = p.TimeMs
		}
	}
	if s.Simulation == nil && (kept == nil || len(kept.Work) == 0) {
		return nil, errors.New("projection: the spec has no Gtune.Simulation section and the database keeps no PTX of its configurations (a run on a GPU keeps it) to emulate: no work to project")
	}
	if kept != nil && len(kept.Work)+len(kept.Failed) > 0 {
		fmt.Fprintf(log, "projection on %s: the work of %d configurations from emulating the PTX kept in the database (%v on %d CPUs)", d.ID, len(kept.Work), kept.Wall.Round(time.Millisecond), kept.Workers)
		if n := len(kept.Failed); n > 0 {
			fmt.Fprintf(log, "; %d PTX texts the emulator could not run", n)
		}
		fmt.Fprintln(log)
	}
	return out, nil
}

package shard

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/gtune/gtune/store"
)

// Merged is one run written by Merge: the runs of the shards that tuned
// the same kernel (spec hash) on the same GPU model for the same
// objective, as one run.
type Merged struct {
	RunID       int64  // in the output database
	Kernel      string // the kernel's name
	DeviceName  string
	Sources     int // runs merged
	Evaluations int // configurations in the merged run
	// Duplicates are configurations evaluated by more than one source
	// run (overlapping shards, a shard run twice): one evaluation kept.
	Duplicates int
	Status     string // done where each shard database's newest run is, else interrupted
}

// source is one run of a shard database.
type source struct {
	path string
	db   *store.DB
	run  *store.Run
}

// groupKey is what makes runs of different shards one run: the same
// spec, GPU model and objective, and for a library routine's run
// (store.SettingLibrary) the same GPU: such a run is the reference point
// of the kernels measured on its GPU (report), so the routine measured
// on four GPUs stays four runs.
type groupKey struct{ spec, device, objective, gpu string }

// Merge copies the runs of the shard databases at paths into out, one
// run per spec, GPU model and objective, a library routine's per GPU
// (groupKey; the shards' GPUs may differ: each
// evaluation keeps the UUID of the GPU that measured it, as a run over
// several GPUs does), with every evaluation's observations, launches,
// PTX and repeats. A configuration evaluated by several runs is kept once: a valid
// evaluation before one that is not, then the newest (as a resumed run
// reuses the newest). Provenance stays in the merged run's settings:
// "merged_from" lists each source's file, run, host, GPU, shard and
// evaluation count. The merged run is done where the newest run of
// each database is (a shard resumed after a fault finishes in its newest
// run), else interrupted; runs still marked running (a shard that died)
// are merged too. It reports each merged
// run on log. Errors: a path that is not a results database, the
// databases'.
func Merge(out *store.DB, paths []string, version string, log io.Writer) ([]Merged, error) {
	var srcs []source
	for _, p := range paths {
		// Read-only: a shard is an input, never written (an older
		// schema is read through a migrated copy).
		db, err := store.OpenReadOnly(p)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		runs, err := db.Runs()
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			fmt.Fprintf(log, "gtune: %s holds no run\n", p)
		}
		for _, r := range runs {
			srcs = append(srcs, source{path: p, db: db, run: r})
		}
	}
	var order []groupKey
	groups := map[groupKey][]source{}
	for _, s := range srcs {
		k := groupKey{s.run.SpecHash, s.run.DeviceName, s.run.Objective, ""}
		if s.run.Settings[store.SettingLibrary] != nil {
			k.gpu = s.run.DeviceUUID
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	var merged []Merged
	for _, k := range order {
		m, err := mergeGroup(out, groups[k], version)
		if err != nil {
			return merged, err
		}
		fmt.Fprintf(log, "gtune: run %d: %s on %s, %d configurations from %d runs", m.RunID, m.Kernel, m.DeviceName, m.Evaluations, m.Sources)
		if m.Duplicates > 0 {
			fmt.Fprintf(log, " (%d evaluated twice or more: one kept each)", m.Duplicates)
		}
		fmt.Fprintf(log, ", %s\n", m.Status)
		merged = append(merged, m)
	}
	return merged, nil
}

// mergeGroup writes the runs of one group as one run of out.
func mergeGroup(out *store.DB, g []source, version string) (Merged, error) {
	first := g[0].run
	m := Merged{Kernel: first.Kernel, DeviceName: first.DeviceName, Sources: len(g), Status: store.RunDone}
	best := map[string]*store.Evaluation{}
	from := map[*store.Evaluation]source{}
	var keys []string
	var provenance []any
	var gpus []string
	strategy := first.Strategy
	// The GPUs are every source run's, a run over several included
	// (its setting "gpus"), so that what was measured where stays
	// known: a report matches a library routine's reference runs to
	// a kernel's by them.
	addGPU := func(g string) {
		if g != "" && !slices.Contains(gpus, g) {
			gpus = append(gpus, g)
		}
	}
	// Each shard database's newest run says whether the shard finished:
	// a resumed shard's earlier runs stay interrupted.
	newest := map[string]*store.Run{}
	for _, s := range g {
		evs, err := s.db.Evaluations(s.run.ID)
		if err != nil {
			return m, err
		}
		if n, ok := newest[s.path]; !ok || s.run.ID > n.ID {
			newest[s.path] = s.run
		}
		if s.run.Strategy != strategy {
			strategy = "merged"
		}
		p := map[string]any{"file": s.path, "run": s.run.ID, "host": s.run.Host, "device_uuid": s.run.DeviceUUID,
			"status": s.run.Status, "evaluations": len(evs)}
		if sh, ok := s.run.Settings["shard"]; ok {
			p["shard"] = sh
		}
		provenance = append(provenance, p)
		addGPU(s.run.DeviceUUID)
		if gs, ok := s.run.Settings["gpus"].([]any); ok {
			for _, g := range gs {
				if u, ok := g.(string); ok {
					addGPU(u)
				}
			}
		}
		for _, e := range evs {
			if e.GPU == "" {
				e.GPU = s.run.DeviceUUID
			}
			addGPU(e.GPU)
			old, ok := best[e.Key]
			if !ok {
				keys = append(keys, e.Key)
				best[e.Key], from[e] = e, s
				continue
			}
			m.Duplicates++
			if better(e, old) {
				best[e.Key], from[e] = e, s
			}
		}
	}
	for _, r := range newest {
		if r.Status != store.RunDone {
			m.Status = store.RunInterrupted
		}
	}
	// Evaluations in the order they finished, as one run would have
	// stored them.
	evs := make([]*store.Evaluation, 0, len(keys))
	for _, k := range keys {
		evs = append(evs, best[k])
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].FinishedAt.Before(evs[b].FinishedAt) })
	settings := map[string]any{"merged_from": provenance, "gpus": gpus, "duplicates": m.Duplicates}
	for _, k := range []string{"seed", "energy", "iterations", "objective_direction", "objectives", "kernels", "orders", store.SettingLibrary} {
		if v, ok := first.Settings[k]; ok {
			settings[k] = v
		}
	}
	// How each configuration was measured holds for the merged run only
	// where every source run measured alike (the report says "measured N
	// times" by the setting repeat).
	for _, k := range []string{"repeat", "repeat_until", "repeat_aggregate", "thermal"} {
		v, ok := first.Settings[k]
		if ok && !slices.ContainsFunc(g, func(s source) bool { return !reflect.DeepEqual(s.run.Settings[k], v) }) {
			settings[k] = v
		}
	}
	r := &store.Run{SpecHash: first.SpecHash, SpecPath: first.SpecPath, Kernel: first.Kernel, Objective: first.Objective,
		Strategy: strategy, DeviceName: first.DeviceName, DeviceUUID: first.DeviceUUID, Driver: first.Driver,
		Backend: first.Backend, GtuneVersion: version, Settings: settings}
	if err := out.BeginRun(r); err != nil {
		return m, err
	}
	m.RunID = r.ID
	for _, e := range evs {
		s := from[e]
		typed, err := s.db.Observations(e.ID)
		if err != nil {
			return m, err
		}
		ptx, err := s.db.EvaluationPTX(e.ID)
		if err != nil {
			return m, err
		}
		reps, err := s.db.Repeats(e.ID)
		if err != nil {
			return m, err
		}
		e.Typed, e.PTX, e.Repeats = typed, ptx, reps
		e.ID, e.RunID = 0, r.ID
	}
	if err := out.AddMany(evs); err != nil {
		out.EndRun(r.ID, store.RunFailed)
		return m, err
	}
	m.Evaluations = len(evs)
	return m, out.EndRun(r.ID, m.Status)
}

// better says whether evaluation e is kept over old of the same
// configuration: valid before not valid, then the newer.
func better(e, old *store.Evaluation) bool {
	if (e.Status == "valid") != (old.Status == "valid") {
		return e.Status == "valid"
	}
	return finished(e).After(finished(old))
}

func finished(e *store.Evaluation) time.Time {
	if !e.FinishedAt.IsZero() {
		return e.FinishedAt
	}
	return e.StartedAt
}

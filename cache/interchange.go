package cache

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// ImportStrategy is the strategy name of a run imported from a Kernel
// Tuner cache or T4 file (ImportRun).
const ImportStrategy = "import"

// Settings keys of an imported run (store.Run.Settings).
const (
	SettingSource = "source"             // path of the imported file
	SettingFormat = "format"             // kerneltuner | t4
	SettingHeader = "kerneltuner_header" // Cache.MarshalHeader
)

// Layouts of Python's str(datetime) with a time zone, as Kernel Tuner
// writes timestamps.
const (
	pyTimeMicro = "2006-01-02 15:04:05.000000-07:00"
	pyTime      = "2006-01-02 15:04:05-07:00"
)

func parsePyTime(s string) (time.Time, bool) {
	t, err := time.Parse("2006-01-02 15:04:05.999999999-07:00", s)
	return t, err == nil
}

func formatPyTime(t time.Time) string {
	if t.Nanosecond() == 0 {
		return t.Format(pyTime)
	}
	return t.Format(pyTimeMicro)
}

// ImportRun is the results-database run that a replayed cache becomes
// (not yet begun: its ID is 0): spec hash, path and kernel of s, its
// objective's name, strategy ImportStrategy, the cache's device name, the
// replay's device UUID ("replay:<device name>") and backend, and the
// settings SettingSource, SettingFormat and SettingHeader (what the
// database does not otherwise keep of the file, for FromRun).
// gtuneVersion is recorded as the run's gtune version. Error: the
// cache's header cannot be encoded.
func ImportRun(r *Replay, s *spec.Spec, gtuneVersion string) (*store.Run, error) {
	c := r.c
	header, err := c.MarshalHeader()
	if err != nil {
		return nil, err
	}
	dev := r.Device()
	return &store.Run{
		SpecHash: s.Hash, SpecPath: s.Path, Kernel: s.KernelName, Objective: objective.FromSpec(s).Name, Strategy: ImportStrategy,
		DeviceName: c.DeviceName, DeviceUUID: dev.UUID, Backend: dev.Backend, GtuneVersion: gtuneVersion,
		Settings: map[string]any{SettingSource: c.Path, SettingFormat: c.Format, SettingHeader: header},
	}, nil
}

// ToEvaluations turns the recorded entries of the replay's search space
// into evaluations of the results database (RunID 0), in space order. Kernel
// Tuner's error markers are the statuses (Entry.Status) and kept as the
// reason; times become the observations time (Kernel Tuner's own mean),
// time_min, ... (ms, objective.Observations), recorded energy and power the
// observations energy (J) and power (W); registers, shared memory, local
// memory and threads per block, which Kernel Tuner does not record, are
// left out. Other recorded numbers become metrics under their Kernel Tuner
// names (verification_time and strategy_time among them), with the spec's
// Gtune.Metrics; a valid configuration gets the spec's objective value
// where it is defined. statuses counts the evaluations by status, and
// under "missing" the configurations of the space the file does not hold.
func ToEvaluations(r *Replay, s *spec.Spec) (evals []*store.Evaluation, statuses map[string]int) {
	obj := objective.FromSpec(s)
	sp := r.sp
	statuses = map[string]int{}
	for i := 0; i < sp.Len(); i++ {
		key := sp.Key(i)
		e, ok := r.Entry(key)
		if !ok {
			statuses["missing"]++
			continue
		}
		cfg := sp.Values(i)
		ev := &store.Evaluation{Key: key, Status: string(e.Status), Reason: e.Error,
			TimesMs: e.Times, CompileMs: e.CompileMs, BenchmarkMs: e.BenchmarkMs, FrameworkMs: e.FrameworkMs}
		for k, p := range sp.Params() {
			ev.Params = append(ev.Params, store.Param{Name: p.Name, Value: cfg[k].GoValue()})
		}
		if t, ok := parsePyTime(e.Timestamp); ok {
			ev.StartedAt = t
		}
		ev.Metrics = map[string]float64{}
		for k, v := range e.Extra {
			ev.Metrics[k] = v
		}
		if !math.IsNaN(e.VerificationMs) {
			ev.Metrics["verification_time"] = e.VerificationMs
		}
		if !math.IsNaN(e.StrategyMs) {
			ev.Metrics["strategy_time"] = e.StrategyMs
		}
		if e.Valid() {
			// Registers and the like are not recorded by Kernel Tuner:
			// left out rather than stored as zeros.
			typed := objective.Observations(&backend.Result{Observations: e.Observations(), BenchmarkMs: e.BenchmarkMs}, e.CompileMs, "replay")
			if !math.IsNaN(e.Time) {
				// Kernel Tuner's own mean.
				typed.Set(measure.Observation{Name: "time", Unit: "ms", Value: e.Time, Method: ReplayMethod, Launch: measure.PlanScope})
			}
			for i := range typed {
				if typed[i].Method != ReplayMethod {
					typed[i].Method = "imported"
				}
			}
			obs := typed.Plan()
			ev.Observations = obs
			ms, merr := objective.Metrics(s.Metrics, obs, s.Env(cfg))
			for k, v := range ms {
				ev.Metrics[k] = v
			}
			all := map[string]float64{}
			for k, v := range ev.Metrics {
				all[k] = v
			}
			if merr != nil {
				ev.Reason = merr.Error()
			}
			if v, ok := obj.Value(obs, all); ok && !math.IsNaN(v) {
				ev.Objective = &v
			}
		}
		statuses[ev.Status]++
		evals = append(evals, ev)
	}
	return evals, statuses
}

// FromRun turns a run's evaluations (at least one) into a Cache, for Write
// and WriteT4. Later evaluations of a key replace earlier ones. Statuses
// become Kernel Tuner's error markers (the imported marker when the
// evaluation kept one as its reason); metrics are written under their
// names; a run made by ImportRun gets back its file's problem size, tunable
// parameter names and values (SettingHeader), another run its parameters'
// values as evaluated, numbers sorted, and its energy (J), power (W),
// sm_clock (as core_freq) and temperature observations. Errors (naming the
// run): a header that cannot be decoded, an evaluation whose parameters are
// not the run's.
func FromRun(run *store.Run, evals []*store.Evaluation) (*Cache, error) {
	c := &Cache{DeviceName: run.DeviceName, KernelName: run.Kernel, Objective: run.Objective,
		Entries: map[string]*Entry{}, ParamValues: map[string][]any{}}
	imported := false
	if h, ok := run.Settings[SettingHeader].(string); ok {
		if err := c.UnmarshalHeader(h); err != nil {
			return nil, fmt.Errorf("run %d: %v", run.ID, err)
		}
		imported = true
	} else {
		for _, p := range evals[0].Params {
			c.ParamNames = append(c.ParamNames, p.Name)
		}
	}
	seen := map[string]map[string]bool{}
	for _, e := range evals {
		if len(e.Params) != len(c.ParamNames) {
			return nil, fmt.Errorf("run %d: evaluation %q has %d parameters, the run has %d", run.ID, e.Key, len(e.Params), len(c.ParamNames))
		}
		nan := math.NaN()
		en := &Entry{Key: e.Key, Time: nan, Times: e.TimesMs, CompileMs: e.CompileMs, BenchmarkMs: e.BenchmarkMs,
			FrameworkMs: e.FrameworkMs, VerificationMs: nan, StrategyMs: nan, Status: backend.Status(e.Status)}
		for i, p := range e.Params {
			if p.Name != c.ParamNames[i] {
				return nil, fmt.Errorf("run %d: evaluation %q has parameter %q where the run has %q", run.ID, e.Key, p.Name, c.ParamNames[i])
			}
			en.Params = append(en.Params, p.Value)
			if !imported {
				if seen[p.Name] == nil {
					seen[p.Name] = map[string]bool{}
				}
				k := KeyOf([]any{p.Value})
				if !seen[p.Name][k] {
					seen[p.Name][k] = true
					c.ParamValues[p.Name] = append(c.ParamValues[p.Name], p.Value)
				}
			}
		}
		if en.Valid() {
			if t, ok := e.Observations["time"]; ok {
				en.Time = t
			}
		} else if IsMarker(e.Reason) {
			en.Error = e.Reason
		} else {
			en.Error = MarkerOf(en.Status)
		}
		for k, v := range e.Metrics {
			switch k {
			case "verification_time":
				en.VerificationMs = v
			case "strategy_time":
				en.StrategyMs = v
			default:
				if en.Extra == nil {
					en.Extra = map[string]float64{}
				}
				en.Extra[k] = v
			}
		}
		if !imported {
			// Measured by gtune: its energy observations under Kernel
			// Tuner's names.
			for obs, kt := range map[string]string{"energy": "energy", "power": "power", "sm_clock": "core_freq", "temperature": "temperature"} {
				if v, ok := e.Observations[obs]; ok {
					if en.Extra == nil {
						en.Extra = map[string]float64{}
					}
					if _, dup := en.Extra[kt]; !dup {
						en.Extra[kt] = v
					}
				}
			}
		}
		if !e.StartedAt.IsZero() {
			en.Timestamp = formatPyTime(e.StartedAt)
		}
		c.Entries[e.Key] = en
	}
	if !imported {
		for _, n := range c.ParamNames {
			sortParamValues(c.ParamValues[n])
		}
	}
	return c, nil
}

// sortParamValues orders a parameter's values numerically when they are
// all numbers (the order they were evaluated in says nothing).
func sortParamValues(vs []any) {
	num := func(v any) (float64, bool) {
		switch t := v.(type) {
		case int:
			return float64(t), true
		case float64:
			return t, true
		}
		return 0, false
	}
	for _, v := range vs {
		if _, ok := num(v); !ok {
			return
		}
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, _ := num(vs[i])
		b, _ := num(vs[j])
		return a < b
	})
}

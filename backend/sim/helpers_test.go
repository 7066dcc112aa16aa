package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// tjob is a plan of one launch as these tests write it: the kernel
// instance and its measurement.
type tjob struct {
	*backend.Job
	Iterations   int
	Energy       bool
	EnergyWindow time.Duration
	Verify       bool
	Timeout      time.Duration
	Settings     *backend.Settings
	Trials       *measure.Protocol
}

func (j *tjob) plan(b *backend.Binary) *backend.Plan {
	req := measure.Request{Iterations: j.Iterations, Energy: j.Energy, EnergyWindow: j.EnergyWindow, Verify: j.Verify, Trials: j.Trials,
		StateKey: j.Settings.StateKey()}
	return backend.SingleLaunch(j.Job, b, j.Settings, req, j.Timeout)
}

// tresult is a Result with its energy observations gathered as the
// tests read them.
type tresult struct {
	*backend.Result
	Energy *tenergy
	// Resources of the launch.
	Registers, SharedStaticBytes, LocalBytes, MaxThreadsPerBlock int
}

type tenergy struct {
	EnergyPerLaunchJ, MeanPowerW, SMClockMHz, MemClockMHz float64
	EnergyJ, WindowS, GPUSeconds, CILowJ, CIHighJ, CV     float64
	ClockEventReasons                                     uint64
	Launches                                              int
	Method                                                string
	TrialsJ                                               []float64
}

func wrap(r *backend.Result) *tresult {
	out := &tresult{Result: r}
	if len(r.Launches) == 1 {
		l := r.Launches[0]
		out.Registers, out.SharedStaticBytes, out.LocalBytes, out.MaxThreadsPerBlock = l.Registers, l.SharedStaticBytes, l.LocalBytes, l.MaxThreadsPerBlock
	}
	o := r.Observations
	e, ok := o.Get("energy")
	if !ok {
		return out
	}
	g := func(n string) float64 { v, _ := o.Get(n); return v }
	te := &tenergy{EnergyPerLaunchJ: e, MeanPowerW: g("power"), SMClockMHz: g("sm_clock"), MemClockMHz: g("mem_clock"),
		WindowS: g("energy_window"), GPUSeconds: g("energy_gpu_time"), CILowJ: g("energy_ci_low"), CIHighJ: g("energy_ci_high"),
		CV: g("energy_cv"), ClockEventReasons: uint64(g("clock_event_reasons")), Launches: int(g("energy_runs"))}
	te.EnergyJ = e * float64(te.Launches)
	for _, x := range o {
		if x.Name == "energy" && x.Launch == measure.PlanScope {
			te.Method = x.Method
		}
		if strings.HasPrefix(x.Name, "energy_trial_") {
			te.TrialsJ = append(te.TrialsJ, x.Value)
		}
	}
	out.Energy = te
	return out
}

// runPlan compiles and runs one job, failing the test on backend errors.
func run(t *testing.T, s *Sim, j *tjob) *tresult {
	t.Helper()
	b, err := s.Compile(ctx, j.Job)
	if err != nil {
		t.Fatalf("Compile(%s): %v", j.Key, err)
	}
	r, err := s.Run(ctx, j.plan(b))
	if err != nil {
		t.Fatalf("Run(%s): %v", j.Key, err)
	}
	return wrap(r)
}

func predict(t *testing.T, s *Sim, j *tjob) Prediction {
	t.Helper()
	b, err := s.Compile(ctx, j.Job)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Predict(j.Job, b, j.Settings)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func job(key string, grid, block int, w backend.Work) *tjob {
	return &tjob{Job: &backend.Job{Key: key, Grid: [3]int{grid, 1, 1}, Block: [3]int{block, 1, 1}, Work: &w}, Iterations: 7}
}

// Package backendtest helps the backends' tests: a plan of one launch
// written as one job with its measurement (Job), and a result whose
// typed observations are gathered into the fields those tests compare
// (Result). It is imported by tests only.
package backendtest

import (
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// Job is a plan of one launch: the kernel instance and its measurement.
type Job struct {
	*backend.Job
	Iterations    int
	Energy        bool
	EnergyWindow  time.Duration
	Verify        bool
	SaveReference bool
	Timeout       time.Duration
	Settings      *backend.Settings
	Trials        *measure.Protocol
}

// Plan is the plan of j with binary b on stream 0.
func (j *Job) Plan(b *backend.Binary) *backend.Plan {
	req := measure.Request{Iterations: j.Iterations, Energy: j.Energy, EnergyWindow: j.EnergyWindow, Verify: j.Verify,
		SaveReference: j.SaveReference, Trials: j.Trials, StateKey: j.Settings.StateKey()}
	return backend.SingleLaunch(j.Job, b, j.Settings, req, j.Timeout)
}

// Result is a Result of one launch with its resources and its energy
// observations as fields.
type Result struct {
	*backend.Result
	Energy *Energy // nil when energy was not observed
	// Resources of the launch.
	Registers, SharedStaticBytes, LocalBytes, MaxThreadsPerBlock int
}

// Energy is a plan's energy observations (units in the names).
type Energy struct {
	EnergyPerLaunchJ, MeanPowerW, SMClockMHz, MemClockMHz, TemperatureC float64
	EnergyJ, WindowS, GPUSeconds, CILowJ, CIHighJ, CV, IdlePowerW       float64
	ClockEventReasons                                                   uint64
	Launches                                                            int
	Method                                                              string
	TrialsJ                                                             []float64
}

// Wrap gathers r's observations.
func Wrap(r *backend.Result) *Result {
	out := &Result{Result: r}
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
	te := &Energy{EnergyPerLaunchJ: e, MeanPowerW: g("power"), SMClockMHz: g("sm_clock"), MemClockMHz: g("mem_clock"), TemperatureC: g("temperature"),
		WindowS: g("energy_window"), GPUSeconds: g("energy_gpu_time"), CILowJ: g("energy_ci_low"), CIHighJ: g("energy_ci_high"),
		CV: g("energy_cv"), IdlePowerW: g("idle_power"), ClockEventReasons: uint64(g("clock_event_reasons")), Launches: int(g("energy_runs"))}
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

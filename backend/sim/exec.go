package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/model"
)

// simExec is a plan loaded on the simulated GPU: the primitives
// measure.Run drives (measure.Executor), on a simulated clock and sensor
// surface. Called with Sim.mu held.
type simExec struct {
	s     *Sim
	plan  *backend.Plan
	preds []model.Prediction // per launch
	works []backend.Work     // per launch

	launchMs []float64 // per launch, noise-free
	planMs   float64   // whole plan, noise-free
	powerW   float64   // board power while the plan runs back to back
	surf     *surface
}

var _ measure.Executor = (*simExec)(nil)

// model computes the noise-free times and the power of the plan. One
// launch is the single-kernel prediction; several go through the
// block-scheduler model (model.ConcurrentTimes), and their energy is the idle
// power over the plan's time plus each kernel's own energy above idle as
// if it ran alone: concurrency saves idle and static energy, not the
// work's. Power noise is deterministic from (Seed, Plan.Key).
func (x *simExec) model() {
	s, d := x.s, x.s.dev
	p0 := x.preds[0]
	idleW := s.idlePowerW(p0.SMClockMHz, p0.MemClockMHz) - s.offsetW // the model's: the offset is added once, below
	if len(x.preds) == 1 {
		x.launchMs, x.planMs = []float64{p0.LaunchMs}, p0.LaunchMs
		x.powerW = p0.PowerW
	} else {
		ks := make([]model.KernelRun, len(x.preds))
		for i, p := range x.preds {
			j, w := x.plan.Launches[i].Job, x.works[i]
			threads := j.Block[0] * j.Block[1] * j.Block[2]
			wave := p.KernelMs / float64(max(p.Waves, 1))
			frac := float64(min(d.SMs*p.Occupancy.ActiveBlocksPerSM, p.Blocks)) / float64(p.Blocks)
			perSM := max(p.Occupancy.ActiveBlocksPerSM, 1)
			var cshare, mshare float64
			if wave > 0 {
				cshare = math.Min(1, p.ComputeMs*frac/wave)
				mshare = math.Min(1, p.MemoryMs*frac/wave)
			}
			ks[i] = model.KernelRun{
				Stream: x.plan.Launches[i].Stream, Blocks: p.Blocks, BlockMs: wave, PerSM: perSM,
				Use:     model.BlockUse(d, threads, w.Registers, w.SharedMemory+j.DynamicSharedBytes),
				Compute: cshare / float64(perSM), Memory: mshare / float64(perSM*d.SMs),
				OverheadMs: s.overheadMs,
			}
		}
		x.launchMs, x.planMs = model.ConcurrentTimes(d, ks)
		energy := idleW * x.planMs
		for _, p := range x.preds {
			energy += (p.PowerW - idleW) * p.LaunchMs
		}
		x.powerW = energy / math.Max(x.planMs, 1e-9)
	}
	x.powerW *= 1 + s.noise/2*s.normal(x.plan.Key, "energy", 0)
	x.powerW += s.offsetW
	// A limiter that met the limit holds the mean power at or under it
	// whatever the sensor noise; one that could not (model.Prediction.OverLimit)
	// lets the board draw what the work needs.
	if !x.overLimit() {
		x.powerW = math.Min(x.powerW, p0.PowerLimitW)
	}
}

// overLimit reports whether some launch of the plan draws more than the
// power limit even at the lowest SM clock (model.Prediction.OverLimit).
func (x *simExec) overLimit() bool {
	for _, p := range x.preds {
		if p.OverLimit {
			return true
		}
	}
	return false
}

// newSurface starts the sensor surface of this plan: the die at the
// steady temperature of its power (the GPU has been running tuning work),
// or at idle when the protocol warms up first.
func (x *simExec) newSurface() {
	s := x.s
	p0 := x.preds[0]
	idleW := s.idlePowerW(p0.SMClockMHz, p0.MemClockMHz)
	start := s.power.SteadyTempC(s.dev, x.powerW)
	if t := x.plan.Measure.Trials; x.plan.Measure.Energy && t != nil && t.Warmup && !s.meter.Warmed() {
		start = s.power.SteadyTempC(s.dev, idleW)
	}
	if th := s.thermal; th != nil {
		// The idle gap since the last plan, then the plan's runs before
		// its energy window, at its power.
		tss := func(w float64) float64 { return s.power.SteadyTempC(s.dev, w) }
		th.step(tss, idleW, th.cfg.GapS)
		th.step(tss, x.powerW, x.runsMs()/1e3)
		start = th.dieC
	}
	surf := s.newSurface(x.plan.Key, idleW, start)
	surf.th = s.thermal
	surf.smMHz, surf.memMHz = float64(p0.SMClockMHz), float64(p0.MemClockMHz)
	if clock, _, _, err := s.settings(x.plan.Settings); err == nil && clock < s.dev.MaxCoreClockMHz() {
		surf.reasons |= reasonApplicationsClocksSetting
	}
	for _, p := range x.preds {
		if p.PowerCapped {
			surf.reasons |= reasonSwPowerCap
		}
	}
	x.surf = surf
}

// runsMs is the GPU time of the plan's runs before its energy
// measurement: verification, warm-up and timed runs, ms.
func (x *simExec) runsMs() float64 {
	n := x.plan.Measure.Iterations
	if n <= 0 {
		n = measure.DefaultIterations
	}
	n++
	if x.plan.Measure.Verify {
		n++
	}
	return float64(n) * x.planMs
}

func (x *simExec) Clock() measure.Clock { return x.surf.clk }

func (x *simExec) Sensors() measure.Sensors {
	if !x.s.dev.HasPowerSensor {
		return nil
	}
	return x.surf
}

func (x *simExec) Provenance() (timing, sensors string) { return "sim", "sim" }

func (x *simExec) Launches() int { return len(x.plan.Launches) }

func (x *simExec) Sync() error { return nil }

// Verify fails the plan when a launch's work is marked Invalid, with an
// error between 2 and 6 times its kernel's threshold (at least 1e-3). As
// on a real GPU, saving a reference needs a verification against one for
// every kernel with outputs (nothing is kept: the simulator has no data).
func (x *simExec) Verify(save bool) (measure.Verdict, error) {
	if save {
		for i, l := range x.plan.Launches {
			k := x.s.problem.Kernels[l.Job.Kernel]
			outputs := false
			for _, a := range k.Args {
				outputs = outputs || a.Output
			}
			if outputs && (k.Verification == nil || !k.Verification.Reference) {
				return measure.Verdict{Failure: x.s.launchName(x.plan, i) + noReference}, nil
			}
		}
	}
	for i, w := range x.works {
		if !w.Invalid {
			continue
		}
		threshold := 0.0
		if k := x.plan.Launches[i].Job.Kernel; k < len(x.s.problem.Kernels) {
			if v := x.s.problem.Kernels[k].Verification; v != nil {
				threshold = v.Threshold
			}
		}
		u := math.Abs(x.s.normal(x.plan.Key, "verify", 0))
		maxErr := math.Max(threshold, 1e-3) * (2 + 4*u)
		return measure.Verdict{MaxError: maxErr, Failure: x.s.launchName(x.plan, i) + fmt.Sprintf("verification failed: max error %g above threshold %g", maxErr, threshold)}, nil
	}
	x.busy(x.planMs)
	return measure.Verdict{}, nil
}

// Time gives reps noisy runs of the plan and advances the clock by them.
func (x *simExec) Time(reps int) ([]measure.PlanTime, error) {
	s := x.s
	out := make([]measure.PlanTime, reps)
	total := 0.0
	// A repeat of the plan (Plan.Repeat) draws its own noise; the first
	// measurement's is what it always was.
	key := x.plan.Key
	if x.plan.Repeat > 0 {
		key = fmt.Sprintf("%s#repeat%d", key, x.plan.Repeat)
	}
	for i := range out {
		f := math.Max(0.5, 1+s.noise*s.normal(key, "time", i))
		out[i].PlanMs = x.planMs * f
		out[i].LaunchMs = make([]float64, len(x.launchMs))
		for k, t := range x.launchMs {
			fk := f
			if k > 0 {
				fk = math.Max(0.5, 1+s.noise*s.normal(key, fmt.Sprintf("time/%d", k), i))
			}
			out[i].LaunchMs[k] = t * fk
			// A straggling launch: the plan waits for it (taken to be
			// on its critical path).
			if s.stragglers > 0 && s.uniform(key, fmt.Sprintf("straggle/%d", k), i) < s.stragglers {
				slow := s.straggleF * (0.75 + 0.5*s.uniform(key, fmt.Sprintf("straggle-factor/%d", k), i))
				out[i].PlanMs += t * fk * (slow - 1)
				out[i].LaunchMs[k] = t * fk * slow
			}
		}
		total += out[i].PlanMs
	}
	x.busy(total)
	return out, nil
}

// busy runs the plan on the surface for ms and advances the clock.
func (x *simExec) busy(ms float64) {
	from := x.surf.clk.Now()
	to := from.Add(time.Duration(ms * float64(time.Millisecond)))
	x.surf.segs = append(x.surf.segs, segment{from: from, to: to, w: x.powerW})
	x.surf.clk.t = to
}

func (x *simExec) Load(estMs float64) (measure.Load, error) {
	return &simLoad{s: x.surf, w: x.powerW, launchS: x.planMs / 1e3}, nil
}

// noReference is the failure of a reference run of a problem that
// verifies against none, as the CUDA backend words it.
const noReference = "save_reference: the problem's verification has no reference"

package sim

import (
	"math"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
)

// runPlan compiles the jobs and runs them as one plan, job i on
// streams[i], noise-free.
func runPlan(t *testing.T, s *Sim, jobs []*backend.Job, streams []int, req measure.Request) *backend.Result {
	t.Helper()
	plan := &backend.Plan{Key: "plan", Measure: req}
	for i, j := range jobs {
		b, err := s.Compile(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		plan.Key += "|" + j.Key
		plan.Launches = append(plan.Launches, backend.Launch{Job: j, Binary: b, Stream: streams[i]})
	}
	r, err := s.Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != backend.StatusValid {
		t.Fatalf("plan: %s %s", r.Status, r.Reason)
	}
	return r
}

func times(t *testing.T, r *backend.Result) (plan float64, launches []float64) {
	t.Helper()
	plan, _ = r.Observations.Get("time")
	for k := range r.Launches {
		v, ok := r.Observations.GetLaunch("time", k)
		if !ok {
			t.Fatalf("no time of launch %d", k)
		}
		launches = append(launches, v)
	}
	return plan, launches
}

// A plan of one launch is timed as the single kernel is; two launches on
// one stream take the sum of their times (less the second's hidden launch
// overhead); on two streams a memory-bound kernel that leaves SM room and
// a compute-bound one overlap.
func TestPlanStreams(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	// The memory-bound kernel holds 2 of each SM's 8 block slots; under the
	// left-over policy the compute-bound one fills the other 6.
	mem := job("mem", 132*2, 256, backend.Work{Bytes: 2 << 30, Registers: 32}).Job
	comp := job("comp", 132*8*8, 256, backend.Work{Flops: 2e11, Registers: 32}).Job
	pm := predict(t, s, &tjob{Job: mem})
	pc := predict(t, s, &tjob{Job: comp})

	one, _ := times(t, runPlan(t, s, []*backend.Job{mem}, []int{0}, measure.Request{Iterations: 3}))
	if one != pm.LaunchMs {
		t.Fatalf("one launch: %v ms, the single-kernel model %v ms", one, pm.LaunchMs)
	}
	serial, ls := times(t, runPlan(t, s, []*backend.Job{mem, comp}, []int{0, 0}, measure.Request{Iterations: 3}))
	// The second launch was queued while the first ran: its host-side
	// overhead (3 µs) is hidden from the plan, not from its own events.
	if math.Abs(serial-(pm.LaunchMs+pc.LaunchMs-s.overheadMs)) > 1e-9 || math.Abs(ls[0]-pm.LaunchMs) > 1e-9 || math.Abs(ls[1]-pc.LaunchMs) > 1e-9 {
		t.Fatalf("one stream: plan %v ms, launches %v; alone %v and %v ms", serial, ls, pm.LaunchMs, pc.LaunchMs)
	}
	conc, lc := times(t, runPlan(t, s, []*backend.Job{mem, comp}, []int{0, 1}, measure.Request{Iterations: 3}))
	if !(conc < 0.9*serial) || conc < math.Max(pm.LaunchMs, pc.LaunchMs) {
		t.Fatalf("two streams: plan %v ms (launches %v), one stream %v ms, alone %v and %v ms", conc, lc, serial, pm.LaunchMs, pc.LaunchMs)
	}
	t.Logf("memory-bound %.3f ms, compute-bound %.3f ms alone; one stream %.3f ms, two streams %.3f ms", pm.LaunchMs, pc.LaunchMs, serial, conc)
}

// The launch order of concurrent kernels matters
// (symbiotic-scheduling-concurrent-kernels.md, section 3): kernel A holds
// one 1024-thread block per SM (200 KB of shared memory each) for a long
// time; kernel B has many short 1024-thread blocks. Issued A then B, every
// SM runs one A block beside one B block, and B's blocks stream through
// the free half of each SM while A runs. Issued B then A, B's blocks fill
// both halves of every SM and all are dispatched first; A's blocks wait
// for SMs with 200 KB of shared memory and 1024 threads free, start late,
// and the plan ends after A's long blocks: the later order is slower.
func TestLaunchOrderMatters(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Noise: -1})
	a := &backend.Job{Key: "A", Grid: [3]int{132, 1, 1}, Block: [3]int{1024, 1, 1}, DynamicSharedBytes: 200 << 10,
		Work: &backend.Work{Flops: 4e10, Registers: 32}}
	b := &backend.Job{Key: "B", Grid: [3]int{132 * 16, 1, 1}, Block: [3]int{1024, 1, 1},
		Work: &backend.Work{Bytes: 4 << 30, Registers: 32}}
	ab, _ := times(t, runPlan(t, s, []*backend.Job{a, b}, []int{0, 1}, measure.Request{Iterations: 3}))
	ba, _ := times(t, runPlan(t, s, []*backend.Job{b, a}, []int{0, 1}, measure.Request{Iterations: 3}))
	pa, pb := predict(t, s, &tjob{Job: a}), predict(t, s, &tjob{Job: b})
	t.Logf("A alone %.3f ms, B alone %.3f ms; A then B %.3f ms, B then A %.3f ms", pa.LaunchMs, pb.LaunchMs, ab, ba)
	if !(ab < ba*0.95) {
		t.Fatalf("A then B %v ms, B then A %v ms: want the first clearly faster", ab, ba)
	}
	if ab < math.Max(pa.LaunchMs, pb.LaunchMs) || ba > pa.LaunchMs+pb.LaunchMs+1e-6 {
		t.Fatalf("A then B %v ms, B then A %v ms outside [max, sum] of %v and %v ms", ab, ba, pa.LaunchMs, pb.LaunchMs)
	}
}

// A simulated GPU without a power sensor has no energy, as a real GPU
// without an NVML energy counter: the measurement says why.
func TestNoPowerSensorNoEnergy(t *testing.T) {
	s := newSim(t, "gtx680", Options{})
	if s.Device().HasEnergyCounter {
		t.Fatal("GTX 680 claims an energy counter")
	}
	j := job("e", 8*8, 256, backend.Work{Bytes: 1 << 28, Registers: 32})
	j.Energy = true
	r := run(t, s, j)
	if _, ok := r.Observations.Get("energy"); ok || r.Energy != nil || r.Status != backend.StatusValid || r.Reason != "energy: this GPU has no energy sensor" {
		t.Fatalf("status %s reason %q energy %+v", r.Status, r.Reason, r.Energy)
	}
	if _, ok := r.Observations.Get("time"); !ok {
		t.Fatal("no time")
	}
}

// Energy observations are typed: unit and the simulated method.
func TestEnergyObservationsTyped(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Seed: 2})
	j := job("t", 132*8, 256, backend.Work{Bytes: 1 << 30, Registers: 32})
	j.Energy = true
	r := run(t, s, j)
	for _, name := range []string{"energy", "power"} {
		found := false
		for _, o := range r.Observations {
			if o.Name == name && o.Launch == measure.PlanScope {
				found = true
				if o.Unit != measure.UnitOf(name) || o.Method != "sim-energy-counter" {
					t.Errorf("%s: %+v", name, o)
				}
			}
		}
		if !found {
			t.Errorf("no %s", name)
		}
	}
	j.Trials = &measure.Protocol{MaxTrials: 5}
	r = run(t, s, j)
	if r.Energy == nil || r.Energy.Method != "sim-energy-counter-trials" {
		t.Fatalf("trials: %+v", r.Energy)
	}
}

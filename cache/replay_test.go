package cache

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

// convTotalMs is the sum of compile_time + verification_time +
// benchmark_time over the 4,362 entries of convolution_milo_A100 (Python,
// in file order): what Kernel Tuner's simulation mode charges for a brute
// force, 3.386 h.
const convTotalMs = 12190447.934668744

func convSpec(t testing.TB) (*spec.Spec, *space.Space) {
	t.Helper()
	s, err := spec.LoadWith(filepath.Join(datasets(t), "benchmark_hub", "specs", "convolution_milo.T1.json"), spec.LoadOptions{NoSource: true})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	return s, sp
}

// Every configuration of the benchmark_hub spec is in the A100 cache, and
// replaying them all gives back the recorded statuses and times, the
// cache's optimum, and charges the recorded compile, verification and
// benchmark times.
func TestReplayEveryConfiguration(t *testing.T) {
	t.Parallel()
	c := load(t, hub(t, "convolution_milo_A100.json.gz"))
	s, sp := convSpec(t)
	if sp.Len() != 4362 {
		t.Fatalf("space has %d configurations, want 4362", sp.Len())
	}
	r, err := NewReplay(c, sp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recorded() != 4362 {
		t.Fatalf("%d configurations recorded, want 4362", r.Recorded())
	}
	dev := r.Device()
	if dev.Backend != "replay" || dev.Name != "NVIDIA A100-PCIE-40GB" || dev.UUID != "replay:NVIDIA A100-PCIE-40GB" || dev.HasEnergyCounter {
		t.Errorf("device %+v", dev)
	}
	ctx := context.Background()
	if err := r.Prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	counts := map[backend.Status]int{}
	bestKey, bestTime := "", math.Inf(1)
	for i := 0; i < sp.Len(); i++ {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Compile(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(ctx, backend.SingleLaunch(j, b, nil, measure.Request{}, 0))
		if err != nil {
			t.Fatal(err)
		}
		e := c.Entries[j.Key]
		if b.CompileMs != e.CompileMs || res.Status != e.Status || res.BenchmarkMs != e.BenchmarkMs {
			t.Fatalf("%s: compile %v status %s benchmark %v; recorded %+v", j.Key, b.CompileMs, res.Status, res.BenchmarkMs, e)
		}
		counts[res.Status]++
		if res.Status != backend.StatusValid {
			if res.Reason != e.Error+" (recorded)" || res.TimesMs != nil {
				t.Fatalf("%s: reason %q times %v", j.Key, res.Reason, res.TimesMs)
			}
			continue
		}
		mean := measure.Summarize(res.TimesMs).Mean
		if math.Abs(mean-e.Time) > 1e-12*e.Time || len(res.TimesMs) != 32 {
			t.Fatalf("%s: mean of %d times %v, recorded %v", j.Key, len(res.TimesMs), mean, e.Time)
		}
		if mean < bestTime {
			bestKey, bestTime = j.Key, mean
		}
	}
	if counts["valid"] != 4201 || counts["runtime_failed"] != 155 || counts["compile_failed"] != 6 {
		t.Errorf("statuses %v", counts)
	}
	if bestKey != "32,4,1,3,1,0,1,1,15,15" || math.Abs(bestTime-0.5536000076681376) > 1e-15 {
		t.Errorf("best %s at %v ms, want 32,4,1,3,1,0,1,1,15,15 at 0.5536000076681376", bestKey, bestTime)
	}
	if r.Runs() != 4362 || math.Abs(r.ChargedMs()-convTotalMs) > 1e-3 {
		t.Errorf("runs %d charged %.6f ms, want 4362 and %.6f", r.Runs(), r.ChargedMs(), convTotalMs)
	}
	total := convTotalMs * float64(time.Millisecond)
	if d := r.Charged() - time.Duration(total); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("Charged() = %v", r.Charged())
	}
}

func TestReplayParameterMismatch(t *testing.T) {
	_, sp := convSpec(t)
	fresh := func() *Cache { return load(t, hub(t, "convolution_milo_A100.json.gz")) }

	c := fresh()
	c.ParamNames[0] = "block_x"
	c.ParamValues["block_x"] = c.ParamValues["block_size_x"]
	if _, err := NewReplay(c, sp); err == nil || !strings.Contains(err.Error(), `no tunable parameter "block_size_x"`) {
		t.Errorf("renamed parameter: %v", err)
	}

	c = fresh()
	c.ParamNames = append(c.ParamNames, "unroll")
	c.ParamValues["unroll"] = []any{1}
	if _, err := NewReplay(c, sp); err == nil || !strings.Contains(err.Error(), `tunable parameter "unroll", which the search space lacks`) {
		t.Errorf("extra parameter: %v", err)
	}

	// A space value the cache never tried.
	params := append([]space.Param(nil), sp.Params()...)
	params[2] = space.Param{Name: "tile_size_x", Values: []expr.Value{expr.Int(1), expr.Int(8)}}
	sp8, err := space.Build(params, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplay(fresh(), sp8); err == nil || !strings.Contains(err.Error(), `"tile_size_x": value 8 of the search space is not among the cache's values [1, 2, 3, 4]`) {
		t.Errorf("value outside the cache: %v", err)
	}

	// Values compare as Python does: a space of floats 16.0 ... matches the
	// cache's ints, and its keys find the entries.
	params = append([]space.Param(nil), sp.Params()...)
	var fl []expr.Value
	for _, v := range params[0].Values {
		i, _ := v.Int()
		fl = append(fl, expr.Float(float64(i)))
	}
	params[0] = space.Param{Name: "block_size_x", Values: fl}
	spf, err := space.Build(params, sp.Restrictions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplay(fresh(), spf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recorded() != 4362 {
		t.Errorf("%d recorded with float block sizes", r.Recorded())
	}
	if e, ok := r.Entry("32.0,4,1,3,1,0,1,1,15,15"); !ok || e.Key != "32,4,1,3,1,0,1,1,15,15" {
		t.Errorf("entry of 32.0,4,...: %+v %v", e, ok)
	}
}

// A cache with energy observations replays them as typed observations: energy
// per launch from "energy", power derived from it and the time.
func TestReplayEnergy(t *testing.T) {
	c := load(t, filepath.Join(datasets(t), "kernel_tuner_energy", "test_cache_time_energy.json"))
	var params []space.Param
	for _, n := range c.ParamNames {
		var vs []expr.Value
		for _, v := range c.ParamValues[n] {
			x, err := expr.FromGo(v)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, x)
		}
		params = append(params, space.Param{Name: n, Values: vs})
	}
	sp, err := space.Build(params, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplay(c, sp)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Device().HasEnergyCounter || r.Device().Name != "NVIDIA RTX 4000 Ada Generation" {
		t.Errorf("device %+v", r.Device())
	}
	res, err := r.Run(context.Background(), backend.SingleLaunch(&backend.Job{Key: "128,1080"}, &backend.Binary{}, nil, measure.Request{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Observations {
		if o.Method != ReplayMethod || o.Unit != measure.UnitOf(o.Name) {
			t.Errorf("observation %+v", o)
		}
	}
	obs := objective.Observations(res, 0, "replay").Plan()
	if obs["energy"] != 0.23700487666378292 || math.Abs(obs["power"]-74.87357094573784) > 1e-9 || obs["sm_clock"] != 1080 ||
		obs["temperature"] != 45 || math.Abs(obs["time"]-3.165401004254818) > 1e-12 {
		t.Errorf("observations %v", obs)
	}

	// nvml_power only: energy per launch derived from power × time.
	a := load(t, filepath.Join(datasets(t), "kernel_tuner_energy", "synthetic_fp32_cache_NVIDIA_RTX_A4000.json"))
	en, ok := a.Entries["1024,64,1024,2100"].Energy()
	if !ok || en.PowerW != 139.161 || math.Abs(en.EnergyJ-139.161*77.53778305053712/1000) > 1e-12 {
		t.Errorf("energy from nvml_power %+v", en)
	}
}

// Objective gives exactly what Observations gives for the objectives, for
// every valid entry (checked on 300 of them, with and without energy), and
// nothing for an invalid one or another name.
func TestEntryObjective(t *testing.T) {
	for _, name := range []string{"convolution_milo_A100.json.gz", "convolution_milo_A4000.json.gz"} {
		c := load(t, hub(t, name))
		n := 0
		for _, k := range c.Keys() {
			e := c.Entries[k]
			if !e.Valid() {
				if _, ok := e.Objective("time"); ok {
					t.Fatalf("%s %s: invalid entry has a time", name, k)
				}
				continue
			}
			obs := e.Observations()
			for _, o := range []string{"time", "energy", "power", "edp"} {
				want, wok := obs.Get(o)
				got, ok := e.Objective(o)
				if ok != wok || (ok && got != want) {
					t.Fatalf("%s %s %s: %v %v, Observations %v %v", name, k, o, got, ok, want, wok)
				}
			}
			if _, ok := e.Objective("GFLOP/s"); ok {
				t.Fatalf("%s: a metric from Objective", k)
			}
			if n++; n == 300 {
				break
			}
		}
	}
}

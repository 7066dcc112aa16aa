package ncupass

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/profile"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
	"github.com/gtune/gtune/tuner"
)

// A batch's profiled launches are matched to its configurations: two
// launches of the spec's kernel each (others, such as gtune's own,
// ignored), the second one's metrics; a report with another count of
// launches, or a timed launch of another grid, does not line up.
func TestNcuLaunchMetrics(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "examples", "matmul", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := space.Build(s.Params, s.Restrictions, s.Constants)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := sp.Subset([]int{0, 5, 9})
	if err != nil {
		t.Fatal(err)
	}
	metrics := []string{"dram__throughput.avg.pct_of_peak_sustained_elapsed"}
	var measured []*tuner.Evaluation
	var ls []profile.LaunchMetrics
	for i := range sub.Len() {
		measured = append(measured, &tuner.Evaluation{Index: i, Key: sub.Key(i)})
		grid, block, err := s.Geometry(sub.Values(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{100 + float64(i), float64(i)} { // warm-up, timed
			ls = append(ls, profile.LaunchMetrics{Kernel: "matmul_kernel", Grid: grid, Block: block,
				Values: map[string]float64{metrics[0]: v}, Units: map[string]string{metrics[0]: "%"}})
		}
		ls = append(ls, profile.LaunchMetrics{Kernel: "gtune_flush", Values: map[string]float64{}})
	}
	got, err := launchMetrics(s, sub, measured, ls, metrics)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range measured {
		o := got[e.Key]
		if len(o) != 1 || o[0].Value != float64(i) || o[0].Unit != "%" || o[0].Method != "ncu" {
			t.Errorf("configuration %s: %+v, want the timed launch's %d %%", e.Key, o, i)
		}
	}
	if _, err := launchMetrics(s, sub, measured, ls[:len(ls)-2], metrics); err == nil || !strings.Contains(err.Error(), "not two each") {
		t.Errorf("a launch missing: %v", err)
	}
	moved := slices.Clone(ls)
	moved[1], moved[4] = moved[4], moved[1] // configuration 0's timed launch is configuration 1's
	if _, err := launchMetrics(s, sub, measured, moved, metrics); err == nil || !strings.Contains(err.Error(), "do not line up") {
		t.Errorf("launches out of line: %v", err)
	}
	if _, err := launchMetrics(s, sub, measured, ls, append(metrics, "sm__inst_executed.avg.per_cycle_active")); err == nil || !strings.Contains(err.Error(), "no value of sm__inst") {
		t.Errorf("a metric missing: %v", err)
	}
}

// Batches of four of ten items, item 5 failing wherever it is: the batch
// holding it is halved down to it alone, every other item is done once,
// in order, in seven calls; a stop after the first failure ends it there.
func TestInBatches(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	var done []int
	var failed [][]int
	try := func(batch []int, call int) error {
		if slices.Contains(batch, 5) {
			return fmt.Errorf("call %d: 5 cannot be done", call)
		}
		done = append(done, batch...)
		return nil
	}
	fail := func(batch []int, err error) { failed = append(failed, slices.Clone(batch)) }
	calls, err := inBatches(items, 4, try, fail, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if calls != 7 || !slices.Equal(done, []int{0, 1, 2, 3, 4, 6, 7, 8, 9}) {
		t.Errorf("%d calls, done %v; want 7 and every item but 5 in order", calls, done)
	}
	if fmt.Sprint(failed) != "[[4 5 6 7] [4 5] [5]]" {
		t.Errorf("failed batches %v", failed)
	}
	stopped := errors.New("stopped")
	done, failed = nil, nil
	calls, err = inBatches(items, 4, try, fail, func() error {
		if len(done) >= 4 {
			return stopped
		}
		return nil
	})
	if !errors.Is(err, stopped) || calls != 2 || len(failed) != 0 {
		t.Errorf("stopped: %v after %d calls, failed %v", err, calls, failed)
	}
}

// --observe: ncu with the default metrics or a list; anything else and
// an empty metric are refused.
func TestParseObserve(t *testing.T) {
	if ms, err := ParseObserve("ncu"); err != nil || !slices.Equal(ms, DefaultMetrics) {
		t.Errorf("ncu: %v %v", ms, err)
	}
	if ms, err := ParseObserve("ncu:dram__bytes_read.sum,sm__cycles_elapsed.avg"); err != nil || !slices.Equal(ms, []string{"dram__bytes_read.sum", "sm__cycles_elapsed.avg"}) {
		t.Errorf("ncu:list: %v %v", ms, err)
	}
	if ms, err := ParseObserve(""); err != nil || ms != nil {
		t.Errorf("none: %v %v", ms, err)
	}
	for _, bad := range []string{"nsys", "ncu:", "ncu:a,,b", "ncu:a b"} {
		if _, err := ParseObserve(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// onGPUs deals the configurations out over the GPUs in turn and runs the
// GPUs' parts at once (each waits here until all three have started),
// summing their worker counts and joining their errors.
func TestOnGPUs(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	var mu sync.Mutex
	got := map[int][]int{}
	var started sync.WaitGroup
	started.Add(3)
	n, err := onGPUs(items, []int{3, 5, 7}, func(part []int, d int) (int, error) {
		started.Done()
		ok := make(chan struct{})
		go func() { started.Wait(); close(ok) }()
		select {
		case <-ok:
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("GPU %d: the others never started", d)
		}
		mu.Lock()
		got[d] = part
		mu.Unlock()
		if d == 7 {
			return 1, errors.New("GPU 7 failed")
		}
		return len(part), nil
	})
	if n != 4+3+1 || err == nil || err.Error() != "GPU 7 failed" {
		t.Errorf("onGPUs = %d, %v", n, err)
	}
	if !slices.Equal(got[3], []int{0, 3, 6, 9}) || !slices.Equal(got[5], []int{1, 4, 7}) || !slices.Equal(got[7], []int{2, 5, 8}) {
		t.Errorf("parts %v", got)
	}
	// More GPUs than configurations: the idle ones are not called.
	calls := 0
	if n, err := onGPUs([]int{1}, []int{0, 1}, func(part []int, d int) (int, error) { calls++; return d, nil }); n != 0 || err != nil || calls != 1 {
		t.Errorf("one configuration on two GPUs: %d, %v, %d calls", n, err, calls)
	}
}

// A pass under ncu takes the binaries a run compiled from the compile
// cache (Options.CompileCache) instead of compiling every configuration
// again: the second of two passes over the same configurations, on the
// simulated GPU standing in for the worker under ncu, compiles none, and
// a cache the caller set on the run's configuration is kept.
func TestUnderConfigUsesTheCompileCache(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "examples", "matmul", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := space.Build(s.Params, s.Restrictions, s.Constants)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := full.Subset([]int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := compilecache.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Version: "test", CompileCache: cache}
	pass := func() *tuner.Summary {
		db, err := store.Open(filepath.Join(t.TempDir(), "ncu.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		c := underConfig(tuner.Config{Subject: tuner.FromSpec(s.WithoutVerification()), Space: sp, MaxEvals: sp.Len()}, o, sim.New(d, sim.Options{Seed: 1}), db)
		sum, err := tuner.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Evaluations) != 4 {
			t.Fatalf("%d configurations measured, want 4", len(sum.Evaluations))
		}
		return sum
	}
	if sum := pass(); sum.Compiled != 4 || sum.CompileReused != 0 {
		t.Errorf("first pass: %d compiled, %d from the cache; want 4, 0", sum.Compiled, sum.CompileReused)
	}
	if sum := pass(); sum.Compiled != 0 || sum.CompileReused != 4 {
		t.Errorf("second pass: %d compiled, %d from the cache; want 0, 4", sum.Compiled, sum.CompileReused)
	}
	other, err := compilecache.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := underConfig(tuner.Config{CompileCache: other}, o, nil, nil); c.CompileCache != other || c.Strategy != "brute_force" || c.CompletionOrder || !c.Fresh || c.MaxEvals != 1 {
		t.Errorf("underConfig over a configuration with its own cache: cache kept %v, strategy %q, completion order %v, fresh %v, max evals %d",
			c.CompileCache == other, c.Strategy, c.CompletionOrder, c.Fresh, c.MaxEvals)
	}
}

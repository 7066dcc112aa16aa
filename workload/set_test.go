package workload

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/space"
)

func writeWorkload(t *testing.T, body string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "examples", "rodinia"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "RODINIA", abs)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The example workload of the four Rodinia-style kernels: 9 × 6 × 9 × 6
// combinations, ×4! with the launch orders.
func TestRodinia4Space(t *testing.T) {
	set, err := Load(filepath.Join("..", "examples", "workloads", "rodinia-4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !IsFile(set.Path) || IsFile(filepath.Join("..", "examples", "rodinia", "lud", "spec.json")) {
		t.Error("IsFile does not tell a workload from a spec")
	}
	ctx := context.Background()
	sp, lay, err := set.Space(ctx, false, space.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Len() != 2916 || lay.Order != -1 {
		t.Fatalf("combined space %d (order at %d), want 2916 without orders", sp.Len(), lay.Order)
	}
	if got := sp.Params()[0].Name; got != "lud.block_size_x" {
		t.Errorf("first parameter %q, want lud.block_size_x", got)
	}
	if !slices.Equal(lay.Members, []int{0, 2, 3, 5}) {
		t.Errorf("members at %v, want [0 2 3 5]", lay.Members)
	}
	spo, lay, err := set.Space(ctx, true, space.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spo.Len() != 2916*24 || len(lay.Orders) != 24 {
		t.Fatalf("with orders %d configurations, %d orders; want %d, 24", spo.Len(), len(lay.Orders), 2916*24)
	}
	if got := set.OrderName(lay.Orders[0]); got != "lud>streamcluster>hotspot>particlefilter" {
		t.Errorf("first order %q, want the written one", got)
	}
	seen := map[string]bool{}
	for _, o := range lay.Orders {
		seen[set.OrderName(o)] = true
	}
	if len(seen) != 24 {
		t.Errorf("%d distinct orders, want 24", len(seen))
	}
	// The last configuration: every kernel at its last values, the last
	// order (the written one reversed).
	last := spo.Values(spo.Len() - 1)
	w, err := set.Workload(lay, last)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Order, []int{3, 2, 1, 0}) {
		t.Errorf("order %v, want [3 2 1 0]", w.Order)
	}
	prob, plan, err := w.Plan(set.Members[0].Spec.Request(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(prob.Kernels) != 4 || prob.Kernels[0].KernelName != "lud_internal" {
		t.Fatalf("problem kernels %d, first %q; want 4 in the written order", len(prob.Kernels), prob.Kernels[0].KernelName)
	}
	var issued []int
	for _, l := range plan.Launches {
		issued = append(issued, l.Job.Kernel)
	}
	if !slices.Equal(issued, []int{3, 2, 1, 0}) || plan.Launches[0].Stream != 3 {
		t.Errorf("issued kernels %v on stream %d first, want [3 2 1 0] from stream 3", issued, plan.Launches[0].Stream)
	}
	if plan.Launches[3].Job.Block != [3]int{32, 32, 1} {
		t.Errorf("lud's block %v, want 32×32", plan.Launches[3].Job.Block)
	}
}

func TestLoadErrors(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"unknown field":     {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json, blocks: 3}\n", "blocks"},
		"no kernels":        {"name: x\nkernels: []\n", "no kernels"},
		"duplicate":         {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json}\n  - {name: a, spec: RODINIA/hotspot/spec.json}\n", `"a" is listed twice`},
		"bad name":          {"kernels:\n  - {name: 1a, spec: RODINIA/lud/spec.json}\n", "must start with a letter"},
		"unknown param":     {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json, config: {tile: 4}}\n", "tile, which is not a tunable parameter"},
		"order":             {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json}\n  - {name: b, spec: RODINIA/hotspot/spec.json}\norder: [a, a]\n", "listed twice"},
		"tune":              {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json}\ntune: {block: [1]}\n", "block is not a GPU setting"},
		"negative stream":   {"kernels:\n  - {name: a, spec: RODINIA/lud/spec.json, stream: -1}\n", "negative stream"},
		"missing spec":      {"kernels:\n  - {name: a, spec: RODINIA/nope/spec.json}\n", `kernel "a"`},
		"no name":           {"kernels:\n  - {spec: RODINIA/lud/spec.json}\n", "kernel 0 has no name (each kernel needs one: name: NAME)"},
		"kernels a number":  {"kernels: 5\n", `line 1: "5" is a whole number; want a list of kernels, each a mapping with name and spec`},
		"a kernel a number": {"kernels:\n  - 5\n", `line 2: "5" is a whole number; want a mapping (key: value)`},
	} {
		_, err := Load(writeWorkload(t, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, c.want)
		}
	}
}

// Fixed values narrow a kernel's space; restrictions still apply to
// them (lud needs 64 ≤ threads ≤ 1024); an empty one names the kernel.
// GPU settings are one for the chip.
func TestFixedValuesAndSettings(t *testing.T) {
	set, err := Load(writeWorkload(t, "kernels:\n  - {name: a, spec: RODINIA/lud/spec.json, config: {block_size_x: 8, block_size_y: [2, 4, 8, 16]}}\n  - {name: b, spec: RODINIA/streamcluster/spec.json, config: {block_size_x: 256}}\ntune: {nvml_gr_clock: [1980, 1410]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sp, lay, err := set.Space(context.Background(), false, space.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// lud 8×8 and 8×16 (8×2 and 8×4 have fewer than 64 threads) × 2 clocks.
	if sp.Len() != 4 {
		t.Fatalf("%d configurations, want 4", sp.Len())
	}
	w, err := set.Workload(lay, sp.Values(1))
	if err != nil {
		t.Fatal(err)
	}
	if w.Settings == nil || w.Settings.CoreClockMHz != 1410 {
		t.Errorf("settings %+v, want nvml_gr_clock 1410", w.Settings)
	}
	_, plan, err := w.Plan(set.Members[0].Spec.Request(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Settings == nil || *plan.Settings != (backend.Settings{CoreClockMHz: 1410}) || plan.Measure.StateKey == "" {
		t.Errorf("plan settings %+v, state %q", plan.Settings, plan.Measure.StateKey)
	}
	empty, err := Load(writeWorkload(t, "kernels:\n  - {name: a, spec: RODINIA/lud/spec.json, config: {block_size_x: 8, block_size_y: 2}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := empty.Space(context.Background(), false, space.BuildOptions{}); err == nil || !strings.Contains(err.Error(), `kernel "a"`) {
		t.Errorf("empty kernel space: err = %v, want one naming kernel a", err)
	}
}

func TestPermutations(t *testing.T) {
	got := permutations([]int{2, 0, 1})
	want := [][]int{{2, 0, 1}, {2, 1, 0}, {0, 2, 1}, {0, 1, 2}, {1, 2, 0}, {1, 0, 2}}
	if len(got) != len(want) {
		t.Fatalf("%d permutations, want 6", len(got))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("permutation %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// The file's measurement section overrides the specs': iterations,
// verification, the energy window and the protocol's trials (1: one
// stand-alone window; more: the repeated-trials protocol capped there).
func TestRequestMeasurement(t *testing.T) {
	for _, c := range []struct {
		section   string
		trials    int // 0: one window (Trials nil)
		minTrials int
	}{
		{"{iterations: 3, verify: false, energy: true, energy_window_seconds: 0.2, energy_trials: 1}", 0, 0},
		{"{iterations: 3, verify: false, energy: true, energy_window_seconds: 0.2, energy_trials: 2}", 2, 2},
		{"{iterations: 3, verify: false, energy: true, energy_window_seconds: 0.2, energy_trials: 7}", 7, measure.DefaultProtocol.MinTrials},
	} {
		set, err := Load(writeWorkload(t, "kernels:\n  - {name: a, spec: RODINIA/lud/spec.json}\nmeasurement: "+c.section+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := set.Request()
		if err != nil {
			t.Fatal(err)
		}
		if r.Iterations != 3 || r.Verify || !r.Energy || r.EnergyWindow != 200*time.Millisecond {
			t.Errorf("%s: request %+v", c.section, r)
		}
		switch {
		case c.trials == 0 && r.Trials != nil:
			t.Errorf("%s: trials %+v, want one window", c.section, *r.Trials)
		case c.trials > 0 && (r.Trials == nil || r.Trials.MaxTrials != c.trials || r.Trials.MinTrials != c.minTrials):
			t.Errorf("%s: trials %+v, want at most %d, at least %d", c.section, r.Trials, c.trials, c.minTrials)
		}
	}
	if _, err := Load(writeWorkload(t, "kernels:\n  - {name: a, spec: RODINIA/lud/spec.json}\nmeasurement: {energy_trials: -1}\n")); err == nil || !strings.Contains(err.Error(), "energy_trials") {
		t.Errorf("negative trials: err = %v", err)
	}
}

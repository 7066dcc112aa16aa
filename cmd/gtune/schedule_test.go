package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// gtune schedule on the simulated GPU: the four-kernel worked case of
// package schedule's tests is hand-checked there; here the command
// prints the profiles, the order, both kinds of rounds, and, once the
// orders are measured in its database, their ranking.
func TestScheduleWorkload(t *testing.T) {
	w := twoKernelWorkload(t, "")
	db := filepath.Join(t.TempDir(), "w.db")
	code, out, errs := gtune(t, "schedule", w, "--backend", "sim", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"instruction mix from model", "symbiotic order: ", "execution rounds (Figure 1):", "rounds of the block scheduler", "--strategy order_search --strategy-param start="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "measured orders") {
		t.Errorf("ranked without measured orders:\n%s", out)
	}
	if code, _, errs := gtune(t, "tune", w, "--backend", "sim", "--db", db, "--orders", "--no-progress"); code != 0 {
		t.Fatalf("tune --orders: %s", errs)
	}
	code, out, errs = gtune(t, "schedule", w, "--backend", "sim", "--db", db)
	if code != 0 || !strings.Contains(out, "measured orders (2, time)") || !strings.Contains(out, "percentile") {
		t.Errorf("exit %d, %s\n%s", code, errs, out)
	}
	code, out, _ = gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--json")
	if code != 0 || !strings.Contains(out, `"u_gpu_b"`) || !strings.Contains(out, `"ranking"`) {
		t.Errorf("--json: exit %d\n%s", code, out)
	}
	if code, _, errs := gtune(t, "schedule", w, "--backend", "sim", "--db", db, "--profile", "nvprof"); code == 0 || !strings.Contains(errs, "--profile") {
		t.Errorf("bad --profile: exit %d, %s", code, errs)
	}
}

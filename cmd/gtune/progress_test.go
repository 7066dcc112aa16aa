package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/internal/progress"
)

// With stderr not a terminal, a run says how far it is in plain lines
// (one per progress.PlainEvery; every step here), and --quiet silences them.
func TestPlainProgressLines(t *testing.T) {
	old := progress.PlainEvery
	progress.PlainEvery = 0
	defer func() { progress.PlainEvery = old }()
	spec := writeSpec(t, "", "")
	code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--max-evals", "4", "--strategy", "random_sample")
	if code != 0 || !strings.Contains(errs, "gtune: tuning: 1 of 4 configurations, ") || !strings.Contains(errs, "gtune: tuning: 4 of 4 configurations, ") ||
		!strings.Contains(errs, ", best time ") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	if strings.Contains(errs, "GPUs") {
		t.Errorf("one GPU's lines give a rate per GPU:\n%s", errs)
	}
	// Over several GPUs the line says at what rate, all and each.
	code, _, errs = gtune(t, "tune", spec, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--max-evals", "8", "--devices", "0,1")
	if code != 0 || !strings.Contains(errs, " per second on 2 GPUs (") || !strings.Contains(errs, " each)") {
		t.Fatalf("--devices 0,1: exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = gtune(t, "tune", spec, "--backend", "sim", "--db", filepath.Join(t.TempDir(), "r.db"), "--max-evals", "4", "--quiet")
	if code != 0 || strings.Contains(errs, "gtune: tuning") {
		t.Fatalf("--quiet: exit %d, stderr:\n%s", code, errs)
	}
}

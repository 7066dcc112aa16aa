package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gtune/gtune/ncupass"
)

// --observe: ncu with the default metrics or a list; anything else, an
// empty metric, the simulated GPU and a workload are refused before any
// work (exit 2, nothing tuned).
func TestObserveNcuFlag(t *testing.T) {
	if ms, err := parseObserve("ncu"); err != nil || !slices.Equal(ms, ncupass.DefaultMetrics) {
		t.Errorf("ncu: %v %v", ms, err)
	}
	if ms, err := parseObserve("ncu:dram__bytes_read.sum,sm__cycles_elapsed.avg"); err != nil || !slices.Equal(ms, []string{"dram__bytes_read.sum", "sm__cycles_elapsed.avg"}) {
		t.Errorf("ncu:list: %v %v", ms, err)
	}
	if ms, err := parseObserve(""); err != nil || ms != nil {
		t.Errorf("none: %v %v", ms, err)
	}
	for _, bad := range []string{"nsys", "ncu:", "ncu:a,,b", "ncu:a b"} {
		if _, err := parseObserve(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	spec := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "o.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", spec, "--backend", "sim", "--observe", "ncu", "--db", db}, "the simulated GPU has no counters"},
		{[]string{"tune", spec, "--backend", "sim", "--observe", "perf", "--db", db}, "--observe \"perf\""},
		{[]string{"tune", twoKernelWorkload(t, ""), "--backend", "sim", "--observe", "ncu", "--db", db}, "gtune schedule WORKLOAD --profile ncu"},
	} {
		code, _, errs := gtune(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s", c.args[2:], code, errs)
		}
	}
}

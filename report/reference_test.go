package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/store"
)

// TestLibraryReference: a run of a library routine measured on one of a
// kernel run's GPUs is its reference point, read from the same database
// and placed against the hull; one measured on another GPU is not.
func TestLibraryReference(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	add := func(r *store.Run, evals ...*store.Evaluation) {
		t.Helper()
		r.SpecHash, r.Objective, r.Strategy, r.DeviceName, r.Backend = "h-"+r.Kernel, "time", "brute_force", "NVIDIA H100 80GB HBM3", "cuda"
		if err := db.BeginRun(r); err != nil {
			t.Fatal(err)
		}
		for _, e := range evals {
			e.RunID = r.ID
			if err := db.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.EndRun(r.ID, store.RunDone); err != nil {
			t.Fatal(err)
		}
	}
	add(&store.Run{Kernel: "dgemm_beast", DeviceUUID: "GPU-a", Settings: map[string]any{"gpus": []string{"GPU-a", "GPU-b"}}},
		ev("F", 100, 1.0, 1, 1), ev("B", 90, 1.5, 1, 1), ev("D", 70, 2.0, 1, 1))
	add(&store.Run{Kernel: "cublasDgemm", DeviceUUID: "GPU-b", Settings: map[string]any{store.SettingLibrary: "cublasDgemm"}},
		ev("default", 250, 5.0, 1, 1), ev("pedantic", 200, 4.0, 1, 1))
	add(&store.Run{Kernel: "cublasDgemm", DeviceUUID: "GPU-c", Settings: map[string]any{store.SettingLibrary: "cublasDgemm"}},
		ev("default", 300, 6.0, 1, 1))
	// A merged library run (gtune merge) whose device is GPU-c holds a
	// configuration measured on GPU-b, the kernel run's second GPU: that
	// one is a reference, the one of GPU-c not.
	onB, onC := ev("default", 260, 5.2, 1, 1), ev("pedantic", 210, 4.2, 1, 1)
	onB.GPU, onC.GPU = "GPU-b", "GPU-c"
	add(&store.Run{Kernel: "cublasDgemm", DeviceUUID: "GPU-c", Settings: map[string]any{store.SettingLibrary: "cublasDgemm", "gpus": []string{"GPU-c", "GPU-b"}}},
		onB, onC)
	db.Close()

	runs, err := ReadRuns(path, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].References) != 2 || runs[0].References[0].Run.ID != 2 || runs[0].References[1].Run.ID != 4 ||
		len(runs[0].References[1].Evals) != 1 {
		t.Fatalf("references of run 1: %+v", runs[0].References)
	}
	var buf bytes.Buffer
	RunsReport(&buf, runs)
	var got []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "reference ") {
			got = append(got, l)
		}
	}
	want := []string{
		"reference cublasDgemm (run 2) default, measured on GPU-b: 250 GFLOP/s, 5 GFLOP/s/W: 2.50× the fastest's GFLOP/s, 2.50× the most efficient's GFLOP/s/W",
		"reference cublasDgemm (run 2) pedantic, measured on GPU-b: 200 GFLOP/s, 4 GFLOP/s/W: 2.00× the fastest's GFLOP/s, 2.00× the most efficient's GFLOP/s/W",
		"reference cublasDgemm (run 4) default, measured on GPU-b: 260 GFLOP/s, 5.2 GFLOP/s/W: 2.60× the fastest's GFLOP/s, 2.60× the most efficient's GFLOP/s/W",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reference lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The HTML report draws the two points beside the hull and says where
	// they lie.
	buf.Reset()
	if err := WriteHTML(&buf, runs, nil, HTMLOptions{Pareto: [2]string{"time", "energy"}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"reference: cublasDgemm (run 2) default", "reference: cublasDgemm (run 2) pedantic", "2.50× the fastest&#39;s GFLOP/s"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("the HTML report lacks %q", w)
		}
	}
	// A library run has no reference of its own.
	lib, err := ReadRuns(path, []string{"2"})
	if err != nil || len(lib[0].References) != 0 {
		t.Fatalf("references of the library run: %+v, %v", lib, err)
	}
}

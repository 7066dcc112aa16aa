package tuner

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/emulate"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// transfer's prior "projection:ID" takes a configuration's work from its
// PTX kept in the database (emulated, with the run's registers) and the
// others' from the spec's declaration.
func TestProjectedTimesFromKeptPTX(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("..", "emulate", "testdata", "vector_add_256_1.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &store.Run{SpecHash: s.Hash, SpecPath: s.Path, Kernel: s.KernelName, Objective: "time", Strategy: "brute_force",
		DeviceName: "NVIDIA H100 80GB HBM3", DeviceUUID: "GPU-1", Driver: "580", Backend: "cuda", GtuneVersion: "test"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	v := 1.0
	if err := db.Add(&store.Evaluation{RunID: r.ID, Key: "256,1", Status: "valid", Objective: &v, Observations: map[string]float64{"time": 1},
		Registers: 255, PTX: []store.KernelPTX{{Kernel: s.KernelName, PTX: text}}}); err != nil {
		t.Fatal(err)
	}
	c := &Config{Subject: FromSpec(s), Space: sp, DB: db}
	got, err := c.projectedTimes(io.Discard, "h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := device.Lookup("h100_sxm")
	prof := model.SpecProfile(d)
	prob, _ := s.Problem()
	for _, key := range []string{"256,1", "128,1"} {
		i, ok := sp.Lookup(key)
		if !ok {
			t.Fatalf("no configuration %s", key)
		}
		j, err := s.Job(sp.Values(i))
		if err != nil {
			t.Fatal(err)
		}
		w := j.Work
		if key == "256,1" {
			ew, _, err := emulate.JobWork(text, prob.Kernels[0], j)
			if err != nil {
				t.Fatal(err)
			}
			ew.Registers = 255
			w = &ew
		}
		p, err := model.Project(d, prof, w, j)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got[i]/p.TimeMs-1) > 1e-12 {
			t.Errorf("%s: projected %v ms; want %v", key, got[i], p.TimeMs)
		}
	}
	// 255 registers: one 256-thread block per SM, slower than the spec's
	// declared work says.
	i, _ := sp.Lookup("256,1")
	j, _ := s.Job(sp.Values(i))
	declared, _ := model.Project(d, prof, j.Work, j)
	if got[i] <= declared.TimeMs {
		t.Errorf("256,1 from its PTX at 255 registers: %v ms, not slower than declared %v ms", got[i], declared.TimeMs)
	}
}

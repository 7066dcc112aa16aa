package tuner

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/emulate"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// transfer's prior "projection:ID" takes a configuration's work from its
// PTX kept in the database (emulated, with the run's registers) and the
// others' from the spec's declaration.
func TestProjectedTimesFromKeptPTX(t *testing.T) {
	s, sp, text, db := keptFixture(t)
	v := 1.0
	if err := db.Add(&store.Evaluation{RunID: 1, Key: "256,1", Status: "valid", Objective: &v, Observations: map[string]float64{"time": 1},
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
		p, err := model.Project(d, prof, w, j.Geometry())
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
	declared, _ := model.Project(d, prof, j.Work, j.Geometry())
	if got[i] <= declared.TimeMs {
		t.Errorf("256,1 from its PTX at 255 registers: %v ms, not slower than declared %v ms", got[i], declared.TimeMs)
	}
}

// KeptWork emulates every configuration whose PTX is kept, counts those
// with none, and names the run of a text the emulator cannot read.
func TestKeptWork(t *testing.T) {
	s, sp, text, db := keptFixture(t)
	for key, ptx := range map[string][]byte{"256,1": text, "128,1": []byte(".version 8.8\n.entry vector_add( {\n\tfrobnicate.u32 %r1;\n}\n")} {
		v := 1.0
		if err := db.Add(&store.Evaluation{RunID: 1, Key: key, Status: "valid", Objective: &v, Observations: map[string]float64{"time": 1},
			Registers: 40, PTX: []store.KernelPTX{{Kernel: s.KernelName, PTX: ptx}}}); err != nil {
			t.Fatal(err)
		}
	}
	var idx []int
	for _, key := range []string{"256,1", "128,1", "64,1"} {
		i, ok := sp.Lookup(key)
		if !ok {
			t.Fatalf("no configuration %s", key)
		}
		idx = append(idx, i)
	}
	k, err := KeptWork(db, s, sp, idx)
	if err != nil {
		t.Fatal(err)
	}
	// 256,1's first 2 blocks (the sample: they share no sector, so no more), 5,376 thread instructions each.
	if w := k.Work[idx[0]]; w == nil || w.Registers != 40 || k.Instructions != 2*5376 {
		t.Errorf("256,1: work %+v, %d thread instructions; want 40 registers, 2 × 5376", w, k.Instructions)
	}
	if err := k.Failed[idx[1]]; err == nil || !strings.Contains(err.Error(), "the PTX of 128,1 kept by run 1") {
		t.Errorf("128,1: %v; want its emulation's error, naming it", err)
	}
	if k.Missing != 1 || len(k.Work) != 1 {
		t.Errorf("%d missing, %d emulated; want 1, 1", k.Missing, len(k.Work))
	}
}

// keptFixture is vector_add's spec and space, the PTX of its 256,1
// configuration (emulate/testdata), and a database with one run of the
// spec on an H100 (run 1) to keep PTX in.
func keptFixture(t *testing.T) (*spec.Spec, *space.Space, []byte, *store.DB) {
	t.Helper()
	s, sp, _, db := vectorAddSim(t)
	text, err := os.ReadFile(filepath.Join("..", "emulate", "testdata", "vector_add_256_1.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{SpecHash: s.Hash, SpecPath: s.Path, Kernel: s.KernelName, Objective: "time", Strategy: "brute_force",
		DeviceName: "NVIDIA H100 80GB HBM3", DeviceUUID: "GPU-1", Driver: "580", Backend: "cuda", GtuneVersion: "test"}
	if err := db.BeginRun(r); err != nil || r.ID != 1 {
		t.Fatalf("BeginRun: run %d, %v", r.ID, err)
	}
	return s, sp, text, db
}

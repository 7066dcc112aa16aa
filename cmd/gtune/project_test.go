package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/projection"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// gtune project ranks GPUs by the model's projection: from the
// specifications by default, from a measured profile where the database
// holds one; every configuration with --config all; refusals for a spec
// without work and an unknown device.
func TestProject(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "p.db")
	type doc struct {
		Configurations []struct {
			Key         string
			Projections []model.Projection
		}
	}
	project := func(args ...string) doc {
		t.Helper()
		code, out, errs := gtune(t, append([]string{"project", va, "--db", db, "--json"}, args...)...)
		var d doc
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("project %v: exit %d: %s %s", args, code, out, errs)
		}
		return d
	}
	d := project("--devices", "h100_sxm,h200")
	if len(d.Configurations) != 1 || d.Configurations[0].Key != "256,1" || len(d.Configurations[0].Projections) != 2 {
		t.Fatalf("%+v", d)
	}
	ps := d.Configurations[0].Projections
	h100, _ := device.Lookup("h100_sxm")
	sv, err := spec.Load(va)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := sv.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	i, _ := sp.Lookup("256,1")
	j, err := sv.Job(sp.Values(i))
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.Project(h100, model.SpecProfile(h100), j.Work, j.Geometry())
	if err != nil {
		t.Fatal(err)
	}
	if ps[0].Device != "h200" || ps[1].Device != "h100_sxm" || ps[1].TimeMs != want.TimeMs || ps[1].Source != "specification" || ps[0].Bound != "global" {
		t.Errorf("projections %+v, want H100 %+v", ps, want)
	}
	// A measured H100 twice as fast as its specification in DRAM.
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	fast := model.SpecProfile(h100)
	fast.Source = "measured"
	fast.BlockNs = 8 // a tenth of the H100's block scheduling: 256,1's million blocks stay DRAM-bound
	for i := range fast.Memory {
		fast.Memory[i].ReadGBs = 8000
	}
	js, _ := json.Marshal(fast)
	if err := s.AddProfile(&store.Profile{Device: "h100_sxm", Name: fast.Name, Source: "measured", JSON: js}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The H200, not measured, is derived from the measured H100 (its
	// family): it stays the faster, where beside the H100's measured
	// profile its specification's ranked it slower.
	ps = project("--devices", "h100_sxm,h200").Configurations[0].Projections
	if ps[0].Device != "h200" || ps[0].Source != model.SourceDerivedFamily || ps[1].Source != "measured" || ps[1].TimeMs >= want.TimeMs || ps[0].TimeMs >= ps[1].TimeMs {
		t.Errorf("with a measured H100 profile: %+v", ps)
	}
	if all := project("--devices", "h200", "--config", "all"); len(all.Configurations) != 96 {
		t.Errorf("--config all: %d configurations", len(all.Configurations))
	}
	code, out, _ := gtune(t, "project", va, "--db", db, "--devices", "h100_sxm,h200", "--config", "64,4")
	if code != 0 || !strings.HasPrefix(out, "vector_add 64,4: projected on 2 GPUs, fastest first\n") || !strings.Contains(out, "h100_sxm  NVIDIA H100 80GB HBM3  measured") {
		t.Errorf("table: exit %d:\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"project", va, "--devices", "h100_sxm,nope"}, `unknown device id "nope"`},
		{[]string{"project", va, "--devices", "hd7970"}, "hd7970 is not a CUDA GPU"},
		{[]string{"project", va, "--config", "7,7"}, `"7,7" is not a configuration of the search space`},
		{[]string{"project", writeSpec(t, `,
    "Simulation": {
      "Device": "h100_sxm",
      "Flops": "n",
      "Bytes": "12*n",
      "Registers": "16 + 4*work_per_thread",
      "SharedMemory": "0",
      "Efficiency": "1.0 if work_per_thread <= 2 else 0.8",
      "CompileFails": "block_size_x == 992",
      "Invalid": "block_size_x == 1024 and work_per_thread == 4",
      "Noise": 0.01,
      "Seed": 7
    }`, "")}, "has no Gtune.Simulation section"},
	} {
		if code, _, errs := gtune(t, append(c.args, "--db", db)...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, errs, c.want)
		}
	}
}

// project --from anchors on a measured run: each configuration the run
// measured, projected from its measured time (model.Anchored) on the
// run's GPU; a run of another spec and a malformed --from are refused.
func TestProjectFromRun(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "r.db")
	if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--db", db, "--strategy", "random_sample", "--max-evals", "5", "--no-progress"); code != 0 {
		t.Fatalf("tune: %s", errs)
	}
	code, out, errs := gtune(t, "project", va, "--db", db, "--from", "1", "--config", "all", "--devices", "h200,h100_sxm", "--json")
	var d struct {
		Configurations []struct {
			Key         string
			Projections []model.Projection
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Configurations) != 5 {
		t.Fatalf("project --from: exit %d: %s %s", code, out, errs)
	}
	for _, c := range d.Configurations {
		for _, p := range c.Projections {
			if p.From != "h100_sxm" || p.MeasuredMs <= 0 {
				t.Fatalf("%s: %+v", c.Key, p)
			}
			// On the GPU it ran on, the anchored projection is the
			// measurement.
			if p.Device == "h100_sxm" && math.Abs(p.TimeMs/p.MeasuredMs-1) > 1e-9 {
				t.Errorf("%s on its own GPU: %v ms, measured %v", c.Key, p.TimeMs, p.MeasuredMs)
			}
		}
	}
	mm := filepath.Join("..", "..", "examples", "matmul", "spec.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"project", mm, "--db", db, "--from", "1"}, "run 1 tuned"},
		{[]string{"project", va, "--db", db, "--from", "x"}, `want RUN (a run of --db) or FILE:RUN`},
		{[]string{"project", va, "--db", db, "--from", "9"}, "9"},
	} {
		if code, _, errs := gtune(t, c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d: %s; want %q", c.args, code, errs, c.want)
		}
	}
}

// tune --backend model tunes on the projection of --sim-device: each
// configuration's time is model.Project's over the device's profile
// (here the specification's), with no noise; the run is the model
// backend's.
func TestTuneOnTheModelBackend(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "m.db")
	code, out, errs := gtune(t, "tune", va, "--backend", "model", "--sim-device", "h200", "--db", db, "--json", "--no-progress", "--energy=false")
	var doc struct {
		Device struct{ Name, UUID, Backend string }
		Best   struct {
			Key        string `json:"key"`
			Objectives map[string]float64
		}
		Evaluated int
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if doc.Device.Name != "Projected NVIDIA H200" || doc.Device.UUID != "MODEL-h200" || doc.Device.Backend != "model" || doc.Evaluated != 96 {
		t.Fatalf("%+v", doc)
	}
	h200, _ := device.Lookup("h200")
	sv, _ := spec.Load(va)
	sp, _ := sv.BuildSpace()
	best := math.Inf(1)
	for i := range sp.Len() {
		j, err := sv.Job(sp.Values(i))
		if err != nil {
			t.Fatal(err)
		}
		if p, err := model.Project(h200, model.SpecProfile(h200), j.Work, j.Geometry()); err == nil {
			best = min(best, p.TimeMs)
		}
	}
	if got := doc.Best.Objectives["time"]; math.Abs(got/best-1) > 1e-9 {
		t.Errorf("best time %v ms, the projection's best %v ms (%s)", got, best, out)
	}
	d, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runs, _ := d.Runs()
	if len(runs) != 1 || runs[0].Backend != "model" {
		t.Errorf("stored run %+v", runs)
	}
	// Projected GPUs of one model share a run as simulated ones do.
	code, out, errs = gtune(t, "tune", va, "--backend", "model", "--sim-device", "h200", "--db", filepath.Join(t.TempDir(), "m2.db"), "--no-progress", "--energy=false", "--devices", "0,1")
	if code != 0 || !strings.Contains(out, "GPUs: 2 × Projected NVIDIA H200\n  GPU 0, MODEL-h200: ") {
		t.Errorf("--devices 0,1 on the model backend: exit %d: %s %s", code, out, errs)
	}
}

// transfer with prior=projection starts from the configuration projected
// best on the run's GPU (the first of its initial design); an unknown
// projection device is refused.
func TestTransferFromProjection(t *testing.T) {
	mm := filepath.Join("..", "..", "examples", "matmul", "spec.json")
	db := filepath.Join(t.TempDir(), "t.db")
	code, out, errs := gtune(t, "project", mm, "--devices", "h100_sxm", "--config", "all", "--db", db, "--json")
	var proj struct {
		Configurations []struct {
			Key         string
			Projections []model.Projection
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &proj) != nil {
		t.Fatalf("project: exit %d: %s", code, errs)
	}
	best, bestMs := "", math.Inf(1)
	for _, c := range proj.Configurations {
		if len(c.Projections) > 0 && c.Projections[0].TimeMs < bestMs {
			best, bestMs = c.Key, c.Projections[0].TimeMs
		}
	}
	if code, _, errs := gtune(t, "tune", mm, "--backend", "sim", "--db", db, "--strategy", "transfer", "--strategy-param", "prior=projection",
		"--max-evals", "5", "--no-progress"); code != 0 {
		t.Fatalf("tune: %s", errs)
	}
	d, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := d.RunEvaluations(1)
	d.Close()
	if err != nil || len(evs) != 5 || evs[0].Key != best {
		t.Fatalf("first evaluation %v, want the projected best %s (%v)", evs, best, err)
	}
	if code, _, errs := gtune(t, "tune", mm, "--backend", "sim", "--db", db, "--strategy", "transfer", "--strategy-param", "prior=projection:nope",
		"--max-evals", "5", "--no-progress"); code != 2 || !strings.Contains(errs, `unknown device id "nope"`) {
		t.Errorf("unknown projection device: exit %d: %s", code, errs)
	}
}

// project --ptx takes the work from emulating the configuration's first
// thread block: vector_add's PTX (block_size_x 256, work_per_thread 1)
// adds its integer instructions to the arithmetic and moves the bytes the
// spec declares; --ptx wants one configuration of the PTX's kernel.
func TestProjectFromPTX(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	ptx := filepath.Join("..", "..", "emulate", "testdata", "vector_add_256_1.ptx")
	db := filepath.Join(t.TempDir(), "p.db")
	code, out, errs := gtune(t, "project", va, "--config", "256,1", "--devices", "h100_sxm", "--ptx", ptx, "--db", db, "--json")
	var d struct {
		Configurations []struct{ Projections []model.Projection }
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Configurations) != 1 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	p := d.Configurations[0].Projections[0]
	declared := project1(t, va, db)
	if p.Bound != "global" || p.ComputeMs <= 10*declared.ComputeMs || math.Abs(p.GlobalMs/declared.GlobalMs-1) > 1e-9 {
		t.Errorf("emulated %+v, declared %+v", p, declared)
	}
	if !strings.Contains(errs, "gtune: work of vector_add 256,1 from emulating its first 2 thread blocks (10752 thread instructions") {
		t.Errorf("stderr: %s", errs)
	}
	// The compiler's registers (--registers): 255 per thread leave one
	// 256-thread block per SM on the H100, occupancy 1/8.
	code, out, errs = gtune(t, "project", va, "--config", "256,1", "--devices", "h100_sxm", "--ptx", ptx, "--registers", "255", "--db", db, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Configurations[0].Projections[0].Occupancy != 0.125 {
		t.Errorf("--registers 255: exit %d: %s %s", code, out, errs)
	}
	if code, _, errs := gtune(t, "project", va, "--registers", "40", "--db", db); code != 2 || !strings.Contains(errs, "--registers goes with --ptx") {
		t.Errorf("--registers without --ptx: exit %d: %s", code, errs)
	}
	if code, _, errs := gtune(t, "project", va, "--config", "all", "--ptx", ptx, "--db", db); code != 2 || !strings.Contains(errs, "--ptx is the PTX of one configuration") {
		t.Errorf("--config all with --ptx: exit %d: %s", code, errs)
	}
	if code, _, errs := gtune(t, "project", va, "--config", "256,1", "--ptx", filepath.Join("..", "..", "emulate", "testdata", "stencil_32_8.ptx"), "--db", db); code != 2 || !strings.Contains(errs, "has no entry vector_add") {
		t.Errorf("PTX of another kernel: exit %d: %s", code, errs)
	}
}

// project --emulate takes each configuration's work from the PTX a
// tuning run kept in the database, with that run's registers: the same
// projection as --ptx FILE --registers N; configurations that kept none
// are left out, and said so; a database that keeps none is refused.
func TestProjectEmulateKeptPTX(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	ptxPath := filepath.Join("..", "..", "emulate", "testdata", "vector_add_256_1.ptx")
	text, err := os.ReadFile(ptxPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(va)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "p.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{SpecHash: s.Hash, SpecPath: va, Kernel: s.KernelName, Objective: "time", Strategy: "brute_force",
		DeviceName: "NVIDIA H100 80GB HBM3", DeviceUUID: "GPU-1", Driver: "580", Backend: "cuda", GtuneVersion: "test"}
	if err := db.BeginRun(r); err != nil {
		t.Fatal(err)
	}
	v := 1.0
	if err := db.Add(&store.Evaluation{RunID: r.ID, Key: "256,1", Status: "valid", Objective: &v, Observations: map[string]float64{"time": 1},
		Registers: 255, PTX: []store.KernelPTX{{Kernel: "vector_add", PTX: text}}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, errs := gtune(t, "project", va, "--config", "all", "--emulate", "--devices", "h100_sxm", "--db", dbPath, "--json")
	var d struct {
		Configurations []struct {
			Key         string
			Projections []model.Projection
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || len(d.Configurations) != 1 || d.Configurations[0].Key != "256,1" {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	got := d.Configurations[0].Projections[0]
	if !strings.Contains(errs, "gtune: work of 1 configurations of vector_add from emulating the first thread blocks of the PTX kept in") ||
		!strings.Contains(errs, "configurations have none kept and are left out") {
		t.Errorf("stderr: %s", errs)
	}
	code, out, errs = gtune(t, "project", va, "--config", "256,1", "--devices", "h100_sxm", "--ptx", ptxPath, "--registers", "255", "--db", dbPath, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("--ptx: exit %d: %s %s", code, out, errs)
	}
	if want := d.Configurations[0].Projections[0]; got != want || got.Occupancy != 0.125 {
		t.Errorf("--emulate %+v; --ptx --registers 255 %+v", got, want)
	}
	if code, _, errs := gtune(t, "project", va, "--config", "128,1", "--emulate", "--db", dbPath); code != 2 || !strings.Contains(errs, "keeps no PTX of") {
		t.Errorf("a configuration without PTX: exit %d: %s", code, errs)
	}
	if code, _, errs := gtune(t, "project", va, "--emulate", "--ptx", ptxPath, "--db", dbPath); code != 2 || !strings.Contains(errs, "not with --ptx") {
		t.Errorf("--emulate with --ptx: exit %d: %s", code, errs)
	}
}

// project1 is vector_add 256,1 projected on the H100 from its declared
// work.
func project1(t *testing.T, va, db string) model.Projection {
	t.Helper()
	code, out, errs := gtune(t, "project", va, "--config", "256,1", "--devices", "h100_sxm", "--db", db, "--json")
	var d struct {
		Configurations []struct{ Projections []model.Projection }
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	return d.Configurations[0].Projections[0]
}

// project --write-cache writes the projected times as Kernel Tuner caches,
// one per GPU, that the transfer strategy reads as a prior: every
// configuration, each with the time --json gives; it wants a directory.
func TestProjectWriteCache(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	code, js, errs := gtune(t, "project", va, "--config", "all", "--devices", "h100_sxm,h200", "--db", db, "--json", "--write-cache", dir)
	var d struct {
		Configurations []struct {
			Key         string
			Projections []model.Projection
		}
	}
	if code != 0 || json.Unmarshal([]byte(js), &d) != nil {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, id := range []string{"h100_sxm", "h200"} {
		c, err := cache.Load(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Entries) != len(d.Configurations) || len(c.Entries) == 0 || !strings.Contains(c.DeviceName, "projected") {
			t.Fatalf("%s: %d entries, device %q; want %d, projected", id, len(c.Entries), c.DeviceName, len(d.Configurations))
		}
		for _, pc := range d.Configurations {
			want := math.NaN()
			for _, p := range pc.Projections {
				if p.Device == id {
					want = p.TimeMs
				}
			}
			if e := c.Entries[pc.Key]; e == nil || !e.Valid() || e.Time != want {
				t.Errorf("%s %s: cache entry %+v; want time %v", id, pc.Key, e, want)
			}
		}
	}
	if code, _, errs := gtune(t, "project", va, "--db", db, "--write-cache", filepath.Join(dir, "nowhere")); code != 2 || !strings.Contains(errs, "want an existing directory") {
		t.Errorf("no directory: exit %d: %s", code, errs)
	}
}

// project --against checks the projections against runs measured on two
// simulated GPUs (an H100 and an H200, the simulator's model being the
// projection's on specification profiles, up to its noise, but for block
// scheduling, which the simulator does not charge): the H200, measured
// faster on every configuration, is the right GPU on all of them but
// those the projection finds bound by block scheduling on both GPUs (a
// tie, the H100 named first), with no penalty; one GPU measured is
// refused.
func TestProjectAgainst(t *testing.T) {
	va := filepath.Join("..", "..", "examples", "vector_add", "spec.json")
	db := filepath.Join(t.TempDir(), "a.db")
	for _, d := range []string{"h100_sxm", "h200"} {
		if code, _, errs := gtune(t, "tune", va, "--backend", "sim", "--sim-device", d, "--db", db, "--no-progress"); code != 0 {
			t.Fatalf("tune on %s: %s", d, errs)
		}
	}
	code, out, errs := gtune(t, "project", va, "--db", db, "--config", "all", "--devices", "h100_sxm,h200", "--against", "1,2", "--json")
	if code != 0 {
		t.Fatalf("project --against: exit %d: %s", code, errs)
	}
	var doc struct {
		Configurations []projection.Configuration `json:"configurations"`
		Selection      projection.SelectionReport `json:"selection"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Selection
	tied := 0
	for _, pc := range doc.Configurations {
		if len(pc.Projections) == 2 && pc.Projections[0].Bound == "blocks" && pc.Projections[1].Bound == "blocks" {
			tied++
		}
	}
	if len(r.Configurations) != 96 || tied == 0 || r.Right != 96-tied || r.Kernel.Chosen != "h200" || r.Kernel.Best != "h200" || len(r.Own) != 2 {
		t.Errorf("selection: %d configurations, %d right, %d tied on block scheduling, kernel %+v, own %+v", len(r.Configurations), r.Right, tied, r.Kernel, r.Own)
	}
	code, out, _ = gtune(t, "project", va, "--db", db, "--config", "all", "--devices", "h100_sxm,h200", "--against", "1,2")
	if code != 0 || !strings.Contains(out, "vector_add: device selection against measured times (seed 003, section V), h100_sxm, h200, 96 configurations measured on each\n  right GPU: ") {
		t.Errorf("table: exit %d, ends %q", code, out[max(0, len(out)-600):])
	}
	if code, _, errs := gtune(t, "project", va, "--db", db, "--devices", "h100_sxm,h200", "--against", "1"); code != 2 || !strings.Contains(errs, "--against: device selection needs two or more") {
		t.Errorf("one GPU measured: exit %d: %s", code, errs)
	}
}

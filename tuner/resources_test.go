package tuner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/compilecache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// countingSim is the simulated GPU with a count of its Compile calls. It
// is not a *sim.Sim, so the provider treats it as a real GPU
// (declarations are required there); it is a backend.ResourceReporter through the
// embedded Sim.
type countingSim struct {
	*sim.Sim
	compiles atomic.Int64
}

func (c *countingSim) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	c.compiles.Add(1)
	return c.Sim.Compile(ctx, j)
}

// reportingGPU is the simulated GPU seen as a real one that reports
// resources: backend.Backend and backend.ResourceReporter, not
// backend.Simulator (whose declared resources are what it runs).
type reportingGPU struct {
	backend.Backend
	r backend.ResourceReporter
}

func (g reportingGPU) Resources(ctx context.Context, j *backend.Job, b *backend.Binary) (backend.Resources, error) {
	return g.r.Resources(ctx, j, b)
}

// plainSim is the simulated GPU seen only through backend.Backend: a
// backend that cannot report resources.
type plainSim struct{ s *sim.Sim }

func (p plainSim) Device() device.Description { return p.s.Device() }
func (p plainSim) Prepare(ctx context.Context, pr *backend.Problem) error {
	return p.s.Prepare(ctx, pr)
}
func (p plainSim) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	return p.s.Compile(ctx, j)
}
func (p plainSim) Run(ctx context.Context, pl *backend.Plan) (*backend.Result, error) {
	return p.s.Run(ctx, pl)
}
func (p plainSim) Close() error { return p.s.Close() }

// resourcesSpec loads the tuner's test spec (112 configurations of
// block_size_x 32..1024 × work_per_thread 1, 2, 4, 8; block_size_x 992
// does not compile) with static shared memory 4*block_size_x, dynamic
// shared memory 8*work_per_thread, and the registers expression kept
// (declared) or removed.
func resourcesSpec(t *testing.T, declareRegisters bool) (*spec.Spec, *space.Space) {
	t.Helper()
	b, err := os.ReadFile("testdata/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	ks := d["KernelSpecification"].(map[string]any)
	ks["SharedMemory"] = "8*work_per_thread"
	abs, err := filepath.Abs("testdata/kernel.cu")
	if err != nil {
		t.Fatal(err)
	}
	ks["KernelFile"] = abs
	simSec := d["Gtune"].(map[string]any)["Simulation"].(map[string]any)
	simSec["SharedMemory"] = "4*block_size_x"
	if !declareRegisters {
		delete(simSec, "Registers")
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	if sp.Len() != 112 {
		t.Fatalf("test spec has %d configurations, want 112", sp.Len())
	}
	return s, sp
}

func h100Sim(t *testing.T) *sim.Sim {
	t.Helper()
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	return sim.New(d, sim.Options{Seed: 1})
}

func job(t *testing.T, s *spec.Spec, sp *space.Space, i int) *backend.Job {
	t.Helper()
	j, err := s.Job(sp.Values(i))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Through the backend's ResourceReporter the provider returns exactly
// the simulated Work's registers and static shared memory plus the
// job's dynamic shared memory, compiling each configuration once; the
// three configurations that do not compile (block_size_x 992) fall back
// to the declarations.
func TestResourcesFromTheBackend(t *testing.T) {
	s, sp := resourcesSpec(t, true)
	be := &countingSim{Sim: h100Sim(t)}
	p := NewResourceProvider(context.Background(), &strings.Builder{}, be, s, sp, nil)
	failed := 0
	for pass := range 2 {
		for i := range sp.Len() {
			regs, smem, err := p.Resources(i)
			if err != nil {
				t.Fatalf("configuration %s: %v", sp.Key(i), err)
			}
			j := job(t, s, sp, i)
			want := j.Work.SharedMemory + j.DynamicSharedBytes
			if regs != j.Work.Registers || smem != want {
				t.Errorf("configuration %s: %d registers, %d bytes; want %d, %d", j.Key, regs, smem, j.Work.Registers, want)
			}
			u := p.units[p.unitOf[i]]
			compileFails := strings.HasPrefix(j.Key, "992,")
			if pass == 0 && compileFails {
				failed++
			}
			if compileFails != (u.from == "") || (!compileFails && u.from != "backend") {
				t.Errorf("configuration %s: from %q, compile error %v", j.Key, u.from, u.backendErr)
			}
		}
	}
	if n := be.compiles.Load(); n != 112 || failed != 3 {
		t.Errorf("%d compiles, %d failing; want 112 (each configuration once, over two passes), 3", n, failed)
	}
}

// Configurations stored in the results database for the same spec and
// device take their registers and static shared memory from there, with
// no compile; the others are compiled. An evaluation whose kernel never
// loaded (compile_failed, 0 registers) is not used.
func TestResourcesFromTheDatabase(t *testing.T) {
	s, sp := resourcesSpec(t, true)
	be := &countingSim{Sim: h100Sim(t)}
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dev := be.Device()
	run := &store.Run{SpecHash: s.Hash, DeviceUUID: dev.UUID, DeviceName: dev.Name, Backend: dev.Backend, Kernel: s.KernelName}
	if err := db.BeginRun(run); err != nil {
		t.Fatal(err)
	}
	stored := map[int]bool{}
	for i := range sp.Len() {
		j := job(t, s, sp, i)
		e := &store.Evaluation{RunID: run.ID, Key: j.Key}
		switch {
		case strings.HasSuffix(j.Key, ",1"): // work_per_thread 1: valid, distinctive values
			e.Status, e.Registers, e.SharedStaticBytes = "valid", 100+i, 7*i
			stored[i] = true
		case strings.HasSuffix(j.Key, ",2"):
			e.Status, e.Reason = "compile_failed", "test"
		default:
			continue
		}
		if err := db.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	p := NewResourceProvider(context.Background(), &strings.Builder{}, be, s, sp, db)
	for i := range sp.Len() {
		regs, smem, err := p.Resources(i)
		if err != nil {
			t.Fatalf("configuration %s: %v", sp.Key(i), err)
		}
		j := job(t, s, sp, i)
		wantR, wantS := j.Work.Registers, j.Work.SharedMemory+j.DynamicSharedBytes
		if stored[i] {
			wantR, wantS = 100+i, 7*i+j.DynamicSharedBytes
		}
		if regs != wantR || smem != wantS {
			t.Errorf("configuration %s: %d registers, %d bytes; want %d, %d", j.Key, regs, smem, wantR, wantS)
		}
	}
	if len(stored) != 32 {
		t.Fatalf("%d stored", len(stored))
	}
	if n := be.compiles.Load(); n != 112-32 {
		t.Errorf("%d compiles, want %d (the configurations not in the database)", n, 112-32)
	}

	// Everything stored: no compile at all.
	for i := range sp.Len() {
		if !stored[i] {
			if err := db.Add(&store.Evaluation{RunID: run.ID, Key: sp.Key(i), Status: "launch_failed", Registers: 200, SharedStaticBytes: 64}); err != nil {
				t.Fatal(err)
			}
		}
	}
	be2 := &countingSim{Sim: h100Sim(t)}
	p2 := NewResourceProvider(context.Background(), &strings.Builder{}, be2, s, sp, db)
	for i := range sp.Len() {
		regs, _, err := p2.Resources(i)
		if err != nil || (!stored[i] && regs != 200) || (stored[i] && regs != 100+i) {
			t.Errorf("configuration %s: %d registers, %v", sp.Key(i), regs, err)
		}
	}
	if n := be2.compiles.Load(); n != 0 {
		t.Errorf("%d compiles with every configuration stored, want 0", n)
	}
}

// A backend that cannot report resources falls back to the spec's
// declarations, without compiling.
func TestResourcesDeclared(t *testing.T) {
	s, sp := resourcesSpec(t, true)
	be := plainSim{h100Sim(t)}
	p := NewResourceProvider(context.Background(), &strings.Builder{}, be, s, sp, nil)
	for i := range sp.Len() {
		regs, smem, err := p.Resources(i)
		j := job(t, s, sp, i)
		bxv, _ := sp.Values(i)[0].Int()
		wptv, _ := sp.Values(i)[1].Int()
		bx, wpt := int(bxv), int(wptv)
		if err != nil || regs != 16+4*wpt || smem != 4*bx+8*wpt {
			t.Errorf("configuration %s: %d registers, %d bytes, %v; want %d, %d", j.Key, regs, smem, err, 16+4*wpt, 4*bx+8*wpt)
		}
	}
}

// Without declarations, a configuration that no source knows is an
// error naming it and saying why each source failed.
func TestResourcesUnknownNamesTheConfiguration(t *testing.T) {
	s, sp := resourcesSpec(t, false)
	// A reporting backend: only the configurations that do not compile
	// are unknown.
	hs := h100Sim(t)
	be := reportingGPU{hs, hs}
	p := NewResourceProvider(context.Background(), &strings.Builder{}, be, s, sp, nil)
	var bad []string
	for i := range sp.Len() {
		regs, _, err := p.Resources(i)
		switch {
		case err != nil:
			bad = append(bad, sp.Key(i))
			msg := err.Error()
			if !strings.HasPrefix(msg, "configuration "+sp.Key(i)+": ") || !strings.Contains(msg, "it does not compile") ||
				!strings.Contains(msg, "CompileFails is true") || !strings.Contains(msg, "declares no Gtune.Simulation.Registers") {
				t.Errorf("message: %s", msg)
			}
		case regs != 32: // the simulator's default without a Registers expression
			t.Errorf("configuration %s: %d registers, want 32", sp.Key(i), regs)
		}
	}
	if fmt.Sprint(bad) != "[992,1 992,2 992,4]" {
		t.Errorf("unknown configurations %v, want [992,1 992,2 992,4]", bad)
	}

	// A backend that cannot report them, and no database entry.
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p = NewResourceProvider(context.Background(), &strings.Builder{}, plainSim{h100Sim(t)}, s, sp, db)
	_, _, err = p.Resources(5)
	want := "configuration " + sp.Key(5) + ": registers per thread and shared memory per thread block unknown: the sim backend cannot report them; " +
		"the results database holds no evaluation of it with this spec on this GPU; and the spec declares no Gtune.Simulation.Registers expression"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// With the compile cache, the binaries the provider compiles for their
// resources are kept for the run: a run after it over the same cache
// compiles nothing, each configuration compiled once in all.
func TestResourcesKeepTheirBinaries(t *testing.T) {
	s, sp := resourcesSpec(t, true)
	be := &countingSim{Sim: h100Sim(t)}
	c, err := compilecache.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	p := NewResourceProvider(context.Background(), &strings.Builder{}, be, s, sp, nil)
	p.UseCompileCache(c)
	for i := range sp.Len() {
		p.Resources(i)
	}
	if n := be.compiles.Load(); n != 112 {
		t.Fatalf("the provider compiled %d, want 112", n)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum, err := Run(context.Background(), Config{Subject: FromSpec(s), Space: sp, Backend: be, DB: db, Objective: objective.FromSpec(s),
		Strategy: "brute_force", CompileWorkers: 2, CompileCache: c})
	if err != nil {
		t.Fatal(err)
	}
	// The run compiles nothing, its reference run included: it takes
	// its configuration's binary through the run's build layer, from the
	// cache the resource provider filled (once compiled by itself, a
	// 113th compilation).
	if n := be.compiles.Load(); n != 112 || sum.Compiled != 0 {
		t.Errorf("after the run: %d compiles in all (the run %d), want 112 (the run 0, its reference 0)", n, sum.Compiled)
	}
}

// ptxSim is the simulated GPU whose compiler also hands out PTX (as
// NVRTC does): one text per configuration key.
type ptxSim struct{ *sim.Sim }

func (p ptxSim) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	b, err := p.Sim.Compile(ctx, j)
	if err == nil {
		c := *b
		c.PTX = []byte("// PTX of " + j.Key + "\n")
		b = &c
	}
	return b, err
}

// A backend's PTX is kept with each configuration it compiled, and read
// back by configuration from the database (what gtune project --emulate
// reads); a configuration that failed to compile keeps none, and a run
// told DiscardPTX keeps none at all.
func TestPTXKeptWithEachConfiguration(t *testing.T) {
	s, sp := resourcesSpec(t, true)
	db, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := Run(context.Background(), Config{Subject: FromSpec(s), Space: sp, Backend: ptxSim{h100Sim(t)}, Objective: objective.FromSpec(s), Strategy: "brute_force", DB: db, CompileWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	kept, failed := 0, 0
	for _, e := range res.Evaluations {
		p, err := db.PTXOf(s.Hash, e.Key)
		if e.Status == backend.StatusCompileFailed {
			failed++
			if err == nil {
				t.Errorf("%s failed to compile but kept PTX", e.Key)
			}
			continue
		}
		if err != nil || string(p.PTX) != "// PTX of "+e.Key+"\n" || p.Kernel != s.KernelName {
			t.Errorf("%s: PTXOf = %+v, %v", e.Key, p, err)
			continue
		}
		kept++
	}
	if kept != 109 || failed != 3 {
		t.Errorf("%d configurations kept PTX, %d failed to compile; want 109, 3", kept, failed)
	}
	// DiscardPTX (gtune tune --keep-ptx=false) keeps none.
	db2, err := store.Open(filepath.Join(t.TempDir(), "r2.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, err := Run(context.Background(), Config{Subject: FromSpec(s), Space: sp, Backend: ptxSim{h100Sim(t)}, Objective: objective.FromSpec(s), Strategy: "brute_force", DB: db2, CompileWorkers: 2, DiscardPTX: true}); err != nil {
		t.Fatal(err)
	}
	if n, texts, err := db2.PTXCount(s.Hash); err != nil || n != 0 || texts != 0 {
		t.Errorf("DiscardPTX: %d evaluations kept %d texts, %v; want none", n, texts, err)
	}
}

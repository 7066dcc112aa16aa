package tuner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/spec"
)

// TestMain lets the test binary serve as the CUDA worker program, as
// main does (cuda.Open re-executes os.Executable() with cuda.WorkerArg).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == cuda.WorkerArg {
		cuda.WorkerMain()
	}
	os.Exit(m.Run())
}

// On a real GPU, the matmul example without its Registers declaration
// gets every configuration's registers and static shared memory from
// compilation: the static shared memory the compiler reports equals the
// spec's SharedMemory expression (the kernel's two tiles), and the
// registers (logged) are what the worker reads with cuFuncGetAttribute.
// Runs only with GTUNE_CUDA_TEST=1.
func TestIntegrationResourcesFromCompilation(t *testing.T) {
	if os.Getenv("GTUNE_CUDA_TEST") != "1" {
		t.Skip("set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU")
	}
	b, err := os.ReadFile("../examples/matmul/spec.json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	delete(d["Gtune"].(map[string]any)["Simulation"].(map[string]any), "Registers")
	abs, err := filepath.Abs("../examples/matmul/kernel.cu")
	if err != nil {
		t.Fatal(err)
	}
	d["KernelSpecification"].(map[string]any)["KernelFile"] = abs
	out, _ := json.Marshal(d)
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	be, err := cuda.Open(ctx, 0, cuda.Options{Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if declaredResources(be, s, sp) != nil {
		t.Fatal("declarations left in the spec")
	}
	p := NewResourceProvider(ctx, os.Stderr, be, s, sp, nil)
	for i := range sp.Len() {
		regs, smem, err := p.Resources(i)
		if err != nil {
			t.Fatal(err)
		}
		j := job(t, s, sp, i)
		t.Logf("configuration %-12s registers %3d  shared memory %5d B", j.Key, regs, smem)
		if regs <= 0 || regs > 255 || smem != j.Work.SharedMemory+j.DynamicSharedBytes {
			t.Errorf("configuration %s: %d registers, %d bytes; want the declared %d bytes", j.Key, regs, smem, j.Work.SharedMemory+j.DynamicSharedBytes)
		}
		if u := p.units[p.unitOf[i]]; u.from != "backend" {
			t.Errorf("configuration %s: from %q", j.Key, u.from)
		}
	}
}

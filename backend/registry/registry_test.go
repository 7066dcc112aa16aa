package registry

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

func loadSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s, err := spec.Load(filepath.Join("..", "..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each name resolves to what it can do; auto to the simulated GPU where
// no CUDA driver loads (this machine, CI), saying why.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name     string
		modelled bool
	}{{"cuda", false}, {"sim", true}, {"model", true}} {
		k, err := Resolve(c.name)
		if err != nil || k.Name != c.name || k.Modelled != c.modelled || k.Fallback {
			t.Errorf("%s: %+v, %v", c.name, k, err)
		}
	}
	k, err := Resolve("auto")
	if cuda.Available() != nil && (err != nil || k.Name != "sim" || !k.Fallback || k.Why == nil) {
		t.Errorf("auto without a driver: %+v, %v", k, err)
	}
	if _, err := Resolve("opencl"); !badinput.Is(err) || !strings.Contains(err.Error(), `unknown backend "opencl" (valid: auto, cuda, sim, model)`) {
		t.Errorf("opencl: %v", err)
	}
	if _, err := (Kind{Name: "sim", Modelled: true}).Count(); !badinput.Is(err) {
		t.Errorf("counting simulated GPUs: %v", err)
	}
}

// A simulated GPU opens from the spec's Simulation section with the
// options given; bad requests are input errors naming what is wrong.
func TestOpenSimulated(t *testing.T) {
	s := loadSpec(t)
	be, err := Open(context.Background(), Kind{Name: "sim", Modelled: true}, Options{Spec: s, Index: 2, SimDevice: "a100_80gb", AllowSettings: true})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if d := be.Device(); !strings.HasSuffix(d.UUID, "-2") || !strings.Contains(d.Name, "A100") || !backend.TraitsOf(be).Modelled {
		t.Errorf("opened %+v", d)
	}
	noSim := *s
	noSim.Simulation = nil
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Spec: s, Device: 1}, "--device 1: the simulated GPU is device 0"},
		{Options{Spec: s, SimDevice: "nope"}, "nope"},
		{Options{Spec: &noSim}, "has no Gtune.Simulation section"},
	} {
		if _, _, err := SimOptions(c.o); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	var amd string
	for _, d := range device.All() {
		if !d.IsCUDA() {
			amd = d.ID
			break
		}
	}
	if _, err := SimulatedGPU(amd, nil); amd != "" && (!badinput.Is(err) || !strings.Contains(err.Error(), "is not a CUDA GPU")) {
		t.Errorf("%s: %v", amd, err)
	}
}

// A projection without a measured profile projects over the GPU's
// specifications; compile processes are not started for a GPU whose
// compilations take no time.
func TestOpenModel(t *testing.T) {
	s := loadSpec(t)
	k, _ := Resolve("model")
	be, err := Open(context.Background(), k, Options{Spec: s, ProfileDB: filepath.Join(t.TempDir(), "absent.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	d, _ := SimulatedGPU("", s)
	ps, err := Profiles("", []*device.Description{d})
	if err != nil || len(ps) != 1 || ps[0].Device != model.SpecProfile(d).Device {
		t.Fatalf("profiles %+v, %v", ps, err)
	}
	if !strings.HasPrefix(be.Device().UUID, "MODEL-") {
		t.Errorf("a projection: %+v", be.Device())
	}
	same, err := WithCompileProcesses(be, -1, 0)
	if err != nil || same != be {
		t.Errorf("compile processes for a simulated GPU: %v, %v", same, err)
	}
}

// A GPU measured in the database gets its measured profile; one of its
// architecture that was not, a profile derived from it; one of another
// architecture, a profile derived across architectures; a simulated
// probe derives nothing.
func TestProfilesDerived(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join("..", "..", "model", "testdata", "profiles", "h100_sxm-e9a9f68b-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := json.Marshal(model.Profile{Device: "rtx_a4000", Source: "simulated", FP32GFLOPS: 1})
	for _, p := range []*store.Profile{{Device: "h100_sxm", Source: "measured", JSON: js}, {Device: "rtx_a4000", Source: "simulated", JSON: sim}} {
		if err := db.AddProfile(p); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var devs []*device.Description
	for _, id := range []string{"h100_sxm", "h200", "a100_40gb"} {
		d, err := device.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	ps, err := Profiles(path, devs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"measured", model.SourceDerivedFamily, model.SourceDerivedOther}
	for i, p := range ps {
		if p.Source != want[i] || (i > 0 && (len(p.DerivedFrom) != 1 || !strings.HasPrefix(p.DerivedFrom[0], "h100_sxm GPU-e9a9f68b"))) {
			t.Errorf("%s: source %q from %q, want %q from the H100", devs[i].ID, p.Source, p.DerivedFrom, want[i])
		}
	}
	if ps[1].Memory[0].ReadGBs < 3000 {
		t.Errorf("h200 loads at one block per SM %.0f GB/s: the H100's measured curve was not scaled", ps[1].Memory[0].ReadGBs)
	}
}

package projection

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/cache"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/model"
	"github.com/gtune/gtune/spec"
)

func vectorAdd(t *testing.T) *spec.Spec {
	t.Helper()
	s, err := spec.Load(filepath.Join("..", "examples", "vector_add", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A configuration projects onto each GPU as model.Project gives it over
// the GPU's profile, ranked fastest first; anchored on a measured time,
// the anchor's GPU projects to that time exactly; the projections
// round-trip through a Kernel Tuner cache.
func TestProject(t *testing.T) {
	s := vectorAdd(t)
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := Devices("h100_sxm, a100_80gb")
	if err != nil {
		t.Fatal(err)
	}
	profiles := []model.Profile{model.SpecProfile(devs[0]), model.SpecProfile(devs[1])}
	i := 10
	pc, ok, err := Project(s, sp, i, devs, profiles, Work{})
	if err != nil || !ok || len(pc.Projections) != 2 || pc.Key != sp.Key(i) {
		t.Fatalf("%+v, %v, %v", pc, ok, err)
	}
	j, _ := s.Job(sp.Values(i))
	for _, p := range pc.Projections {
		k := 0
		if p.Device != devs[0].ID {
			k = 1
		}
		want, err := model.Project(devs[k], profiles[k], j.Work, j.Geometry())
		if err != nil || want.TimeMs != p.TimeMs {
			t.Errorf("%s: %v ms, model.Project %v ms (%v)", p.Device, p.TimeMs, want.TimeMs, err)
		}
	}
	if pc.Projections[0].TimeMs > pc.Projections[1].TimeMs {
		t.Errorf("not fastest first: %+v", pc.Projections)
	}
	anchor := &MeasuredRun{Device: devs[0], Profile: profiles[0], Times: map[string]float64{pc.Key: 3.5}}
	an, ok, err := Project(s, sp, i, devs, profiles, Work{Anchor: anchor})
	if err != nil || !ok {
		t.Fatal(err)
	}
	for _, p := range an.Projections {
		if p.Device == devs[0].ID && (math.Abs(p.TimeMs-3.5) > 1e-9 || p.From != devs[0].ID || p.MeasuredMs != 3.5) {
			t.Errorf("anchored on its own GPU: %+v", p)
		}
	}
	path := filepath.Join(t.TempDir(), "a100.json")
	if err := WriteCache(path, s, sp, []int{i}, []Configuration{pc}, devs[1]); err != nil {
		t.Fatal(err)
	}
	c, err := cache.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var a100 float64
	for _, p := range pc.Projections {
		if p.Device == devs[1].ID {
			a100 = p.TimeMs
		}
	}
	if b := c.Best(); b == nil || b.Time != a100 || !strings.Contains(c.DeviceName, "projected by gtune") {
		t.Errorf("cache: %+v, best %+v, want %v ms", c.DeviceName, b, a100)
	}
}

// Bad device lists are the user's input.
func TestDevices(t *testing.T) {
	all, err := Devices("")
	if err != nil || len(all) == 0 {
		t.Fatalf("%d, %v", len(all), err)
	}
	for _, d := range all {
		if !d.IsCUDA() || d.ComputeMajor < 5 {
			t.Errorf("%s in the default list", d.ID)
		}
	}
	var notCUDA string
	for _, d := range device.All() {
		if !d.IsCUDA() {
			notCUDA = d.ID
			break
		}
	}
	for _, list := range []string{"nope", "h100_sxm,h100_sxm", notCUDA} {
		if list == "" {
			continue
		}
		if _, err := Devices(list); !badinput.Is(err) {
			t.Errorf("%q: %v", list, err)
		}
	}
}

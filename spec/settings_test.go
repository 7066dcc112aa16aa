package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
)

// settingsSpec writes a spec whose space has the reserved GPU-setting
// parameters besides block_size_x, with the given values of nvml_gr_clock.
func settingsSpec(t *testing.T, clocks string) *Spec {
	t.Helper()
	dir := t.TempDir()
	js := `{
  "ConfigurationSpace": {"TuningParameters": [
    {"Name": "block_size_x", "Type": "int", "Values": "[128, 256]"},
    {"Name": "nvml_gr_clock", "Values": "` + clocks + `"},
    {"Name": "nvml_mem_clock", "Type": "int", "Values": "[2619, 1593]"},
    {"Name": "nvml_pwr_limit", "Values": "[700, 450.5]"}]},
  "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu",
    "GlobalSizeType": "CUDA", "LocalSize": {"X": "block_size_x"}, "GlobalSize": {"X": "1024 // block_size_x"},
    "Arguments": [{"Name": "a", "Type": "float", "MemoryType": "Vector", "Size": 1024}]}
}`
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte("extern \"C\" __global__ void k(float *a) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(filepath.Join(dir, "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReservedParametersAreSettingsNotDefines(t *testing.T) {
	s := settingsSpec(t, "[1980, 1410]")
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	if sp.Len() != 16 {
		t.Fatalf("space has %d configurations, want 16", sp.Len())
	}
	i, ok := sp.Lookup("256,1410,1593,450.5")
	if !ok {
		t.Fatal("configuration 256,1410,1593,450.5 not in the space")
	}
	j, err := s.Job(sp.Values(i))
	if err != nil {
		t.Fatal(err)
	}
	if defineOf(j, "block_size_x") != "256" || defineOf(j, "kernel_tuner") != "1" {
		t.Errorf("Defines %+v, want block_size_x=256 and kernel_tuner=1", j.Defines)
	}
	for _, d := range j.Defines {
		if isSetting(d.Name) {
			t.Errorf("GPU setting %s passed to the compiler", d.Name)
		}
	}
	if set, err := s.Settings(sp.Values(i)); err != nil || set == nil || *set != (backend.Settings{CoreClockMHz: 1410, MemClockMHz: 1593, PowerLimitW: 450.5}) {
		t.Errorf("Settings %+v, %v", set, err)
	}
	if j.Key != "256,1410,1593,450.5" || j.Block != [3]int{256, 1, 1} || j.Grid != [3]int{4, 1, 1} {
		t.Errorf("job %+v", j)
	}
	// Without reserved parameters there are no Settings.
	vadd, err := Load("testdata/vadd.json")
	if err != nil {
		t.Fatal(err)
	}
	vsp, err := vadd.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	vj, err := vadd.Job(vsp.Values(0))
	if err != nil {
		t.Fatal(err)
	}
	if set, err := vadd.Settings(vsp.Values(0)); set != nil || err != nil {
		t.Errorf("vadd job: settings %+v, %v", set, err)
	}
	for _, p := range vadd.Params {
		if defineOf(vj, p.Name) == "" {
			t.Errorf("vadd job: parameter %s not defined (%v)", p.Name, vj.Defines)
		}
	}
}

func TestReservedParameterBadValues(t *testing.T) {
	for _, c := range []struct{ clocks, want string }{
		{"[1410.5]", "nvml_gr_clock is 1410.5; a clock must be a positive whole number of MHz"},
		{"[0]", "nvml_gr_clock is 0"},
		{"['fast']", "nvml_gr_clock is 'fast'"},
	} {
		s := settingsSpec(t, c.clocks)
		cfg := []expr.Value{expr.Int(128), s.Params[1].Values[0], expr.Int(2619), expr.Int(700)}
		_, err := s.Plan(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("clocks %s: error %v, want %q", c.clocks, err, c.want)
		}
	}
}

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A NaN or infinite number anywhere in a spec (YAML writes .nan, .inf) is
// refused naming its field; the measurement section's are bounded by
// CheckMeasurement, in the words a workload gets too.
func TestNonFiniteNumbers(t *testing.T) {
	dir := filepath.Join("..", "examples", "vector_add")
	base, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kernel, _ := os.ReadFile(filepath.Join(dir, "kernel.cu"))
	for _, c := range []struct{ old, new, want string }{
		{"Device: h100_sxm", "Device: h100_sxm\n    Noise: .nan", "Gtune.Simulation.Noise: NaN is not a finite number"},
		{`"n": 268435456`, `"n": .inf`, "Gtune.Constants.n: +Inf is not a finite number"},
		{"ValidationThreshold: 1.0e-6", "ValidationThreshold: -.inf", "Gtune.Reference.ValidationThreshold: -Inf is not a finite number"},
		{"EnergyWindowSeconds: 1.0", "EnergyWindowSeconds: .nan", "Gtune.Measurement.EnergyWindowSeconds: NaN: must be between 0"},
		// Straggling launches: a chance, and a slow-down.
		{"Device: h100_sxm", "Device: h100_sxm\n    Stragglers: 1.5", "Gtune.Simulation.Stragglers: must be a chance in [0, 1), got 1.5"},
		{"Device: h100_sxm", "Device: h100_sxm\n    Stragglers: 0.1\n    StragglerFactor: 0.5", "Gtune.Simulation.StragglerFactor: must be a slow-down above 1 and at most 100, got 0.5"},
		// Physical ranges: Noise 10 gave 3.7·10^16 W; 1e300 a time ranked best.
		{"Device: h100_sxm", "Device: h100_sxm\n    Noise: 10", "Gtune.Simulation.Noise: must be a relative standard deviation between 0 and 0.5 (50 %), got 10"},
		{"Device: h100_sxm", "Device: h100_sxm\n    Noise: 1e300", "Gtune.Simulation.Noise: must be a relative standard deviation between 0 and 0.5"},
		{"Device: h100_sxm", "Device: h100_sxm\n    Stragglers: 0.1\n    StragglerFactor: 1e300", "Gtune.Simulation.StragglerFactor: must be a slow-down above 1 and at most 100, got 1e+300"},
	} {
		if !strings.Contains(string(base), c.old) {
			t.Fatalf("spec.yaml has no %q", c.old)
		}
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "kernel.cu"), kernel, 0o644)
		p := filepath.Join(d, "spec.yaml")
		os.WriteFile(p, []byte(strings.Replace(string(base), c.old, c.new, 1)), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.new, err, c.want)
		}
	}
}

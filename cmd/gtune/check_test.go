package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend/cuda"
)

// check passes a good spec (saying what it could not check here), lists
// every problem of a bad one, and exits 2 when any file has one.
func TestCheck(t *testing.T) {
	good := writeSpec(t, "", "")
	bad := writeSpec(t, `"TuningParameters"`, `"Colour": 1, "TunningParameters": [], "TuningParameters"`)
	code, out, errs := gtune(t, "check", good)
	if code != 0 || !strings.HasPrefix(out, good+": ok, 112 valid configurations\n") ||
		!strings.Contains(out, "  checked: the search space and every configuration's grid, thread block, shared memory and simulated work (112)\n") ||
		!strings.Contains(out, "  checked: argument sizes against the NVIDIA H100 80GB HBM3's memory\n") {
		t.Fatalf("good: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = gtune(t, "check", good, bad, "--json")
	var doc struct {
		OK    bool
		Files []struct {
			Path           string
			Problems       []string
			Configurations int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{
		bad + ": ConfigurationSpace.Colour: unknown key",
		bad + ": ConfigurationSpace.TunningParameters: unknown key (did you mean TuningParameters?)",
	}
	if code != 2 || doc.OK || len(doc.Files) != 2 || len(doc.Files[0].Problems) != 0 || doc.Files[0].Configurations != 112 ||
		strings.Join(doc.Files[1].Problems, "\n") != strings.Join(want, "\n") || !strings.Contains(errs, "check: 1 of 2 file(s) have problems") {
		t.Fatalf("exit %d, %+v, %s", code, doc, errs)
	}
	// The arguments against the device's memory: 2^28 floats three times
	// is 3 GiB, more than a 2 GiB GPU.
	code, out, _ = gtune(t, "check", good, "--sim-device", "gtx680")
	if code != 2 || !strings.Contains(out, "KernelSpecification.Arguments: the arguments take 3.00 GiB, more than the ") {
		t.Fatalf("memory: exit %d\n%s", code, out)
	}
}

// A quoted include that is not there is a problem, naming the line; one
// in angle brackets is looked for in the CUDA toolkit, or said to be
// unchecked where there is none (CI).
func TestCheckIncludes(t *testing.T) {
	spec := writeSpec(t, "", "")
	k := filepath.Join(filepath.Dir(spec), "kernel.cu")
	src, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(spec), "here.h"), []byte("// here\n"), 0o644)
	os.WriteFile(k, append([]byte("#include \"here.h\"\n#include <cuda_fp16.h>\n#include \"missing.h\"\n"), src...), 0o644)
	code, out, _ := gtune(t, "check", spec)
	if code != 2 || !strings.Contains(out, "  error: "+k+":3: #include \"missing.h\": no such file in ") || strings.Contains(out, "here.h") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if len(cuda.ToolkitIncludeDirs()) == 0 && !strings.Contains(out, "  not checked: headers <cuda_fp16.h>: no CUDA toolkit here\n") {
		t.Fatalf("angle include:\n%s", out)
	}
}

// tune refuses on the simulator what check refuses: arguments larger than
// the simulated GPU's memory, before anything is written.
func TestTuneArgumentsFit(t *testing.T) {
	spec := writeSpec(t, "", "")
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, errs := gtune(t, "tune", spec, "--backend", "sim", "--sim-device", "gtx680", "--db", db)
	oneLine(t, "tune on a 2 GiB GPU", code, errs, "KernelSpecification.Arguments: the arguments take 3.00 GiB, more than the ", db)
}

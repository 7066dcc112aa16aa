package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/device"
)

// dgemmDeclared writes examples/dgemm/spec.json with its parameters and
// restrictions replaced by Gtune.DeclaredSpace "dgemm", keeping only the
// condition that the tiles divide n, after edit.
func dgemmDeclared(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	ex := filepath.Join("..", "examples", "dgemm")
	raw, err := os.ReadFile(filepath.Join(ex, "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	cs := m["ConfigurationSpace"].(map[string]any)
	delete(cs, "TuningParameters")
	cs["Conditions"] = []any{map[string]any{"Expression": "n % blk_m == 0 and n % blk_n == 0 and n % blk_k == 0", "Parameters": []any{"blk_m", "blk_n", "blk_k"}}}
	g := m["Gtune"].(map[string]any)
	g["DeclaredSpace"] = "dgemm"
	// The H100's thread-block dimensions, which the example's own lists
	// of dim_m and dim_n need not say.
	g["Constants"].(map[string]any)["max_threads_dim_0"] = 1024
	g["Constants"].(map[string]any)["max_threads_dim_1"] = 1024
	ks := m["KernelSpecification"].(map[string]any)
	abs, err := filepath.Abs(filepath.Join(ex, ks["KernelFile"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	ks["KernelFile"] = abs
	if edit != nil {
		edit(m)
	}
	out, _ := json.Marshal(m)
	p := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A spec that declares BEAST's DGEMM space, its device limits the
// example's constants (the H100's), and keeps only n's divisibility,
// tunes exactly the 889 configurations examples/dgemm writes out by hand,
// in the same parameter order.
func TestDeclaredSpaceIsTheExample(t *testing.T) {
	decl, err := Load(dgemmDeclared(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Load(filepath.Join("..", "examples", "dgemm", "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := decl.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	es, err := ex.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	var dn, en []string
	for i := range decl.Params {
		dn, en = append(dn, decl.Params[i].Name), append(en, ex.Params[i].Name)
	}
	if strings.Join(dn, ",") != strings.Join(en, ",") || ds.Len() != 889 || es.Len() != 889 {
		t.Fatalf("declared %v: %d configurations; example %v: %d; want the same parameters, 889 each", dn, ds.Len(), en, es.Len())
	}
	for i := range es.Len() {
		if _, ok := ds.Lookup(es.Key(i)); !ok {
			t.Errorf("%s: in the example, not in the declared space", es.Key(i))
		}
	}
}

// A declared space's mistakes name Gtune.DeclaredSpace: an unknown
// name, parameters given beside it, a device limit the constants lack.
func TestDeclaredSpaceErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(m map[string]any)
		want string
	}{
		{func(m map[string]any) { m["Gtune"].(map[string]any)["DeclaredSpace"] = "sgemm" }, `unknown declared space "sgemm" (known: dgemm)`},
		{func(m map[string]any) {
			m["ConfigurationSpace"].(map[string]any)["TuningParameters"] = []any{map[string]any{"Name": "x", "Values": "[1]"}}
		}, "leave ConfigurationSpace.TuningParameters out"},
		{func(m map[string]any) {
			delete(m["Gtune"].(map[string]any)["Constants"].(map[string]any), "max_threads_per_block")
		}, `reads "max_threads_per_block"`},
	} {
		_, err := Load(dgemmDeclared(t, c.edit))
		if err == nil || !strings.Contains(err.Error(), "Gtune.DeclaredSpace") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want Gtune.DeclaredSpace and %q", err, c.want)
		}
	}
}

// With LoadOptions.Device a declared space takes the device limits of the
// GPU tuned instead of the spec's Constants: the H100's give the same 889
// configurations as the Constants (which are the H100's), the K20c's (48
// KiB of shared memory a block) 693 — beast's own K20c space, 1,693, less
// the tiles that do not divide 4096 — every one within its limits.
func TestDeclaredSpaceOfTheGPUTuned(t *testing.T) {
	p := dgemmDeclared(t, nil)
	count := func(id string) (*Spec, int) {
		t.Helper()
		d, err := device.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		s, err := LoadWith(p, LoadOptions{Device: d})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		return s, sp.Len()
	}
	if _, n := count("h100_sxm"); n != 889 {
		t.Errorf("H100: %d configurations, want 889", n)
	}
	s, n := count("k20c")
	if n != 693 {
		t.Errorf("K20c: %d configurations, want 693", n)
	}
	sp, _ := s.BuildSpace()
	for i := range sp.Len() {
		v := map[string]int64{}
		for j, p := range s.Params {
			v[p.Name], _ = sp.Values(i)[j].Int()
		}
		if shared := 8 * (v["blk_m"]*v["blk_k"] + v["blk_k"]*v["blk_n"]); shared > 48<<10 || v["dim_m"]*v["dim_n"] > 1024 {
			t.Fatalf("%s: %d bytes of shared memory, %d threads", sp.Key(i), shared, v["dim_m"]*v["dim_n"])
		}
	}
	if s.DeclaredSpace() != "dgemm" {
		t.Errorf("DeclaredSpace %q", s.DeclaredSpace())
	}
}

package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/spec"
)

// The spec T1 writes has exactly the configurations the cache records: for
// the benchmark_hub caches, the same configurations as the benchmark_hub
// spec's restrictions give.
func TestT1Space(t *testing.T) {
	for _, c := range []struct {
		cache, spec string
		raw         float64
		n           int
	}{
		{"convolution_milo_A100.json.gz", "convolution_milo.T1.json", 10240, 4362},
		{"dedispersion_milo_A100.json.gz", "dedispersion_milo.T1.json", 22272, 11130},
	} {
		k := load(t, hub(t, c.cache))
		b, err := k.T1()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "replay.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := spec.LoadWith(p, spec.LoadOptions{NoSource: true})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := s.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		if sp.RawCount() != c.raw || sp.Len() != c.n || s.KernelName != k.KernelName {
			t.Fatalf("%s: raw %.0f valid %d kernel %q; want %.0f %d %q", c.cache, sp.RawCount(), sp.Len(), s.KernelName, c.raw, c.n, k.KernelName)
		}
		for i := 0; i < sp.Len(); i++ {
			if _, ok := k.Entries[sp.Key(i)]; !ok {
				t.Fatalf("%s: configuration %s of the T1 space is not in the cache", c.cache, sp.Key(i))
			}
		}
		hs, err := spec.LoadWith(filepath.Join(datasets(t), "benchmark_hub", "specs", c.spec), spec.LoadOptions{NoSource: true})
		if err != nil {
			t.Fatal(err)
		}
		hsp, err := hs.BuildSpace()
		if err != nil {
			t.Fatal(err)
		}
		if hsp.Len() != sp.Len() {
			t.Fatalf("%s: hub spec %d configurations, T1 %d", c.cache, hsp.Len(), sp.Len())
		}
		for i := 0; i < hsp.Len(); i++ {
			if _, ok := sp.Lookup(hsp.Key(i)); !ok {
				t.Fatalf("%s: %s of the hub spec is not in the T1 space", c.cache, hsp.Key(i))
			}
		}
	}
}

// Bool and float values keep their Python keys; a cache recording every
// raw configuration needs no restriction.
func TestT1Small(t *testing.T) {
	src := `{"kernel_name": "k", "tune_params_keys": ["a", "b"], "tune_params": {"a": [1, 2], "b": [0.5, true]}, "cache": {
"1,0.5": {"a": 1, "b": 0.5, "time": 1.0},
"2,0.5": {"a": 2, "b": 0.5, "time": 2.0},
"1,True": {"a": 1, "b": true, "time": 3.0}}}`
	k, err := Read(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.T1()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "k.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.LoadWith(p, spec.LoadOptions{NoSource: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < sp.Len(); i++ {
		keys = append(keys, sp.Key(i))
	}
	if strings.Join(keys, " ") != "1,0.5 1,True 2,0.5" {
		t.Errorf("keys %v", keys)
	}
	k.Entries["2,True"] = &Entry{Key: "2,True", Params: []any{2, true}}
	b, err = k.T1()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Expression") {
		t.Errorf("a complete cache has a restriction:\n%s", b)
	}
}

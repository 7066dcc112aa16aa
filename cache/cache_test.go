package cache

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"

	"github.com/gtune/gtune/internal/shared"
)

// datasets is ../shared/datasets beside the repository (CI clones the
// repository with ../shared beside it); tests that need it skip without it.
func datasets(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "datasets")
	shared.Need(t, filepath.Join(dir, "benchmark_hub"))
	return dir
}

func hub(t testing.TB, name string) string {
	return filepath.Join(datasets(t), "benchmark_hub", name)
}

func load(t testing.TB, path string) *Cache {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The entry counts, statuses and optima of every shared cache, as the
// files hold them (counted independently with Python's json module).
func TestLoadSharedCaches(t *testing.T) {
	t.Parallel()
	dir := datasets(t)
	conv := []string{"block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_padding", "use_shmem", "use_cmem", "filter_height", "filter_width"}
	dedisp := []string{"block_size_x", "block_size_y", "block_size_z", "tile_size_x", "tile_size_y", "tile_stride_x", "tile_stride_y", "loop_unroll_factor_channel"}
	for _, c := range []struct {
		file, format, device, kernel string
		params                       []string
		entries                      int
		counts                       map[backend.Status]int
		bestKey                      string
		bestTime                     float64
	}{
		{"benchmark_hub/convolution_milo_A100.json.gz", "kerneltuner", "NVIDIA A100-PCIE-40GB", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 4201, "runtime_failed": 155, "compile_failed": 6}, "32,4,1,3,1,0,1,1,15,15", 0.5536000076681376},
		{"benchmark_hub/convolution_milo_A100_T4.json.gz", "t4", "", "", conv, 4362,
			map[backend.Status]int{"valid": 4201, "runtime_failed": 155, "compile_failed": 6}, "32,4,1,3,1,0,1,1,15,15", 0.5536000076681376},
		{"benchmark_hub/convolution_milo_A4000.json.gz", "kerneltuner", "NVIDIA RTX A4000", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 4201, "runtime_failed": 155, "compile_failed": 6}, "256,1,2,4,0,0,0,1,15,15", 1.021171996369958},
		{"benchmark_hub/convolution_milo_A6000.json.gz", "kerneltuner", "NVIDIA RTX A6000", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 3889, "runtime_failed": 221, "compile_failed": 252}, "128,1,2,4,0,0,0,1,15,15", 0.6030377962291835},
		{"benchmark_hub/convolution_milo_MI250X.json.gz", "kerneltuner", "", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 4362}, "64,1,2,4,1,0,0,1,15,15", 0.6587962452322245},
		{"benchmark_hub/convolution_milo_W6600.json.gz", "kerneltuner", "AMD Radeon PRO W6600", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 4362}, "128,1,1,4,1,0,0,1,15,15", 1.7276193872094154},
		{"benchmark_hub/convolution_milo_W7800.json.gz", "kerneltuner", "AMD Radeon PRO W7800", "convolution_kernel", conv, 4362,
			map[backend.Status]int{"valid": 4246, "compile_failed": 116}, "32,2,1,4,0,0,1,1,15,15", 0.8161421902477741},
		{"benchmark_hub/dedispersion_milo_A100.json.gz", "kerneltuner", "NVIDIA A100-PCIE-40GB", "dedispersion_kernel", dedisp, 11130,
			map[backend.Status]int{"valid": 11130}, "4,64,1,1,3,0,1,0", 68.1165759563446},
		{"benchmark_hub/dedispersion_milo_MI250X.json.gz", "kerneltuner", "", "dedispersion_kernel", dedisp, 11130,
			map[backend.Status]int{"valid": 11130}, "8,32,1,1,1,0,0,0", 49.5724800825119},
		{"kernel_tuner_energy/synthetic_fp32_cache_NVIDIA_A100-PCIE-40GB.json", "kerneltuner", "NVIDIA A100-PCIE-40GB", "fp32_kernel",
			[]string{"block_size_x", "nr_outer", "nr_inner", "nvml_gr_clock"}, 10, map[backend.Status]int{"valid": 10}, "1024,64,1024,1410", 196.2396667480469},
		{"kernel_tuner_energy/synthetic_fp32_cache_NVIDIA_RTX_A4000.json", "kerneltuner", "NVIDIA RTX A4000", "fp32_kernel",
			[]string{"block_size_x", "nr_outer", "nr_inner", "nvml_gr_clock"}, 10, map[backend.Status]int{"valid": 10}, "1024,64,1024,1905", 76.95706253051758},
		{"kernel_tuner_energy/test_cache_time_energy.json", "kerneltuner", "NVIDIA RTX 4000 Ada Generation", "vector_add",
			[]string{"block_size_x", "nvml_gr_clock"}, 15, map[backend.Status]int{"valid": 15}, "832,1080", 2.9767550006508827},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			k := load(t, filepath.Join(dir, c.file))
			if k.Format != c.format || k.DeviceName != c.device || k.KernelName != c.kernel || k.Truncated {
				t.Errorf("format %q device %q kernel %q truncated %v; want %q %q %q false", k.Format, k.DeviceName, k.KernelName, k.Truncated, c.format, c.device, c.kernel)
			}
			if !reflect.DeepEqual(k.ParamNames, c.params) {
				t.Errorf("parameters %v, want %v", k.ParamNames, c.params)
			}
			if len(k.Entries) != c.entries {
				t.Errorf("%d entries, want %d", len(k.Entries), c.entries)
			}
			if got := k.Counts(); !reflect.DeepEqual(got, c.counts) {
				t.Errorf("statuses %v, want %v", got, c.counts)
			}
			b := k.Best()
			if b == nil || b.Key != c.bestKey || b.Time != c.bestTime {
				t.Fatalf("best %+v, want %s at %v ms", b, c.bestKey, c.bestTime)
			}
			if got := KeyOf(b.Params); got != b.Key {
				t.Errorf("key of the best's parameters %q, want %q", got, b.Key)
			}
		})
	}
}

// Values of single entries, read as the file writes them.
func TestEntryFields(t *testing.T) {
	c := load(t, hub(t, "convolution_milo_A100.json.gz"))
	e := c.Entries["16,1,1,1,0,0,0,1,15,15"]
	if e == nil {
		t.Fatal("entry 16,1,1,1,0,0,0,1,15,15 missing")
	}
	if e.Time != 3.8753279224038124 || len(e.Times) != 32 || e.Times[0] != 3.976191997528076 ||
		e.CompileMs != 918.5990339610726 || e.BenchmarkMs != 126.3829180970788 || e.FrameworkMs != 105.24242906831205 ||
		e.VerificationMs != 0 || e.StrategyMs != 0 || e.Extra["GFLOP/s"] != 1948.1569950129526 ||
		e.Timestamp != "2023-12-22 09:54:05.502007+00:00" || e.Error != "" || e.Status != backend.StatusValid {
		t.Errorf("entry %+v", e)
	}
	if !reflect.DeepEqual(e.Params, []any{16, 1, 1, 1, 0, 0, 0, 1, 15, 15}) {
		t.Errorf("params %#v", e.Params)
	}
	if !reflect.DeepEqual(c.ParamValues["block_size_y"], []any{1, 2, 4, 8, 16}) || c.Objective != "time" {
		t.Errorf("block_size_y values %v, objective %q", c.ParamValues["block_size_y"], c.Objective)
	}
	if !reflect.DeepEqual(c.ProblemSize, []any{4096, 4096}) {
		t.Errorf("problem size %#v", c.ProblemSize)
	}
	f := c.Entries["256,4,4,4,0,0,0,1,15,15"]
	if f == nil || f.Error != MarkerRuntimeFailed || f.Status != backend.StatusRuntimeFailed || !math.IsNaN(f.Time) ||
		f.CompileMs != 16378.931279992685 || f.Times != nil || f.Valid() {
		t.Errorf("failed entry %+v", f)
	}

	en := load(t, filepath.Join(datasets(t), "kernel_tuner_energy", "test_cache_time_energy.json"))
	e = en.Entries["128,1080"]
	if e == nil || e.Extra["ps_energy"] != 0.23700487666378292 || e.Extra["energy"] != 0.23700487666378292 ||
		e.Extra["temperature"] != 45 || e.Extra["core_freq"] != 1080 || e.Extra["GFLOPS/W"] != 0.3375457970575376 {
		t.Errorf("energy entry %+v", e)
	}
	if en.ProblemSize != 80000000 {
		t.Errorf("problem size %#v", en.ProblemSize)
	}
	sy := load(t, filepath.Join(datasets(t), "kernel_tuner_energy", "synthetic_fp32_cache_NVIDIA_RTX_A4000.json"))
	if e := sy.Entries["1024,64,1024,2100"]; e == nil || e.Extra["nvml_power"] != 139.161 || e.Timestamp != "" || sy.Objective != "" {
		t.Errorf("synthetic entry %+v, objective %q", e, sy.Objective)
	}
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if !sameFloat(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameExtra(a, b map[string]float64) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameFloat(v, w) {
			return false
		}
	}
	return true
}

// sameEntry compares entries field by field, NaN equal to NaN.
func sameEntry(a, b *Entry) bool {
	return a.Key == b.Key && reflect.DeepEqual(a.Params, b.Params) && sameFloat(a.Time, b.Time) &&
		sameFloats(a.Times, b.Times) && sameFloat(a.CompileMs, b.CompileMs) && sameFloat(a.BenchmarkMs, b.BenchmarkMs) &&
		sameFloat(a.FrameworkMs, b.FrameworkMs) && sameFloat(a.VerificationMs, b.VerificationMs) && sameFloat(a.StrategyMs, b.StrategyMs) &&
		a.Error == b.Error && a.Status == b.Status && sameExtra(a.Extra, b.Extra) && a.Timestamp == b.Timestamp &&
		reflect.DeepEqual(a.Other, b.Other)
}

// A cache cut in the middle of an entry (Kernel Tuner appends entries line
// by line) keeps exactly its complete entries; so does a cache left open
// after a complete entry (the trailing comma Kernel Tuner's read_cache
// repairs).
func TestTruncatedCache(t *testing.T) {
	path := hub(t, "convolution_milo_A100.json.gz")
	full := load(t, path)
	b := gunzip(t, path)
	start := bytes.Index(b, []byte("\"cache\": {\n"))
	if start < 0 {
		t.Fatal("no cache member")
	}
	lines := bytes.SplitAfter(b[start+len("\"cache\": {\n"):], []byte("\n"))
	const keep = 1000
	var prefix []byte
	prefix = append(prefix, b[:start+len("\"cache\": {\n")]...)
	for _, l := range lines[:keep] {
		prefix = append(prefix, l...)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"mid-entry.json", append(append([]byte{}, prefix...), lines[keep][:len(lines[keep])/2]...)},
		{"open.json", bytes.TrimRight(prefix, "\n")}, // ends with "},"
		{"mid-key.json", append(append([]byte{}, prefix...), `"256,4,4`...)},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		k := load(t, p)
		if !k.Truncated || len(k.Entries) != keep {
			t.Errorf("%s: truncated %v, %d entries; want true, %d", c.name, k.Truncated, len(k.Entries), keep)
		}
		for key, e := range k.Entries {
			if f := full.Entries[key]; f == nil || !sameEntry(e, f) {
				t.Fatalf("%s: entry %s differs from the full cache's", c.name, key)
			}
		}
	}
	// A file cut before its first entry is an error naming the file.
	p := filepath.Join(dir, "header.json")
	if err := os.WriteFile(p, b[:start/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "ends before its first cache entry") {
		t.Errorf("Load of a cut header: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, data, want string }{
		{"empty.json", "", "empty"},
		{"list.json", "[1, 2]", "not a JSON object"},
		{"other.json", `{"a": 1}`, "neither a Kernel Tuner cache"},
		{"noparams.json", `{"device_name": "x", "cache": {}}`, `no "tune_params"`},
		{"missing.json", `{"tune_params_keys": ["a", "b"], "tune_params": {"a": [1], "b": [2]}, "cache": {"1,2": {"a": 1, "time": 1.0}}}`, `"1,2" has no value for tunable parameter "b"`},
		{"t4.json", `{"results": [{"configuration": {"a": 1}, "times": {}, "invalidity": "melted", "correctness": 0}]}`, `unknown invalidity "melted"`},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v; want an error naming the file and saying %q", c.name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.json")); err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// Python's json writes NaN and Infinity as bare words; Kernel Tuner's
// read_cache reads them, and so does Load. Float and bool parameter values
// keep their kind (the key is their Python str()).
func TestPythonNumbers(t *testing.T) {
	src := `{
"device_name": "GPU",
"kernel_name": "k",
"problem_size": 100,
"tune_params_keys": ["a", "b", "c"],
"tune_params": {"a": [1.5, 2.0], "b": [true, false], "c": ["x", "NaN y"]},
"objective": "time",
"cache": {
"1.5,True,x": {"a": 1.5, "b": true, "c": "x", "time": 1.0, "times": [1.0, NaN], "compile_time": Infinity, "GFLOP/s": -Infinity, "note": "NaN here"},
"2.0,False,NaN y": {"a": 2.0, "b": false, "c": "NaN y", "time": "InvalidConfig", "compile_time": 0, "benchmark_time": 0},`
	c, err := Read(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Entries) != 2 {
		t.Fatalf("truncated %v, %d entries", c.Truncated, len(c.Entries))
	}
	e := c.Entries["1.5,True,x"]
	if e == nil || !reflect.DeepEqual(e.Params, []any{1.5, true, "x"}) || e.Time != 1 || len(e.Times) != 2 || !math.IsNaN(e.Times[1]) ||
		!math.IsInf(e.CompileMs, 1) || !math.IsInf(e.Extra["GFLOP/s"], -1) || e.Other["note"] != "NaN here" {
		t.Errorf("entry %+v", e)
	}
	f := c.Entries["2.0,False,NaN y"]
	if f == nil || f.Status != backend.StatusLaunchFailed || f.Error != MarkerInvalid || KeyOf(f.Params) != "2.0,False,NaN y" {
		t.Errorf("entry %+v", f)
	}
	// Written back and read again: the same cache, now closed.
	var out bytes.Buffer
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	d, err := Read(&out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if d.Truncated || len(d.Entries) != 2 || !sameEntry(d.Entries["1.5,True,x"], e) || !sameEntry(d.Entries["2.0,False,NaN y"], f) {
		t.Errorf("round trip: %+v", d.Entries)
	}
}

func sameCache(t *testing.T, a, b *Cache, what string) {
	t.Helper()
	if a.DeviceName != b.DeviceName || a.KernelName != b.KernelName || a.Objective != b.Objective ||
		!reflect.DeepEqual(a.ParamNames, b.ParamNames) || !reflect.DeepEqual(a.ParamValues, b.ParamValues) ||
		!reflect.DeepEqual(a.ProblemSize, b.ProblemSize) || len(a.Entries) != len(b.Entries) {
		t.Fatalf("%s: header or entry count differs: %d vs %d entries", what, len(a.Entries), len(b.Entries))
	}
	for k, e := range a.Entries {
		if f := b.Entries[k]; f == nil || !sameEntry(e, f) {
			t.Fatalf("%s: entry %s differs:\n%+v\n%+v", what, k, e, f)
		}
	}
}

// Write then Load gives the same cache, for every shared Kernel Tuner
// cache; WriteT4 then Load gives the same T4 file.
func TestWriteRoundTrip(t *testing.T) {
	t.Parallel()
	dir := datasets(t)
	files, _ := filepath.Glob(filepath.Join(dir, "benchmark_hub", "*.json.gz"))
	more, _ := filepath.Glob(filepath.Join(dir, "kernel_tuner_energy", "*.json"))
	if len(files) != 9 || len(more) != 3 {
		t.Fatalf("%d benchmark_hub files and %d energy caches, want 9 and 3", len(files), len(more))
	}
	for _, f := range append(files, more...) {
		c := load(t, f)
		var buf bytes.Buffer
		write := c.Write
		if c.Format == "t4" {
			write = c.WriteT4
		}
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		d, err := Read(&buf)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.Truncated || d.Format != c.Format {
			t.Errorf("%s: re-read format %s truncated %v", f, d.Format, d.Truncated)
		}
		sameCache(t, c, d, filepath.Base(f))
	}
}

// The benchmark_hub T4 file and the Kernel Tuner cache of the A100
// convolution record the same tuning run: they agree entry by entry on
// everything T4 keeps (T4 has no benchmark time, no GFLOP/s and no header).
func TestT4AgreesWithCache(t *testing.T) {
	t.Parallel()
	kt := load(t, hub(t, "convolution_milo_A100.json.gz"))
	t4 := load(t, hub(t, "convolution_milo_A100_T4.json.gz"))
	if len(kt.Entries) != len(t4.Entries) || !reflect.DeepEqual(kt.ParamNames, t4.ParamNames) || !reflect.DeepEqual(kt.ParamValues, t4.ParamValues) {
		t.Fatalf("%d vs %d entries, parameters %v vs %v", len(kt.Entries), len(t4.Entries), kt.ParamValues, t4.ParamValues)
	}
	for k, a := range kt.Entries {
		b := t4.Entries[k]
		if b == nil {
			t.Fatalf("T4 lacks %s", k)
		}
		if !reflect.DeepEqual(a.Params, b.Params) || !sameFloat(a.Time, b.Time) || !reflect.DeepEqual(a.Times, b.Times) ||
			a.CompileMs != b.CompileMs || a.FrameworkMs != b.FrameworkMs || a.StrategyMs != b.StrategyMs ||
			a.VerificationMs != b.VerificationMs || a.Error != b.Error || a.Status != b.Status || a.Timestamp != b.Timestamp {
			t.Fatalf("entry %s differs:\n%+v\n%+v", k, a, b)
		}
		if !math.IsNaN(b.BenchmarkMs) || b.Extra != nil {
			t.Fatalf("T4 entry %s has a benchmark time or extra measurements: %+v", k, b)
		}
	}
	// The cache written as T4 and read back keeps what T4 can hold.
	var buf bytes.Buffer
	if err := kt.WriteT4(&buf); err != nil {
		t.Fatal(err)
	}
	d, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range kt.Entries {
		b := d.Entries[k]
		if b == nil || !sameEntry(a, b) {
			t.Fatalf("entry %s after WriteT4:\n%+v\n%+v", k, a, b)
		}
	}
}

func TestStatusMapping(t *testing.T) {
	for _, c := range []struct {
		marker string
		status backend.Status
		t4     string
	}{
		{"", backend.StatusValid, "correct"},
		{MarkerCompileFailed, backend.StatusCompileFailed, "compile"},
		{MarkerRuntimeFailed, backend.StatusRuntimeFailed, "runtime"},
		{MarkerInvalid, backend.StatusLaunchFailed, "constraints"},
	} {
		if got := StatusOf(c.marker); got != c.status {
			t.Errorf("StatusOf(%q) = %s, want %s", c.marker, got, c.status)
		}
		if got := MarkerOf(c.status); got != c.marker {
			t.Errorf("MarkerOf(%s) = %q, want %q", c.status, got, c.marker)
		}
		if got := T4Invalidity(c.status); got != c.t4 || t4Status[c.t4] != c.status {
			t.Errorf("T4Invalidity(%s) = %q, want %q", c.status, got, c.t4)
		}
	}
	for _, s := range []backend.Status{backend.StatusTimeout, backend.StatusVerificationFailed} {
		if MarkerOf(s) != MarkerRuntimeFailed || t4Status[T4Invalidity(s)] != s {
			t.Errorf("status %s: marker %q, T4 %q", s, MarkerOf(s), T4Invalidity(s))
		}
	}
}

package compilecache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
)

func job(defines ...string) *backend.Job {
	j := &backend.Job{Key: "k", Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}}
	for i := 0; i+1 < len(defines); i += 2 {
		j.Defines = append(j.Defines, backend.Define{Name: defines[i], Value: defines[i+1]})
	}
	return j
}

// The key changes with what decides a binary and only with that.
func TestKey(t *testing.T) {
	k := backend.Kernel{KernelName: "add", Source: "__global__ void add(){}", CompilerOptions: []string{"-O3"}}
	base := Key("nvrtc 13.0 sm_90 cubin=true", k, job("BS", "32"))
	same := job("BS", "32")
	same.Key, same.Grid, same.Block, same.DynamicSharedBytes = "other,1980", [3]int{9, 9, 1}, [3]int{64, 1, 1}, 1024
	if Key("nvrtc 13.0 sm_90 cubin=true", k, same) != base {
		t.Error("the configuration key, grid, block or dynamic shared memory changed the key")
	}
	k2, k3, k4 := k, k, k
	k2.Source += " "
	k3.CompilerOptions = []string{"-O2"}
	k4.KernelName = "add2"
	src := job("BS", "32")
	src.Source = "// rewritten\n" + k.Source
	work := job("BS", "32")
	work.Work = &backend.Work{Flops: 1}
	for name, other := range map[string]string{
		"compiler":     Key("nvrtc 12.8 sm_90 cubin=true", k, job("BS", "32")),
		"source":       Key("nvrtc 13.0 sm_90 cubin=true", k2, job("BS", "32")),
		"options":      Key("nvrtc 13.0 sm_90 cubin=true", k3, job("BS", "32")),
		"name":         Key("nvrtc 13.0 sm_90 cubin=true", k4, job("BS", "32")),
		"defines":      Key("nvrtc 13.0 sm_90 cubin=true", k, job("BS", "64")),
		"job's source": Key("nvrtc 13.0 sm_90 cubin=true", k, src),
		"work":         Key("nvrtc 13.0 sm_90 cubin=true", k, work),
		// A define's name and value are not run together.
		"boundary": Key("nvrtc 13.0 sm_90 cubin=true", k, job("B", "S=32")),
	} {
		if other == base {
			t.Errorf("a different %s gives the same key", name)
		}
	}
	if len(base) != 64 {
		t.Errorf("key %q is not 64 hex digits", base)
	}
}

// A binary put by one cache is got by another over the same folder; a
// corrupt file is a miss and is removed; hits and misses are counted.
func TestPutGetAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := Key("sim", backend.Kernel{KernelName: "k"}, job("X", "1"))
	want := &backend.Binary{Image: []byte{1, 2, 3}, Log: "ptxas info", CompileMs: 12.5}
	if _, _, ok := a.Get(key); ok {
		t.Fatal("hit in an empty cache")
	}
	if err := a.Put(key, want); err != nil {
		t.Fatal(err)
	}
	b, _ := Open(dir, 0)
	got, rej, ok := b.Get(key)
	if !ok || rej != nil || string(got.Image) != string(want.Image) || got.Log != want.Log || got.CompileMs != want.CompileMs {
		t.Fatalf("got %+v, %v; want %+v", got, ok, want)
	}
	if h, m := a.Stats(); h != 0 || m != 1 {
		t.Errorf("first cache: %d hits, %d misses; want 0, 1", h, m)
	}
	bad := Key("sim", backend.Kernel{KernelName: "k"}, job("X", "2"))
	p := filepath.Join(dir, bad[:2], bad+".json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte("{trunc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := b.Get(bad); ok {
		t.Error("a corrupt file was a hit")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the corrupt file is still there: %v", err)
	}
	if h, m := b.Stats(); h != 1 || m != 1 {
		t.Errorf("second cache: %d hits, %d misses; want 1, 1", h, m)
	}
}

// A compiler's rejection is kept and given back as a compile error, in
// memory and across opens.
func TestRejectedAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := Key("nvrtc 13.0 sm_90 cubin=true", backend.Kernel{KernelName: "k"}, job("X", "3"))
	const log = "kernel.cu(4): error: identifier \"y\" is undefined"
	if err := a.PutRejected(key, log); err != nil {
		t.Fatal(err)
	}
	b, _ := Open(dir, 0)
	for name, c := range map[string]*Cache{"same": a, "reopened": b} {
		bin, rej, ok := c.Get(key)
		if !ok || bin != nil || rej == nil || rej.Log != log || rej.Process {
			t.Errorf("%s cache: %v, %+v, %v; want the rejection", name, bin, rej, ok)
		}
	}
}

// Trim keeps the folder within its bound, removing the least recently
// used binaries first; Get renews a binary's use.
func TestTrimLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 3)
	var size int64
	for i := range keys {
		keys[i] = Key("sim", backend.Kernel{KernelName: "k"}, job("I", string(rune('0'+i))))
		if err := c.Put(keys[i], &backend.Binary{Image: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, keys[i][:2], keys[i]+".json")
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		os.Chtimes(p, old, old)
		st, _ := os.Stat(p)
		size = st.Size()
	}
	fresh, _ := Open(dir, 2*size)
	if _, _, ok := fresh.Get(keys[0]); !ok { // the oldest, used now
		t.Fatal("no binary 0")
	}
	if err := fresh.Trim(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true} {
		_, err := os.Stat(filepath.Join(dir, keys[i][:2], keys[i]+".json"))
		if (err == nil) != want {
			t.Errorf("binary %d kept %v, want %v", i, err == nil, want)
		}
	}
}

// Every file that fails its check is a miss, removed, with one warning
// naming it and why; a good one passes silently.
func TestGetChecksEntries(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	c.SetWarn(func(m string) { warnings = append(warnings, m) })
	key := Key("sim", backend.Kernel{KernelName: "k"}, job("X", "1"))
	good := `{"key":"` + key + `","binary":{"image":"AQID","log":"","compile_ms":1},"sha256":"` +
		entrySum(entry{Key: key, Binary: &backend.Binary{Image: []byte{1, 2, 3}, CompileMs: 1}}) + `"}`
	for _, tc := range []struct{ name, file, why string }{
		{"good", good, ""},
		{"no checksum", `{"key":"` + key + `","binary":{"image":"AQID"}}`, "it has no checksum"},
		{"altered", strings.Replace(good, `"compile_ms":1`, `"compile_ms":2`, 1), "its checksum does not match its contents (altered on disk)"},
		{"other key", strings.Replace(good, key, strings.Repeat("0", 64), 1), "it holds the entry of another key"},
		{"garbage", "\x00\x01garbage", "it is not a compile-cache entry"},
		{"empty", "", "it is not a compile-cache entry"},
		{"nothing", `{"key":"` + key + `"}`, "it holds no binary"},
	} {
		c2, _ := Open(dir, 0) // nothing in memory
		c2.SetWarn(c.warn)
		warnings = nil
		p := c2.path(key)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		bin, _, ok := c2.Get(key)
		_, statErr := os.Stat(p)
		if tc.why == "" {
			if !ok || string(bin.Image) != "\x01\x02\x03" || len(warnings) != 0 || statErr != nil {
				t.Errorf("%s: ok %v, warnings %q, file %v", tc.name, ok, warnings, statErr)
			}
			continue
		}
		if ok || statErr == nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "compile cache: "+p+": "+tc.why) {
			t.Errorf("%s: ok %v, file kept %v, warnings %q; want a miss, the file removed, one warning %q", tc.name, ok, statErr == nil, warnings, tc.why)
		}
	}
}

// A binary's PTX (backend.Binary.PTX) is kept and covered by the
// checksum: a hit gives it back, a file whose PTX was altered is refused.
func TestPTXKeptAndChecked(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := Key("sim", backend.Kernel{KernelName: "k"}, job("X", "3"))
	want := &backend.Binary{Image: []byte{1, 2, 3}, CompileMs: 1, PTX: []byte(".version 8.8\n")}
	if err := c.Put(key, want); err != nil {
		t.Fatal(err)
	}
	d, _ := Open(dir, 0)
	if got, _, ok := d.Get(key); !ok || string(got.PTX) != string(want.PTX) {
		t.Fatalf("got %+v, %v; want PTX %q", got, ok, want.PTX)
	}
	p := filepath.Join(dir, key[:2], key+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	e["binary"].(map[string]any)["ptx"] = "LnZlcnNpb24gOS4wCg==" // ".version 9.0\n"
	b, _ = json.Marshal(e)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := Open(dir, 0)
	if _, _, ok := f.Get(key); ok {
		t.Error("an entry whose PTX was altered was a hit")
	}
}

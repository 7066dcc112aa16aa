package compilecache

import (
	"os"
	"path/filepath"
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

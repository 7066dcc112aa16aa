package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ebitengine/purego"
	"github.com/gtune/gtune/internal/driverlib"
)

// Environment variables that override where the libraries are found. When
// one is set, only that path is tried.
const (
	EnvLibCUDA   = "GTUNE_LIBCUDA"
	EnvLibNVRTC  = "GTUNE_LIBNVRTC"
	EnvLibCuBLAS = "GTUNE_LIBCUBLAS"
)

// cudaCandidates lists the paths tried for libcuda.so.1, in order
// (driverlib.Candidates).
func cudaCandidates() []string { return driverlib.Candidates(EnvLibCUDA, "libcuda.so.1") }

// toolkitLib is a CUDA toolkit library as installed: its unversioned
// name, the major versions tried newest first, and where Python wheels put
// it (under site-packages).
type toolkitLib struct {
	env      string   // override variable: only that path is tried
	base     string   // "libnvrtc.so"
	sonames  []string // tried through the dynamic loader, in order
	versions []string // "13", "12", "11": globbed as base.V* in each directory
	wheels   []string // "nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"
}

// nvrtcLibrary is NVRTC (CUDA 11's soname is libnvrtc.so.11.2).
var nvrtcLibrary = toolkitLib{
	env: EnvLibNVRTC, base: "libnvrtc.so",
	sonames:  []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"},
	versions: []string{"13", "12", "11"},
	wheels:   []string{"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"},
}

// nvrtcCandidates lists the paths tried for NVRTC (toolkitLib.candidates).
func nvrtcCandidates() []string { return nvrtcLibrary.candidates() }

// candidates lists the paths tried for the library, in order:
// $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64 (base,
// then base.13*, .12*, .11*), then the dynamic loader's sonames, then
// the wheels of Python packages as a last resort.
func (t toolkitLib) candidates() []string {
	if p := os.Getenv(t.env); p != "" {
		return []string{p}
	}
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if v := os.Getenv(env); v != "" {
			dirs = append(dirs, filepath.Join(v, "lib64"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	inDir := func(d string) {
		add(filepath.Join(d, t.base))
		for _, v := range t.versions {
			m, _ := filepath.Glob(filepath.Join(d, t.base+"."+v+"*"))
			sort.Sort(sort.Reverse(sort.StringSlice(m)))
			for _, p := range m {
				add(p)
			}
		}
	}
	for _, d := range dirs {
		inDir(d)
	}
	for _, s := range t.sonames {
		add(s)
	}
	for _, pat := range []string{
		"/usr/lib/python3*/site-packages",
		"/usr/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages",
		"/opt/*/.venv/lib/python3*/site-packages",
		"/opt/conda/lib/python3*/site-packages",
		filepath.Join(os.Getenv("HOME"), ".local/lib/python3*/site-packages"),
	} {
		sites, _ := filepath.Glob(pat)
		for _, s := range sites {
			for _, sub := range t.wheels {
				d := filepath.Join(s, sub)
				if _, err := os.Stat(d); err == nil {
					inDir(d)
				}
			}
		}
	}
	return out
}

// openLibrary dlopens the first candidate that loads
// (driverlib.Open). what names the library in messages ("libcuda.so.1"),
// env the override variable.
func openLibrary(pkg, what, env string, cands []string) (uintptr, string, error) {
	return driverlib.Open(pkg, what, env, cands)
}

// sym binds one C function: the first of names found wins. A required
// symbol that is absent is an error; an optional one leaves fn nil.
type sym struct {
	names    []string
	fn       any
	required bool
}

// bind resolves syms in handle and reports the first missing required
// symbol in one sentence. It returns the names actually bound, by the
// first name of each entry.
func bind(pkg, path string, handle uintptr, syms []sym) (map[string]string, error) {
	got := map[string]string{}
	for _, s := range syms {
		for _, name := range s.names {
			addr, err := purego.Dlsym(handle, name)
			if err != nil || addr == 0 {
				continue
			}
			purego.RegisterFunc(s.fn, addr)
			got[s.names[0]] = name
			break
		}
		if _, ok := got[s.names[0]]; !ok && s.required {
			return nil, fmt.Errorf("%s: symbol %s not found in %s (library too old or not the right library)", pkg, strings.Join(s.names, " or "), path)
		}
	}
	return got, nil
}

// Available reports whether this machine can run the CUDA backend without
// touching the GPU: libcuda.so.1 and NVRTC load and have every required
// symbol. It does not call cuInit (the parent process never talks to the
// driver; the worker does). The error is one sentence naming what is
// missing and where it was searched.
func Available() error {
	if _, err := loadDriver(); err != nil {
		return err
	}
	if _, err := loadNVRTC(); err != nil {
		return err
	}
	return nil
}

// Package driverlib says where the NVIDIA driver's libraries (libcuda,
// libnvidia-ml) are looked for: one list for every library of the
// driver, so that the CUDA backend and NVML find them in the same places.
package driverlib

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ebitengine/purego"
)

// Dirs are where a driver installs its libraries when the dynamic loader
// does not know them (containers mount them under /usr/local/nvidia).
// CUDA's stubs directory is never searched: its libraries load and then
// fail every call.
var Dirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
	"/usr/local/nvidia/lib64",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/lib/wsl/lib",
}

// Candidates lists the paths tried for the driver library soname, in
// order: the path in the environment variable env alone where it is
// set, else the bare soname ("ask the dynamic loader") and then soname
// in each of Dirs.
func Candidates(env, soname string) []string {
	if p := os.Getenv(env); p != "" {
		return []string{p}
	}
	out := []string{soname}
	for _, d := range Dirs {
		out = append(out, filepath.Join(d, soname))
	}
	return out
}

// Open dlopens the first of cands that loads, giving its handle and
// path. pkg prefixes messages ("cuda", "nvml"), what names the library
// ("libcuda.so.1"), env the variable that overrides the search. Errors:
// none found, or none loaded (the last loader error), each naming every
// place searched and env.
func Open(pkg, what, env string, cands []string) (uintptr, string, error) {
	var lastErr error
	for _, p := range cands {
		if filepath.IsAbs(p) {
			if _, err := os.Stat(p); err != nil {
				continue
			}
		}
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			lastErr = err
			continue
		}
		return h, p, nil
	}
	if lastErr != nil {
		return 0, "", fmt.Errorf("%s: %s could not be loaded (searched %s; last error: %v; set %s)", pkg, what, Describe(cands), lastErr, env)
	}
	return 0, "", fmt.Errorf("%s: %s not found (searched %s; set %s)", pkg, what, Describe(cands), env)
}

// Describe lists candidates for a message: a bare soname as asked of the
// dynamic loader.
func Describe(c []string) string {
	parts := make([]string, len(c))
	for i, p := range c {
		if filepath.IsAbs(p) {
			parts[i] = p
		} else {
			parts[i] = p + " through the dynamic loader"
		}
	}
	return strings.Join(parts, ", ")
}

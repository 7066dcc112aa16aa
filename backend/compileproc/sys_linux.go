package compileproc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxRSSKiB is this process' peak resident memory, KiB (Linux reports
// ru_maxrss in KiB).
func maxRSSKiB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss)
}

// availableMemory is /proc/meminfo's MemAvailable, bytes; 0 when unknown.
func availableMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kib << 10
	}
	return 0
}

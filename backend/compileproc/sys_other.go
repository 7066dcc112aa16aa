//go:build !linux

package compileproc

// maxRSSKiB is unknown off Linux.
func maxRSSKiB() int64 { return 0 }

// availableMemory is unknown off Linux: the pool is sized from the cores.
func availableMemory() uint64 { return 0 }

//go:build unix

package store

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processAlive reports whether a process with this pid exists and has not
// exited. Signal 0 checks existence without signalling; EPERM means it
// exists but belongs to another user. A zombie (exited, not yet reaped:
// a container whose first process reaps late, or a parent that has not
// waited) has exited: where /proc tells, it is not alive.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// /proc/PID/stat: "pid (comm) S ...", the state after the last ')'.
	b, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if rerr != nil {
		return true // no /proc here: the signal's answer stands
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
		return false
	}
	return true
}

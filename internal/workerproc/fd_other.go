//go:build !linux

package workerproc

import (
	"os"
	"syscall"
)

// ProtocolOutput is stdout itself where file descriptors cannot be
// duplicated portably.
func ProtocolOutput() (*os.File, error) { return os.Stdout, nil }

// sysProcAttr has nothing to add off Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }

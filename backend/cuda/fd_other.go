//go:build !linux

package cuda

import (
	"os"
	"syscall"
)

// protocolOutput is stdout itself where file descriptors cannot be
// duplicated portably.
func protocolOutput() (*os.File, error) { return os.Stdout, nil }

// workerSysProcAttr has nothing to add off Linux.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

package workerproc

import (
	"os"
	"syscall"
)

// ProtocolOutput returns a private copy of stdout for replies and points
// file descriptor 1 at stderr, so stray writes to stdout (by a library or
// a panic) land in the captured stderr instead of the protocol stream.
func ProtocolOutput() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "gtune-protocol"), nil
}

// sysProcAttr makes the kernel kill the worker when the parent
// dies, so a worker stuck in a kernel that never ends cannot outlive the
// tuner and hold the GPU. (Pdeathsig follows the OS thread that started
// the worker; Go keeps threads alive unless a locked goroutine exits.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

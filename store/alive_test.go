//go:build linux

package store

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A child that exited but is not yet reaped (a zombie) is not alive; a
// running one and this process are.
func TestProcessAliveZombie(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("sleep", "0.05")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	if !processAlive(cmd.Process.Pid) {
		t.Error("a running child is not alive")
	}
	time.Sleep(300 * time.Millisecond) // exited, not waited for: a zombie
	if processAlive(cmd.Process.Pid) {
		t.Error("an exited, unreaped child is alive")
	}
	cmd.Wait()
	if processAlive(cmd.Process.Pid) {
		t.Error("a reaped child is alive")
	}
}

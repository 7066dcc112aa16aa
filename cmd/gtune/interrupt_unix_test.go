//go:build unix

package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT while a large space is being built stops gtune within a second.
func TestInterruptWhileBuildingSpace(t *testing.T) {
	p := hugeSpec(t, `{"Expression": "(a*b*c*d*e*f*g*h*i) % 7 == 3"}`)
	type result struct {
		code int
		errs string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errs := gtune(t, "space", p, "--max-configurations", "2000000000")
		done <- result{code, errs}
	}()
	select {
	case r := <-done:
		t.Fatalf("finished before it could be interrupted: exit %d %s", r.code, r.errs)
	case <-time.After(500 * time.Millisecond):
	}
	sent := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if d := time.Since(sent); d > time.Second {
			t.Errorf("stopped %v after SIGINT", d)
		}
		if r.code != 1 || !strings.Contains(r.errs, "interrupted while building the search space") {
			t.Errorf("exit %d: %s", r.code, r.errs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still building 10 s after SIGINT")
	}
}

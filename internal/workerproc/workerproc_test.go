package workerproc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Supervision of real child processes: one that never answers is killed
// at the deadline; one that dies is reported with its exit status and
// stderr.
func TestProcTimeoutKills(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"30"}, nil, nil)
	if err != nil {
		t.Skip("no /bin/sleep:", err)
	}
	start := time.Now()
	err = p.Call(context.Background(), "hello", new(string), 300*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 3*time.Second {
		t.Fatalf("timeout took %v", el)
	}
	if !p.Exited() || p.State() != "signal: killed" {
		t.Fatalf("worker not killed: exited %v, state %q", p.Exited(), p.State())
	}
}

func TestProcCancelKills(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"30"}, nil, nil)
	if err != nil {
		t.Skip("no /bin/sleep:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = p.Call(ctx, "hello", new(string), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || !p.Exited() {
		t.Fatalf("err = %v, exited %v", err, p.Exited())
	}
}

func TestProcDeathReported(t *testing.T) {
	p, err := Start("/bin/sh", []string{"-c", "read x; echo first >&2; echo 'boom: illegal address' >&2; exit 3"}, nil, nil)
	if err != nil {
		t.Skip("no /bin/sh:", err)
	}
	// The shell reads one line: the request ends in a newline.
	err = p.Call(context.Background(), "run\n", new(string), 10*time.Second)
	var died *DiedError
	if !errors.As(err, &died) {
		t.Fatalf("err = %v, want *DiedError", err)
	}
	if died.Status != "exit status 3" || died.Tail != "first | boom: illegal address" {
		t.Fatalf("died = %+v", died)
	}
	if got := died.Error(); got != "worker process exited (exit status 3); stderr: first | boom: illegal address" {
		t.Fatalf("message = %q", got)
	}
}

func TestTailBufferKeepsEnd(t *testing.T) {
	var fwd strings.Builder
	tb := &TailBuffer{Max: 10, Fwd: &fwd}
	tb.Write([]byte("0123456789abc\n"))
	tb.Write([]byte("xyz"))
	if got := tb.String(); got != "789abc | xyz" {
		t.Fatalf("tail = %q", got)
	}
	if fwd.String() != "0123456789abc\nxyz" {
		t.Fatalf("forwarded %q", fwd.String())
	}
}

// A worker that stops answering is given up after the silence bound,
// long before the call's own timeout, and killed.
func TestProcSilenceKills(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"30"}, nil, nil)
	if err != nil {
		t.Skip("no /bin/sleep:", err)
	}
	start := time.Now()
	err = p.CallAlive(context.Background(), "hello", new(string), time.Minute, 200*time.Millisecond, func() bool { return false })
	if !errors.Is(err, ErrSilent) {
		t.Fatalf("err = %v, want ErrSilent", err)
	}
	if el := time.Since(start); el < 200*time.Millisecond || el > 5*time.Second {
		t.Fatalf("silence took %v", el)
	}
	if !p.Exited() {
		t.Fatal("silent worker not killed")
	}
}

package cuda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// errTimeout is returned by proc.call when the worker did not answer in
// time; the worker has been killed.
var errTimeout = errors.New("worker did not answer in time")

// diedError is returned by proc.call when the worker process went away
// (crash, exit, killed from outside) before answering.
type diedError struct {
	Status string // "exit status 4", "signal: killed", ...
	Tail   string // last lines of its stderr
	Cause  error  // the pipe error that revealed it
}

func (e *diedError) Error() string {
	msg := "worker process exited"
	if e.Status != "" {
		msg += " (" + e.Status + ")"
	}
	if e.Tail != "" {
		msg += "; stderr: " + e.Tail
	}
	return msg
}

// tailBuffer keeps the last max bytes written to it and forwards
// everything to an optional writer.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
	fwd io.Writer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	if t.fwd != nil {
		_, _ = t.fwd.Write(p)
	}
	return len(p), nil
}

// String is the kept tail with lines joined by " | " for one-line
// messages.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.Join(lines, " | ")
}

// proc is one running worker process and its end of the protocol.
type proc struct {
	cmd   *exec.Cmd
	conn  *conn
	in    *os.File // requests (the worker's stdin)
	out   *os.File // replies (the worker's stdout)
	tail  *tailBuffer
	done  chan struct{} // closed once the process has been reaped
	state string        // exit description, valid after done
}

// startProc starts exe with args as a worker. Stdin and stdout are plain
// pipes owned here (not exec's copying goroutines), so replies already
// written by a worker that then exits are still read in full.
func startProc(exe string, args, env []string, stderr io.Writer) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	tail := &tailBuffer{max: 8 << 10, fwd: stderr}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = tail
	cmd.SysProcAttr = workerSysProcAttr()
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("cuda: starting worker %s: %w", exe, err)
	}
	inR.Close()
	outW.Close()
	p := &proc{cmd: cmd, conn: newConn(outR, inW), in: inW, out: outR, tail: tail, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if err != nil {
			p.state = err.Error()
		} else {
			p.state = "exit status 0"
		}
		close(p.done)
	}()
	return p, nil
}

// call sends one request and waits for its reply, at most timeout (no
// limit when timeout <= 0) and until ctx ends. On timeout or
// cancellation the worker is killed and errTimeout or ctx.Err() is
// returned; a worker that dies first gives a *diedError.
func (p *proc) call(ctx context.Context, req *request, timeout time.Duration) (*reply, error) {
	type answer struct {
		rep *reply
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		if err := p.conn.enc.Encode(req); err != nil {
			ch <- answer{nil, err}
			return
		}
		var rep reply
		if err := p.conn.dec.Decode(&rep); err != nil {
			ch <- answer{nil, err}
			return
		}
		ch <- answer{&rep, nil}
	}()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, p.died(a.err)
		}
		return a.rep, nil
	case <-timer:
		p.kill()
		<-ch
		return nil, errTimeout
	case <-ctx.Done():
		p.kill()
		<-ch
		return nil, ctx.Err()
	}
}

// died waits briefly for the process to be reaped and describes it.
func (p *proc) died(cause error) error {
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
	}
	return &diedError{Status: p.state, Tail: p.tail.String(), Cause: cause}
}

// waitExit waits up to d for the process to exit by itself, then kills it.
func (p *proc) waitExit(d time.Duration) {
	select {
	case <-p.done:
	case <-time.After(d):
		p.kill()
	}
	p.closePipes()
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.closePipes()
}

func (p *proc) closePipes() {
	p.in.Close()
	p.out.Close()
}

// exited reports whether the process has been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

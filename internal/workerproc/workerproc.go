// Package workerproc supervises a child process that answers gob-encoded
// requests on its stdin with one gob-encoded reply each on its stdout:
// gtune's GPU worker (backend/cuda) and its compile workers
// (backend/compileproc). A call has a deadline; a child that does not
// answer in time is killed, and one that dies is described by its exit
// status and the tail of its stderr, so a crashed or hung child costs the
// request it was serving, never the parent.
package workerproc

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ErrTimeout is returned by Proc.Call when the worker did not answer in
// time; the worker has been killed.
var ErrTimeout = errors.New("worker did not answer in time")

// DiedError is returned by Proc.Call when the worker process went away
// (crash, exit, killed from outside) before answering.
type DiedError struct {
	Status string // "exit status 4", "signal: killed", ...
	Tail   string // last lines of its stderr
	Cause  error  // the pipe error that revealed it
}

func (e *DiedError) Error() string {
	msg := "worker process exited"
	if e.Status != "" {
		msg += " (" + e.Status + ")"
	}
	if e.Tail != "" {
		msg += "; stderr: " + e.Tail
	}
	return msg
}

// TailBuffer keeps the last max bytes written to it and forwards
// everything to an optional writer.
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
	Max int       // bytes kept
	Fwd io.Writer // also receives everything written; may be nil
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
	}
	if t.Fwd != nil {
		_, _ = t.Fwd.Write(p)
	}
	return len(p), nil
}

// String is the kept tail with lines joined by " | " for one-line
// messages.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.Join(lines, " | ")
}

// Proc is one running worker process and its end of the protocol.
type Proc struct {
	cmd   *exec.Cmd
	enc   *gob.Encoder
	dec   *gob.Decoder
	in    *os.File // requests (the worker's stdin)
	out   *os.File // replies (the worker's stdout)
	tail  *TailBuffer
	done  chan struct{} // closed once the process has been reaped
	state string        // exit description, valid after done
}

// Start starts exe with args as a worker, with environment env (nil: the
// parent's) and its stderr forwarded to stderr (may be nil; the last 8 KiB
// are kept for messages). Stdin and stdout are plain pipes owned here (not
// exec's copying goroutines), so replies already written by a worker that
// then exits are still read in full. On Linux the worker is killed when
// the parent dies. Errors: exe cannot be started.
func Start(exe string, args, env []string, stderr io.Writer) (*Proc, error) {
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
	tail := &TailBuffer{Max: 8 << 10, Fwd: stderr}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = tail
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting worker %s: %w", exe, err)
	}
	inR.Close()
	outW.Close()
	p := &Proc{cmd: cmd, enc: gob.NewEncoder(inW), dec: gob.NewDecoder(outR), in: inW, out: outR, tail: tail, done: make(chan struct{})}
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

// Call sends req and decodes the reply into rep (a pointer), waiting at
// most timeout (no limit when timeout <= 0) and until ctx ends. On
// timeout or cancellation the worker is killed and ErrTimeout or
// ctx.Err() is returned; a worker that dies first gives a *DiedError.
// One call at a time.
func (p *Proc) Call(ctx context.Context, req, rep any, timeout time.Duration) error {
	return p.CallAlive(ctx, req, rep, timeout, 0, func() bool { return false })
}

// ErrSilent is returned by Proc.CallAlive when the worker sent nothing,
// not even a keep-alive, for longer than the silence bound; the worker
// has been killed.
var ErrSilent = errors.New("worker stopped answering (no message, not even a keep-alive, within the silence bound)")

// CallAlive is Call for a worker that, while it works on a request,
// sends keep-alive replies: alive reports whether the reply just decoded
// into rep is one (and resets rep for the next). Beside timeout (the
// whole call; none when <= 0), silence bounds the time between two
// messages (none when <= 0): a worker whose node died or whose connection hangs is given
// up then (ErrSilent), not when the cluster notices (Slurm declares a
// node down after 300 s by default), and not at timeout. The worker is
// killed on ErrSilent, ErrTimeout and cancellation.
func (p *Proc) CallAlive(ctx context.Context, req, rep any, timeout, silence time.Duration, alive func() bool) error {
	ch := make(chan error, 1)
	beat := make(chan struct{}, 1)
	go func() {
		if err := p.enc.Encode(req); err != nil {
			ch <- err
			return
		}
		for {
			if err := p.dec.Decode(rep); err != nil {
				ch <- err
				return
			}
			if !alive() {
				ch <- nil
				return
			}
			select {
			case beat <- struct{}{}:
			default:
			}
		}
	}()
	var total <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		total = t.C
	}
	var quiet *time.Timer
	var quietC <-chan time.Time // nil (never ready) without a bound: Call
	if silence > 0 {
		quiet = time.NewTimer(silence)
		defer quiet.Stop()
		quietC = quiet.C
	}
	for {
		select {
		case err := <-ch:
			if err != nil {
				return p.died(err)
			}
			return nil
		case <-beat:
			if quiet != nil {
				if !quiet.Stop() {
					<-quiet.C
				}
				quiet.Reset(silence)
			}
		case <-quietC:
			p.Kill()
			<-ch
			return fmt.Errorf("%w: %v", ErrSilent, silence)
		case <-total:
			p.Kill()
			<-ch
			return ErrTimeout
		case <-ctx.Done():
			p.Kill()
			<-ch
			return ctx.Err()
		}
	}
}

// died waits briefly for the process to be reaped and describes it.
func (p *Proc) died(cause error) error {
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.Kill()
	}
	return &DiedError{Status: p.state, Tail: p.tail.String(), Cause: cause}
}

// WaitExit waits up to d for the process to exit by itself, then kills it.
func (p *Proc) WaitExit(d time.Duration) {
	select {
	case <-p.done:
	case <-time.After(d):
		p.Kill()
	}
	p.closePipes()
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Proc) Kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.closePipes()
}

func (p *Proc) closePipes() {
	p.in.Close()
	p.out.Close()
}

// Exited reports whether the process has been reaped.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Tail is the last lines the worker wrote to stderr, joined by " | ".
func (p *Proc) Tail() string { return p.tail.String() }

// State describes how the process ended ("exit status 3", "signal:
// killed"); empty while it runs.
func (p *Proc) State() string {
	if !p.Exited() {
		return ""
	}
	return p.state
}

// CloseInput closes the worker's stdin: a worker reading requests sees
// the end of input and exits.
func (p *Proc) CloseInput() { p.in.Close() }

// Conn is the worker's end of the protocol: requests decoded from its
// stdin, replies encoded on its protocol output (ProtocolOutput).
type Conn struct {
	Enc *gob.Encoder
	Dec *gob.Decoder
}

// KeepAlive sends alive (a keep-alive reply) on c every interval until
// the returned stop is called; stop returns once no keep-alive is being
// written, so that the request's own reply can follow. A worker wraps
// the handling of each request in it, so that the parent's CallAlive
// tells a busy worker from a lost one. A failed write ends the
// keep-alives (the parent is gone; the reply's write will say so).
func (c *Conn) KeepAlive(interval time.Duration, alive any) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if err := c.Enc.Encode(alive); err != nil {
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// NewConn reads requests from r and writes replies to w.
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{Enc: gob.NewEncoder(w), Dec: gob.NewDecoder(r)}
}

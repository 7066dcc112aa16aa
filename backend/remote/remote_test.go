package remote

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/workerproc"
)

// closeCounting is the simulated GPU, counting Close.
type closeCounting struct {
	*sim.Sim
	closed int
}

func (c *closeCounting) Close() error { c.closed++; return c.Sim.Close() }

// Compile rejects every kernel, as a compiler rejecting the source does.
func (c *closeCounting) Compile(ctx context.Context, j *backend.Job) (*backend.Binary, error) {
	return nil, &backend.CompileError{Log: "error: identifier \"x\" is undefined"}
}

// Serve answers hello with the GPU and whether it is simulated, passes a
// compiler's rejection back as its log, and closes the GPU when the
// tuner's end of the connection goes away.
func TestServe(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	be := &closeCounting{Sim: sim.New(d, sim.Options{})}
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), be, "n1", reqR, repW) }()
	c := workerproc.NewConn(repR, reqW)
	call := func(req *request) reply {
		t.Helper()
		if err := c.Enc.Encode(req); err != nil {
			t.Fatal(err)
		}
		var rep reply
		if err := c.Dec.Decode(&rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := call(&request{Op: opHello}); !rep.Simulated || rep.Device.ID != "h100_sxm" || rep.Host != "n1" || rep.Err != "" {
		t.Errorf("hello: %+v", rep)
	}
	if rep := call(&request{Op: "dance"}); rep.Err == "" {
		t.Error("an unknown request: no error")
	}
	// The compiler's rejection comes back as its log, for the tuner's
	// side to make a *backend.CompileError of it again.
	if rep := call(&request{Op: opCompile, Job: &backend.Job{Key: "1"}}); rep.CompileLog != "error: identifier \"x\" is undefined" || rep.Binary != nil {
		t.Errorf("compile: %+v", rep)
	}
	reqW.Close() // the tuner is gone
	if err := <-done; err != nil || be.closed != 1 {
		t.Errorf("Serve after the end of input: %v, closed %d times; want nil, once", err, be.closed)
	}
}

// slowRun is the simulated GPU whose Run takes d.
type slowRun struct {
	*sim.Sim
	d time.Duration
}

func (s *slowRun) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	time.Sleep(s.d)
	return &backend.Result{Status: backend.StatusValid}, nil
}

// A worker busy longer than the silence bound keeps its call alive with
// keep-alives (every interval); the reply follows them, and the
// coordinator's side reads past them to it.
func TestKeepAlive(t *testing.T) {
	d, _ := device.Lookup("h100_sxm")
	be := &slowRun{Sim: sim.New(d, sim.Options{}), d: 250 * time.Millisecond}
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	w := workerproc.NewConn(reqR, repW)
	go func() {
		var req request
		if err := w.Dec.Decode(&req); err != nil {
			return
		}
		rep := answerAlive(context.Background(), be, "n1", &req, w, 20*time.Millisecond)
		w.Enc.Encode(&rep)
	}()
	c := workerproc.NewConn(repR, reqW)
	if err := c.Enc.Encode(&request{Op: opRun, Plan: &backend.Plan{}}); err != nil {
		t.Fatal(err)
	}
	beats := 0
	for {
		var rep reply
		if err := c.Dec.Decode(&rep); err != nil {
			t.Fatal(err)
		}
		if rep.Alive {
			beats++
			continue
		}
		if rep.Result == nil || rep.Result.Status != backend.StatusValid {
			t.Errorf("reply %+v", rep)
		}
		break
	}
	if beats < 5 {
		t.Errorf("%d keep-alives over 250 ms at 20 ms; want 5 or more", beats)
	}
}

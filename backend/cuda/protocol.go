package cuda

import (
	"context"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/workerproc"
	"github.com/gtune/gtune/measure"
)

// The parent and its worker exchange gob-encoded messages over the
// worker's stdin (requests) and a private copy of its stdout (replies),
// strictly one reply per request. Argument data never crosses the pipe:
// the worker generates or reads it.

// Request operations.
const (
	opHello    = "hello"
	opPrepare  = "prepare"
	opRun      = "run"
	opShutdown = "shutdown"
	// opSensorCheck measures the energy sensors (measure.SensorCheck).
	opSensorCheck = "sensor_check"
	// opResources loads a binary's module and reads its kernel's
	// attributes, without a launch (Backend.Resources).
	opResources = "resources"
	// opInherit tells a worker that replaced one killed mid-run that the
	// GPU is warm (measure.Meter.Inherit).
	opInherit = "inherit"
)

// request is one message from the parent.
type request struct {
	Op      string
	Problem *backend.Problem // opPrepare
	Plan    *backend.Plan    // opRun
	Job     *backend.Job     // opResources
	Binary  *backend.Binary  // opResources
	// SensorCheck holds opSensorCheck's options.
	SensorCheck *measure.SensorCheckOptions
	// Fit is opInherit's leakage model, the replaced worker's (nil: it
	// fitted none).
	Fit *measure.ThermalFit
}

// reply is the worker's answer to one request.
type reply struct {
	Device *backend.DeviceInfo // opHello
	Result *backend.Result     // opRun
	Err    string              // the request failed (the worker goes on unless Fatal)
	// Fatal: the context is dead (a sticky CUDA error); the worker exits
	// right after this reply.
	Fatal bool
	// IdlePowerW is the idle power measured at Prepare (0 if none), W.
	IdlePowerW float64
	Trace      []string // opPrepare: its steps' times, when GTUNE_TRACE names "prepare"
	// Sensors is opSensorCheck's report.
	Sensors *measure.SensorReport
	// Resources is opResources' answer.
	Resources *backend.Resources
	// Alive marks a keep-alive, sent every KeepAliveInterval while the
	// worker handles a request; the request's reply follows.
	Alive bool
}

// KeepAliveInterval is how often a worker busy with a request sends a
// keep-alive; Silence, the parent's bound on the time between two
// messages, is six of them. A worker behind srun on another node whose
// node died is given up then, not when Slurm declares the node down. A
// hung kernel keeps its worker sending: Plan.Timeout bounds it.
const (
	KeepAliveInterval = 10 * time.Second
	Silence           = 6 * KeepAliveInterval
)

// call sends req to the worker p and waits for its reply, at most
// timeout, and at most silence (0: Silence) between two messages (see
// workerproc.Proc.CallAlive for the errors).
func call(ctx context.Context, p *workerproc.Proc, req *request, timeout, silence time.Duration) (*reply, error) {
	var rep reply
	alive := func() bool {
		if rep.Alive {
			rep = reply{} // gob leaves fields the next reply omits
			return true
		}
		return false
	}
	if silence <= 0 {
		silence = Silence
	}
	if req.Op == opHello && timeout > silence {
		silence = timeout // the worker's start answers nothing before it
	}
	if err := p.CallAlive(ctx, req, &rep, timeout, silence, alive); err != nil {
		return nil, err
	}
	return &rep, nil
}

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
	// Sensors is opSensorCheck's report.
	Sensors *measure.SensorReport
	// Resources is opResources' answer.
	Resources *backend.Resources
}

// call sends req to the worker p and waits for its reply (see
// workerproc.Proc.Call for the timeout and the errors).
func call(ctx context.Context, p *workerproc.Proc, req *request, timeout time.Duration) (*reply, error) {
	var rep reply
	if err := p.Call(ctx, req, &rep, timeout); err != nil {
		return nil, err
	}
	return &rep, nil
}

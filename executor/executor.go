// Package executor is the evaluation seam of gtune: the tuner hands it
// trials (a configuration's compiled plan) and takes back outcomes in the
// order they end, without knowing what measures them. Pool measures on the
// GPUs of this host, one backend (one GPU worker) each; a replay, the
// simulated GPU and a projection are backends behind the same Pool, and a
// Slurm task or a remote GPU is one more Executor.
//
// The driver's side of the contract (package tuner): Submit a trial while
// Free() > 0, Wait for an outcome while trials are in flight, and a slot's
// failure (a *SlotError) gives the trial back to be submitted again,
// possibly to another slot. The sketch is ../shared/design.md, "Sketch:
// the evaluation seam"; gonum/optimize's concurrent driver is the pattern
// (a method asks for many, results told as they come).
package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/trace"
)

// Trial is one measurement asked of an executor: run Plan, whose launches
// carry their compiled binaries (backend.Launch.Binary), once.
type Trial struct {
	// ID is the driver's number for the trial, unique within a run.
	ID int
	// Index is the configuration's index in the run's search space.
	Index int
	// Repeat is the measurement's number among the configuration's: 0 the
	// first.
	Repeat int
	Plan   *backend.Plan
}

// Outcome is what a trial gave: the backend's Result, or Err. Err is the
// plan's own failure (a *backend.CompileError, a *backend.BinaryError,
// the context's error) or a *SlotError: the slot failed, not the plan, and
// the trial was not measured.
type Outcome struct {
	Trial  Trial
	Result *backend.Result
	Err    error
	// Slot is the index of the slot that ran the trial (Shares' index);
	// GPU its GPU's UUID and Host the host's name.
	Slot int
	GPU  string
	Host string
	// Wall is the wall time of the backend's Run.
	Wall time.Duration
	// Anchor is the anchor measured on the slot just before this trial
	// (SetAnchor); nil where none was due.
	Anchor *AnchorRun
	// ended is set when the run's context had ended by the time Run
	// returned: its error is then the context's doing, not the slot's.
	ended bool
}

// Reference runs the run's reference configuration on be (a slot's
// backend, prepared), to give the outputs every configuration measured
// on be is verified against. It is called for every slot at once, so it
// must be safe for concurrent use.
type Reference func(ctx context.Context, be backend.Backend) error

// Executor runs trials and gives their outcomes in completion order.
// Submit and Wait are called from one goroutine (the driver's), after
// Open.
type Executor interface {
	// Open prepares every slot for problem p at once (backend.Prepare:
	// the arguments, each GPU its own copy) and runs ref, where given,
	// on each slot right after its preparation: every GPU keeps the
	// reference outputs it computed itself, so none waits for another's
	// or reads them from disk. Open returns when the first slot is
	// ready; the others join as they become ready (Free). A further
	// slot whose preparation or reference fails leaves the run (Shares
	// says why), where before one GPU's failure ended a run over
	// several. Errors: the first slot's (it also compiles for the run,
	// against the prepared problem). Open is called once, when the run
	// first needs a GPU: a re-run that measures nothing prepares
	// nothing.
	Open(ctx context.Context, p *backend.Problem, ref Reference) error
	// Free is how many trials Submit takes now without waiting. Where
	// none is free and none is in flight, it waits for a slot still
	// being prepared, if any.
	Free() int
	// Live is how many slots are in the run: those not dropped.
	Live() int
	// Submit starts trial t on a free slot; it panics without one (the
	// driver checks Free).
	Submit(ctx context.Context, t Trial)
	// Wait blocks until a trial in flight ends and returns its outcome;
	// it must not be called without a trial in flight.
	Wait() Outcome
	// Await blocks until a trial in flight ends, giving its outcome and
	// true, or until the preparation of a slot still being prepared
	// ends (Open), giving false and the slot (Outcome.Slot): it joined
	// the run, and the driver has a free slot to give work to, where
	// Wait would leave it idle until a trial ends (an energy run's first
	// trial warms its GPU up for up to 90 s), or it failed and left (its
	// share says why). It must not be called with no trial in flight
	// and no slot being prepared.
	Await() (Outcome, bool)
	// Shares gives each slot's account so far, in slot order.
	Shares() []Share
	// SetAnchor makes every slot measure plan, the run's anchor, before
	// its next trial and again 2, 4, 8, ... trials after its last, every
	// every-th at most (Outcome.Anchor): a fixed load measured through the run
	// on each GPU, which shows how the GPUs differ in energy. A nil
	// plan stops it.
	SetAnchor(plan *backend.Plan, every int)
}

// AnchorRun is one measurement of the anchor on a slot: the backend's
// Result or Err, and the wall time of its Run.
type AnchorRun struct {
	Result *backend.Result
	Err    error
	Wall   time.Duration
}

// SlotError is a failure of a slot, not of the plan it ran: its backend's
// worker died and could not be restarted, the GPU fell off the bus. The
// trial was not measured and goes to another slot; a slot that fails
// MaxFailures times in a row leaves the run (Dropped).
type SlotError struct {
	Slot int
	GPU  string
	Err  error
	// Dropped is set when this failure took the slot out of the run.
	Dropped bool
	// Last is set when no slot is left.
	Last bool
}

func (e *SlotError) Error() string { return e.Err.Error() }
func (e *SlotError) Unwrap() error { return e.Err }

// MaxFailures is how many failures in a row take a slot of a Pool of
// several out of the run. A Pool of one slot drops it at its first
// failure: retrying the same GPU is the backend's job (a GPU worker
// restarts after a crash by itself), so what reaches the executor ends a
// run on one GPU.
const MaxFailures = 3

// Share is one slot's account: its GPU, the trials it measured, the wall
// time it spent measuring, and why it left the run ("" while in it).
type Share struct {
	GPU       string
	Name      string
	Evaluated int
	Busy      time.Duration
	Dropped   string
}

// Pool is the executor of this host: one slot per backend (each a GPU
// worker; backends serialise their own Run), one trial in flight per slot.
// A free slot is taken lowest index first, so that a run over one GPU,
// or over several with the same timings, submits in a repeatable order.
type Pool struct {
	slots    []*slot
	host     string
	out      chan Outcome
	inflight int
	anchor   *backend.Plan
	every    int
	// joins carries each slot's end of preparation (Open); opening
	// counts the slots still preparing; openErr is the first slot's
	// failure to prepare.
	joins   chan joined
	opening int
	openErr error
	// firstPrepared is closed once the first slot's Prepare has ended.
	firstPrepared chan struct{}
}

type slot struct {
	be       backend.Backend
	share    Share
	busy     bool
	opening  bool // preparing: not yet in the run's service (Open)
	failures int  // in a row
	// sinceAnchor counts the trials since the slot's last anchor; -1
	// before its first. anchors counts its anchors: the (k+1)-th comes
	// 2^k trials after the k-th, up to every, so that a short run has a
	// few too.
	sinceAnchor int
	anchors     int
}

// NewPool makes the executor over backends, the GPUs of one run (at least
// one). The backends stay the caller's to close.
func NewPool(backends ...backend.Backend) *Pool {
	host, _ := os.Hostname()
	p := &Pool{host: host, out: make(chan Outcome, len(backends))}
	for _, be := range backends {
		d := be.Device()
		p.slots = append(p.slots, &slot{be: be, share: Share{GPU: d.UUID, Name: d.Name}, sinceAnchor: -1})
	}
	return p
}

// Open implements Executor: each slot prepares and then runs the
// reference on itself, every slot at once. Open returns once the first
// slot is ready (it also compiles for the run); each further slot joins
// the run when it is ready (Free), so a slow GPU delays only itself.
// Before, every preparation was waited for, then the reference ran on
// the first slot and its outputs went through the disk to the others.
func (p *Pool) Open(ctx context.Context, prob *backend.Problem, ref Reference) error {
	p.joins = make(chan joined, len(p.slots))
	p.firstPrepared = make(chan struct{})
	for i, s := range p.slots {
		s.opening = true
		p.opening++
		go func() {
			p.joins <- joined{i, p.open(ctx, i, s, prob, ref)}
		}()
	}
	for p.slots[0].opening {
		p.join(<-p.joins)
	}
	// A run whose context ended meanwhile says so itself.
	return p.openErr
}

// joined is a slot's preparation ended: ready, or err.
type joined struct {
	slot int
	err  error
}

// join takes a slot's preparation's end: the slot is ready, or leaves
// the run saying why.
func (p *Pool) join(j joined) {
	s := p.slots[j.slot]
	s.opening = false
	p.opening--
	if j.err != nil {
		s.share.Dropped = j.err.Error()
		if j.slot == 0 {
			p.openErr = j.err
		}
	}
}

// joinReady takes the preparations that have ended, without waiting;
// where no slot is free, no trial in flight and some slot still
// prepares, it waits for one.
func (p *Pool) joinReady() {
	for p.opening > 0 {
		select {
		case j := <-p.joins:
			p.join(j)
			continue
		default:
		}
		if p.inflight > 0 || p.free() > 0 {
			return
		}
		p.join(<-p.joins)
	}
}

// open prepares slot i and runs ref on it. A reference that fails on
// the first slot is the run's error as it is (a *ConfigError of the
// driver's stays one); on a further slot it names the GPU.
func (p *Pool) open(ctx context.Context, i int, s *slot, prob *backend.Problem, ref Reference) error {
	defer trace.Step("prepare", "executor", "slot "+strconv.Itoa(i)+" ("+s.share.GPU+") prepared, its reference run", time.Now())
	err := s.be.Prepare(ctx, prob)
	if i == 0 {
		close(p.firstPrepared)
	}
	if err != nil {
		if len(p.slots) > 1 {
			return fmt.Errorf("preparing the kernel arguments on %s: %w", s.share.GPU, err)
		}
		return fmt.Errorf("preparing the kernel arguments: %w", err)
	}
	if ref == nil {
		return nil
	}
	// The reference is compiled by the first slot's backend, against
	// the problem it prepared: every slot's waits for it.
	select {
	case <-p.firstPrepared:
	case <-ctx.Done():
		return ctx.Err()
	}
	err = ref(ctx, s.be)
	if err != nil && i > 0 {
		return fmt.Errorf("the reference run on %s: %w", s.share.GPU, err)
	}
	return err
}

// Free implements Executor. A slot still preparing joins here once
// ready; where none is free, no trial is in flight and a slot still
// prepares, Free waits for it.
func (p *Pool) Free() int {
	p.joinReady()
	return p.free()
}

func (p *Pool) free() int {
	n := 0
	for _, s := range p.slots {
		if !s.busy && !s.opening && s.share.Dropped == "" {
			n++
		}
	}
	return n
}

// Live implements Executor: slots still preparing count.
func (p *Pool) Live() int {
	n := 0
	for _, s := range p.slots {
		if s.share.Dropped == "" {
			n++
		}
	}
	return n
}

// Submit implements Executor: the trial runs on the lowest free slot, in
// a goroutine of its own.
func (p *Pool) Submit(ctx context.Context, t Trial) {
	for i, s := range p.slots {
		if s.busy || s.opening || s.share.Dropped != "" {
			continue
		}
		s.busy = true
		p.inflight++
		anchor := p.anchorDue(s)
		go func() {
			var a *AnchorRun
			if anchor != nil {
				t0 := time.Now()
				res, err := s.be.Run(ctx, anchor)
				a = &AnchorRun{Result: res, Err: err, Wall: time.Since(t0)}
			}
			t0 := time.Now()
			res, err := s.be.Run(ctx, t.Plan)
			p.out <- Outcome{Trial: t, Result: res, Err: err, Slot: i, GPU: s.share.GPU, Host: p.host, Wall: time.Since(t0), Anchor: a, ended: ctx.Err() != nil}
		}()
		return
	}
	panic("executor: Submit without a free slot")
}

// SetAnchor implements Executor.
func (p *Pool) SetAnchor(plan *backend.Plan, every int) {
	p.anchor, p.every = plan, max(1, every)
}

// anchorDue gives the anchor plan where slot s is due to measure it
// before its next trial (its first; then the 2nd, 4th, 8th, ... trial
// since its last, up to the every-th), and counts the trial; nil
// otherwise. Called by Submit: the slot's count is the driver's
// goroutine's alone.
func (p *Pool) anchorDue(s *slot) *backend.Plan {
	if p.anchor == nil {
		return nil
	}
	if s.sinceAnchor < 0 || s.sinceAnchor >= min(p.every, 1<<s.anchors) {
		s.sinceAnchor = 1
		s.anchors++
		plan := *p.anchor
		return &plan
	}
	s.sinceAnchor++
	return nil
}

// Wait implements Executor: slots that join meanwhile are taken in.
func (p *Pool) Wait() Outcome {
	if p.inflight == 0 {
		panic("executor: Wait without a trial in flight")
	}
	for {
		if o, ok := p.Await(); ok {
			return o
		}
	}
}

// Await implements Executor. An error of Run that is not the plan's (not
// a compile or binary error, and the context still live) is the slot's:
// it comes back as a *SlotError.
func (p *Pool) Await() (Outcome, bool) {
	if p.inflight == 0 && p.opening == 0 {
		panic("executor: Await without a trial in flight or a slot being prepared")
	}
	var o Outcome
	for received := false; !received; {
		select {
		case o = <-p.out:
			received = true
		case j := <-p.joins: // nil, never ready, before Open
			p.join(j)
			return Outcome{Slot: j.slot, GPU: p.slots[j.slot].share.GPU, Host: p.host}, false
		}
	}
	p.inflight--
	s := p.slots[o.Slot]
	s.busy = false
	s.share.Busy += o.Wall
	if o.Anchor != nil {
		s.share.Busy += o.Anchor.Wall
	}
	if o.Err != nil && !o.ended && slotFailure(o.Err) {
		s.failures++
		se := &SlotError{Slot: o.Slot, GPU: s.share.GPU, Err: o.Err}
		if s.failures >= MaxFailures || len(p.slots) == 1 {
			s.share.Dropped = fmt.Sprintf("%d failures in a row, the last: %v", s.failures, o.Err)
			se.Dropped, se.Last = true, p.Live() == 0
		}
		o.Err = se
		return o, true
	}
	if o.Err == nil {
		s.failures = 0
		s.share.Evaluated++
	}
	return o, true
}

// slotFailure tells a slot's failure from the plan's own.
func slotFailure(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := errors.AsType[*backend.CompileError](err); ok {
		return false
	}
	_, ok := errors.AsType[*backend.BinaryError](err)
	return !ok
}

// Shares implements Executor.
func (p *Pool) Shares() []Share {
	out := make([]Share, len(p.slots))
	for i, s := range p.slots {
		out[i] = s.share
	}
	return out
}

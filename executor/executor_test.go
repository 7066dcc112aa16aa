package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// gate is a GPU whose Run returns what the test sends on its channel,
// when the test sends it: the test decides the order trials end in.
type gate struct {
	backend.Backend // only Device and Run are called
	uuid            string
	answers         chan error
}

func (g *gate) Device() device.Description {
	return device.Description{Name: "GPU", Local: device.Local{UUID: g.uuid}}
}

func (g *gate) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	if err := <-g.answers; err != nil {
		return nil, err
	}
	return &backend.Result{Status: backend.StatusValid, TimesMs: []float64{1}}, nil
}

func gates(n int) ([]*gate, []backend.Backend) {
	var gs []*gate
	var bes []backend.Backend
	for i := range n {
		g := &gate{uuid: fmt.Sprintf("GPU-%d", i), answers: make(chan error, 8)}
		gs, bes = append(gs, g), append(bes, g)
	}
	return gs, bes
}

// Trials go to the lowest free slot and come back in the order they end,
// each with its slot's GPU; the shares count them.
func TestPoolCompletionOrder(t *testing.T) {
	gs, bes := gates(3)
	p := NewPool(bes...)
	ctx := context.Background()
	for i := range 3 {
		p.Submit(ctx, Trial{ID: i + 1, Index: 10 + i, Plan: &backend.Plan{}})
	}
	if p.Free() != 0 || p.Live() != 3 {
		t.Fatalf("free %d live %d after 3 trials on 3 slots", p.Free(), p.Live())
	}
	gs[2].answers <- nil
	o := p.Wait()
	if o.Trial.ID != 3 || o.Slot != 2 || o.GPU != "GPU-2" || o.Err != nil || o.Result.Status != backend.StatusValid {
		t.Fatalf("first outcome %+v, want trial 3 on GPU-2", o)
	}
	// The slot freed is the one taken next.
	p.Submit(ctx, Trial{ID: 4, Plan: &backend.Plan{}})
	gs[2].answers <- nil
	gs[0].answers <- nil
	gs[1].answers <- nil
	seen := map[int]string{}
	for range 3 {
		o := p.Wait()
		seen[o.Trial.ID] = o.GPU
	}
	if seen[4] != "GPU-2" || seen[1] != "GPU-0" || seen[2] != "GPU-1" {
		t.Errorf("trials on %v", seen)
	}
	sh := p.Shares()
	if sh[0].Evaluated != 1 || sh[1].Evaluated != 1 || sh[2].Evaluated != 2 {
		t.Errorf("shares %+v", sh)
	}
}

// A slot's failure comes back as a *SlotError; MaxFailures in a row drop
// the slot, a success between them resets the count. A plan's own
// failure (a compile or binary error) is not the slot's.
func TestPoolSlotFailures(t *testing.T) {
	gs, bes := gates(2)
	p := NewPool(bes...)
	ctx := context.Background()
	died := errors.New("GPU worker died")
	run := func(answer error) Outcome {
		p.Submit(ctx, Trial{ID: 1, Plan: &backend.Plan{}})
		gs[0].answers <- answer
		return p.Wait()
	}
	for _, answer := range []error{died, died, nil, &backend.CompileError{Log: "x"}, &backend.BinaryError{Err: errors.New("bad image")}, died, died} {
		o := run(answer)
		se, slot := errors.AsType[*SlotError](o.Err)
		if slot != (answer == died) || (slot && (se.Dropped || se.GPU != "GPU-0")) {
			t.Fatalf("answer %v: outcome error %#v", answer, o.Err)
		}
	}
	o := run(died)
	se, _ := errors.AsType[*SlotError](o.Err)
	if se == nil || !se.Dropped || se.Last || p.Live() != 1 || p.Free() != 1 {
		t.Fatalf("third failure in a row: %#v, live %d", o.Err, p.Live())
	}
	if d := p.Shares()[0].Dropped; !strings.Contains(d, "3 failures in a row, the last: GPU worker died") {
		t.Errorf("dropped: %q", d)
	}
	// The dropped slot is never taken again.
	p.Submit(ctx, Trial{ID: 2, Plan: &backend.Plan{}})
	gs[1].answers <- nil
	if o := p.Wait(); o.Slot != 1 || o.Err != nil {
		t.Errorf("after the drop: %+v", o)
	}
}

// A pool of one slot drops it at its first failure (retrying one GPU is
// its worker's business), and says it was the last; an error after the
// run's context ended is not the slot's.
func TestPoolOfOne(t *testing.T) {
	gs, bes := gates(1)
	p := NewPool(bes...)
	ctx, cancel := context.WithCancel(context.Background())
	p.Submit(ctx, Trial{ID: 1, Plan: &backend.Plan{}})
	cancel()
	gs[0].answers <- errors.New("worker killed")
	if o := p.Wait(); o.Err == nil || p.Live() != 1 {
		t.Fatalf("cancelled: %v, live %d", o.Err, p.Live())
	} else if _, slot := errors.AsType[*SlotError](o.Err); slot {
		t.Fatalf("an error after the context ended counted against the slot: %v", o.Err)
	}
	p.Submit(context.Background(), Trial{ID: 2, Plan: &backend.Plan{}})
	gs[0].answers <- errors.New("GPU fell off the bus")
	se, _ := errors.AsType[*SlotError](p.Wait().Err)
	if se == nil || !se.Dropped || !se.Last || p.Live() != 0 || p.Free() != 0 {
		t.Fatalf("one slot failing: %#v, live %d", se, p.Live())
	}
}

// prepGate is a gate whose Prepare waits for hold (nil: does not wait),
// then fails with err (nil: succeeds), counting its calls.
type prepGate struct {
	*gate
	hold     chan struct{}
	err      error
	prepared atomic.Int32
}

func (g *prepGate) Prepare(ctx context.Context, p *backend.Problem) error {
	if g.hold != nil {
		<-g.hold
	}
	g.prepared.Add(1)
	return g.err
}

// Open prepares every slot once and runs the reference on each, and
// returns once the first slot is ready: a slot still preparing joins
// when it is ready, a further slot that fails leaves the run (its share
// says why); the first slot's failure is the run's.
func TestPoolOpen(t *testing.T) {
	gs, _ := gates(3)
	hold := make(chan struct{})
	ps := []*prepGate{{gate: gs[0]}, {gate: gs[1], err: errors.New("out of memory")}, {gate: gs[2], hold: hold}}
	p := NewPool(ps[0], ps[1], ps[2])
	var mu sync.Mutex
	refOn := map[backend.Backend]int{}
	err := p.Open(context.Background(), &backend.Problem{}, func(ctx context.Context, be backend.Backend) error {
		mu.Lock()
		refOn[be]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Slot 2 still prepares: only the first slot serves.
	if f := p.Free(); f != 1 || p.Live() < 2 {
		t.Fatalf("while slot 2 prepares: free %d live %d", f, p.Live())
	}
	close(hold)
	for deadline := time.Now().Add(5 * time.Second); p.Free() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("slot 2 never joined")
		}
		time.Sleep(time.Millisecond)
	}
	for i, g := range ps {
		if g.prepared.Load() != 1 {
			t.Errorf("slot %d prepared %d times", i, g.prepared.Load())
		}
	}
	mu.Lock()
	if refOn[ps[0]] != 1 || refOn[ps[2]] != 1 || refOn[ps[1]] != 0 {
		t.Errorf("the reference ran %d, %d, %d times on the slots (want 1, 0, 1)", refOn[ps[0]], refOn[ps[1]], refOn[ps[2]])
	}
	mu.Unlock()
	sh := p.Shares()
	if p.Live() != 2 || p.Free() != 2 || sh[1].Dropped != "preparing the kernel arguments on GPU-1: out of memory" || sh[0].Dropped != "" {
		t.Errorf("live %d free %d, shares %+v", p.Live(), p.Free(), sh)
	}
	// Trials skip the dropped slot.
	p.Submit(context.Background(), Trial{ID: 1, Plan: &backend.Plan{}})
	p.Submit(context.Background(), Trial{ID: 2, Plan: &backend.Plan{}})
	gs[2].answers <- nil
	if o := p.Wait(); o.Slot != 2 {
		t.Errorf("second trial on slot %d, want 2", o.Slot)
	}
	gs[0].answers <- nil
	p.Wait()

	first := NewPool(&prepGate{gate: gs[0], err: errors.New("no device")}, &prepGate{gate: gs[2]})
	if err := first.Open(context.Background(), &backend.Problem{}, nil); err == nil || !strings.Contains(err.Error(), "on GPU-0: no device") {
		t.Errorf("the first slot failing: %v", err)
	}
}

// A further slot's reference waits for the first slot's preparation:
// the run compiles on the first slot's backend, against the problem it
// prepared.
func TestPoolReferenceAfterFirstPrepared(t *testing.T) {
	gs, _ := gates(2)
	hold := make(chan struct{})
	ps := []*prepGate{{gate: gs[0], hold: hold}, {gate: gs[1]}}
	p := NewPool(ps[0], ps[1])
	var mu sync.Mutex
	var order []string
	ref := func(ctx context.Context, be backend.Backend) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, fmt.Sprintf("reference on %s after %d preparations of the first", be.Device().UUID, ps[0].prepared.Load()))
		return nil
	}
	done := make(chan error)
	go func() { done <- p.Open(context.Background(), &backend.Problem{}, ref) }()
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	early := len(order)
	mu.Unlock()
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for p.Free() < 2 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if early != 0 || len(order) != 2 || order[0] != "reference on GPU-0 after 1 preparations of the first" && order[0] != "reference on GPU-1 after 1 preparations of the first" {
		t.Errorf("%d references before the first slot was prepared; then %q", early, order)
	}
}

// With no slot free and no trial in flight, Free waits for a slot still
// preparing; a further slot's failing reference names its GPU.
func TestPoolFreeWaitsForJoin(t *testing.T) {
	gs, _ := gates(3)
	hold := make(chan struct{})
	ps := []*prepGate{{gate: gs[0]}, {gate: gs[1], hold: hold}, {gate: gs[2]}}
	p := NewPool(ps[0], ps[1], ps[2])
	err := p.Open(context.Background(), &backend.Problem{}, func(ctx context.Context, be backend.Backend) error {
		if be == ps[2] {
			return errors.New("reference configuration 1: launch failed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range MaxFailures { // the first slot leaves the run
		p.Submit(context.Background(), Trial{ID: 1, Plan: &backend.Plan{}})
		gs[0].answers <- errors.New("GPU fell off the bus")
		p.Wait()
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(hold)
	}()
	if f := p.Free(); f != 1 {
		t.Fatalf("free %d once slot 1 joined, want 1", f)
	}
	sh := p.Shares()
	if sh[1].Dropped != "" || sh[2].Dropped != "the reference run on GPU-2: reference configuration 1: launch failed" || p.Live() != 1 {
		t.Errorf("live %d, shares %+v", p.Live(), sh)
	}
}

// keyed is a GPU that answers at once and records the plan key of each
// Run, in order.
type keyed struct {
	backend.Backend
	runs []string
}

func (k *keyed) Device() device.Description { return device.Description{Name: "GPU"} }

func (k *keyed) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	k.runs = append(k.runs, p.Key)
	return &backend.Result{Status: backend.StatusValid, TimesMs: []float64{1}}, nil
}

// With an anchor set, a slot measures it before its next trial, then
// 2, 4, 8 and every 8 trials later; each outcome carries the anchor run
// before it, and its wall time counts in the slot's share.
func TestPoolAnchor(t *testing.T) {
	k := &keyed{}
	p := NewPool(k)
	ctx := context.Background()
	p.SetAnchor(&backend.Plan{Key: "A"}, 8)
	anchored := 0
	for i := range 30 {
		p.Submit(ctx, Trial{ID: i + 1, Plan: &backend.Plan{Key: fmt.Sprint(i + 1)}})
		if o := p.Wait(); o.Anchor != nil {
			anchored++
			if o.Anchor.Err != nil || o.Anchor.Result.Status != backend.StatusValid {
				t.Errorf("trial %d: anchor %+v", o.Trial.ID, o.Anchor)
			}
		}
	}
	var before []string // the trials an anchor came before
	for i, key := range k.runs {
		if key == "A" {
			before = append(before, k.runs[i+1])
		}
	}
	if want := "1 3 7 15 23"; strings.Join(before, " ") != want || anchored != 5 || p.Shares()[0].Evaluated != 30 {
		t.Errorf("anchors before trials %v (%d outcomes with one), want %s; %d evaluated", before, anchored, want, p.Shares()[0].Evaluated)
	}
}

// Await gives a slot that joins while a trial is in flight at once (a
// trial that warms a GPU up would otherwise hold it for a minute), and
// the trial's outcome when it ends; Wait takes joins in and gives
// outcomes only.
func TestPoolAwaitJoin(t *testing.T) {
	gs, _ := gates(2)
	hold := make(chan struct{})
	ps := []*prepGate{{gate: gs[0]}, {gate: gs[1], hold: hold}}
	p := NewPool(ps[0], ps[1])
	if err := p.Open(context.Background(), &backend.Problem{}, nil); err != nil {
		t.Fatal(err)
	}
	if p.Free() != 1 {
		t.Fatalf("free %d before slot 1 joins", p.Free())
	}
	p.Submit(context.Background(), Trial{ID: 1, Plan: &backend.Plan{}}) // slot 0: no answer yet
	close(hold)
	o, ended := p.Await()
	if ended || o.Slot != 1 || o.GPU != "GPU-1" || p.Free() != 1 {
		t.Fatalf("the join: %+v ended %v, free %d", o, ended, p.Free())
	}
	p.Submit(context.Background(), Trial{ID: 2, Plan: &backend.Plan{}}) // slot 1
	gs[1].answers <- nil
	if o, ended := p.Await(); !ended || o.Trial.ID != 2 || o.Slot != 1 {
		t.Fatalf("trial 2: %+v ended %v", o, ended)
	}
	gs[0].answers <- nil
	if o := p.Wait(); o.Trial.ID != 1 || o.Slot != 0 || p.Free() != 2 {
		t.Fatalf("trial 1: %+v, free %d", o, p.Free())
	}
}

package cuda

import (
	"testing"
	"time"
)

// fakeGPU is a driver whose events finish when the test says: marks
// recorded in order, done the first finished of them.
type fakeGPU struct {
	next     uintptr
	recorded []uintptr
	done     int
}

func (g *fakeGPU) driver() *driver {
	return &driver{
		cuEventCreate:  func(ev *uintptr, _ uint32) cuResult { g.next++; *ev = g.next; return cuSuccess },
		cuEventDestroy: func(uintptr) cuResult { return cuSuccess },
		cuEventRecord:  func(ev, _ uintptr) cuResult { g.recorded = append(g.recorded, ev); return cuSuccess },
		cuEventQuery: func(ev uintptr) cuResult {
			for _, e := range g.recorded[:g.done] {
				if e == ev {
					return cuSuccess
				}
			}
			return cuErrorNotReady
		},
	}
}

// TestLoadWaitsForAGPUBehindTheEstimate: a launch estimated at 1 µs on
// a GPU that finishes nothing queues maxBatchesAhead batches and no
// more, however long Pump is called; as batches finish, as many more
// are queued.
func TestLoadWaitsForAGPUBehindTheEstimate(t *testing.T) {
	g := &fakeGPU{}
	launches := 0
	l, err := newLoad(g.driver(), func() error { launches++; return nil }, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	batch := int(batchTime / time.Microsecond)
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if err := l.Pump(); err != nil {
			t.Fatal(err)
		}
	}
	if launches != maxBatchesAhead*batch || len(l.marks) != maxBatchesAhead {
		t.Fatalf("a GPU that finishes nothing: %d launches queued, %d batches unfinished; want %d, %d", launches, len(l.marks), maxBatchesAhead*batch, maxBatchesAhead)
	}
	g.done = 1 + 3 // the start event and three batches
	if err := l.Pump(); err != nil {
		t.Fatal(err)
	}
	if launches != (maxBatchesAhead+3)*batch || len(l.marks) != maxBatchesAhead || g.next != uintptr(2+maxBatchesAhead) {
		t.Fatalf("three batches finished: %d launches, %d unfinished, %d events made; want %d, %d, %d (the finished batches' events reused)",
			launches, len(l.marks), g.next, (maxBatchesAhead+3)*batch, maxBatchesAhead, 2+maxBatchesAhead)
	}
	l.Close()
}

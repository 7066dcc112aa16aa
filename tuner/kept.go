package tuner

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/emulate"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/store"
)

// EmulatedWork is the work of configuration cfg of s from emulating its
// first thread blocks in the PTX text (emulate.JobWork: a sample of
// consecutive blocks, their footprint in global memory, scaled to the
// grid), with registers per thread from s's Gtune.Simulation where it
// declares them, else 32 (the compiler allots them after PTX: callers
// that know them set them). It returns the blocks' counts too. Errors:
// the configuration's job, and emulate.JobWork's.
func EmulatedWork(s *spec.Spec, cfg []expr.Value, text []byte) (*backend.Work, *emulate.Counts, error) {
	j, err := s.Job(cfg)
	if err != nil {
		return nil, nil, err
	}
	prob, err := s.Problem()
	if err != nil {
		return nil, nil, err
	}
	w, c, err := emulate.JobWork(text, prob.Kernels[0], j)
	if err != nil {
		return nil, nil, err
	}
	w.Registers = 32
	if j.Work != nil && j.Work.Registers > 0 {
		w.Registers = j.Work.Registers
	}
	return &w, c, nil
}

// Kept is the work of configurations from the PTX kept in a results
// database (KeptWork).
type Kept struct {
	Work    map[int]*backend.Work // by configuration number
	Missing int                   // configurations whose PTX none kept
	// Failed are the configurations the emulator could not run, each
	// error naming the configuration and the run that kept its PTX.
	Failed       map[int]error
	Instructions int64         // thread instructions emulated
	Emulation    time.Duration // summed over the blocks
	Wall         time.Duration // on Workers CPUs
	Workers      int
}

// KeptWork is the work of configurations idx of s's space sp from
// emulating the first thread blocks of the PTX kept in db (store.PTXOf:
// the newest evaluation of s that compiled it) with that evaluation's
// registers where known (EmulatedWork otherwise), on every CPU: one
// block takes milliseconds to a second, and a space has thousands of
// configurations (performance-projection-heterogeneous-gpus.md section
// IV-C). Each worker reads its configuration's PTX itself, so that no
// more than one text per CPU is held. Errors: the database's.
func KeptWork(db *store.DB, s *spec.Spec, sp *space.Space, idx []int) (*Kept, error) {
	k := &Kept{Work: map[int]*backend.Work{}, Failed: map[int]error{}, Workers: runtime.NumCPU()}
	t0 := time.Now()
	var mu sync.Mutex
	var dbErr error
	ch := make(chan int)
	var wg sync.WaitGroup
	for range k.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				key := sp.Key(i)
				p, err := db.PTXOf(s.Hash, key)
				if errors.Is(err, store.ErrNotFound) {
					mu.Lock()
					k.Missing++
					mu.Unlock()
					continue
				}
				if err != nil {
					mu.Lock()
					dbErr = cmpErr(dbErr, err)
					mu.Unlock()
					continue
				}
				e0 := time.Now()
				w, c, err := EmulatedWork(s, sp.Values(i), p.PTX)
				took := time.Since(e0)
				mu.Lock()
				if err != nil {
					k.Failed[i] = fmt.Errorf("the PTX of %s kept by run %d: %w", key, p.RunID, err)
				} else {
					if p.Registers > 0 {
						w.Registers = p.Registers
					}
					k.Work[i] = w
					for _, n := range c.ThreadInstructions {
						k.Instructions += n
					}
					k.Emulation += took
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range idx {
		ch <- i
	}
	close(ch)
	wg.Wait()
	k.Wall = time.Since(t0)
	return k, dbErr
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

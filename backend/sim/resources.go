package sim

import (
	"context"
	"fmt"

	"github.com/gtune/gtune/backend"
)

var _ backend.ResourceReporter = (*Sim)(nil)

// Resources reports what the simulated compile allotted to b: the
// registers per thread and static shared memory per thread block (bytes)
// of the configuration's Work, exactly as the spec's Gtune.Simulation
// section evaluated them, no local memory, and the largest thread block
// those registers allow (as Run reports it). Nothing is launched and no
// time passes. Errors: a cancelled context, a closed backend, or a binary
// this simulated device's Compile did not make (naming j.Key).
func (s *Sim) Resources(ctx context.Context, j *backend.Job, b *backend.Binary) (backend.Resources, error) {
	if err := ctx.Err(); err != nil {
		return backend.Resources{}, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return backend.Resources{}, errClosed
	}
	img, err := s.decode(b)
	if err != nil {
		key := ""
		if j != nil {
			key = j.Key
		}
		return backend.Resources{}, fmt.Errorf("configuration %s: %w", key, err)
	}
	return backend.Resources{
		Registers:          img.Work.Registers,
		SharedStaticBytes:  img.Work.SharedMemory,
		MaxThreadsPerBlock: img.MaxThreadsPerBlock,
	}, nil
}

package sim

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// Resources reports exactly the Work's registers and static shared
// memory, and the same four quantities Run reports for the binary.
func TestResourcesAreTheWork(t *testing.T) {
	s := newSim(t, "h100_sxm", Options{Seed: 1})
	for _, w := range []backend.Work{
		{Flops: 1e9, Bytes: 1e8, Registers: 40, SharedMemory: 1024, Efficiency: 1},
		{Flops: 1e9, Bytes: 1e8, Registers: 255, SharedMemory: 0, Efficiency: 1},
		{Flops: 1e9, Bytes: 1e8, Registers: 96, SharedMemory: 48 << 10, Efficiency: 1},
	} {
		tj := job("k", 1024, 128, w)
		j := tj.Job
		b, err := s.Compile(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Resources(ctx, j, b)
		if err != nil {
			t.Fatal(err)
		}
		if r.Registers != w.Registers || r.SharedStaticBytes != w.SharedMemory || r.LocalBytes != 0 {
			t.Errorf("work %+v: resources %+v", w, r)
		}
		res, err := s.Run(ctx, tj.Plan(b))
		if err != nil {
			t.Fatal(err)
		}
		l := res.Launches[0]
		got := backend.Resources{Registers: l.Registers, SharedStaticBytes: l.SharedStaticBytes, LocalBytes: l.LocalBytes, MaxThreadsPerBlock: l.MaxThreadsPerBlock}
		if r != got {
			t.Errorf("work %+v: Resources %+v, Run %+v", w, r, got)
		}
	}
	// 255 registers per thread: 64 Ki registers per block allow 256 threads.
	j := job("k255", 1, 32, backend.Work{Registers: 255, Efficiency: 1}).Job
	b, _ := s.Compile(ctx, j)
	if r, err := s.Resources(ctx, j, b); err != nil || r.MaxThreadsPerBlock != 256 {
		t.Errorf("255 registers: %+v, %v; want 256 threads per block", r, err)
	}
}

// A binary of another simulated device is refused, naming the
// configuration.
func TestResourcesForeignBinary(t *testing.T) {
	a100 := newSim(t, "a100_40gb", Options{})
	h100 := newSim(t, "h100_sxm", Options{})
	j := job("8,8,2", 1, 64, backend.Work{Registers: 32, Efficiency: 1}).Job
	b, err := a100.Compile(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h100.Resources(ctx, j, b)
	if err == nil || !strings.Contains(err.Error(), "configuration 8,8,2: sim: binary was compiled for a100_40gb, this is h100_sxm") {
		t.Errorf("got %v", err)
	}
}

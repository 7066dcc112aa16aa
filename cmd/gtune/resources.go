package main

import (
	"fmt"
	"strings"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/strategy"
)

// matchDevice finds the device-database entry of a GPU by the product
// name its driver reports ("NVIDIA H100 80GB HBM3" is h100_sxm); case and
// surrounding space are ignored. An unknown name is an error listing the
// known ones.
func matchDevice(name string) (*device.Description, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	var known []string
	for _, d := range device.All() {
		if strings.ToLower(d.Name) == want {
			return d, nil
		}
		known = append(known, fmt.Sprintf("%q (%s)", d.Name, d.ID))
	}
	return nil, fmt.Errorf("GPU %q is not in the device database (known: %s)", name, strings.Join(known, ", "))
}

// occupancyTarget gives the occupancy-guided strategies the GPU's
// description (the simulated GPU's own, or the database entry matching
// the real GPU's name) and each configuration's launch geometry from the
// spec.
func occupancyTarget(be backend.Backend, s *spec.Spec, sp *space.Space) (*strategy.Target, error) {
	var d *device.Description
	if sb, ok := be.(*sim.Sim); ok {
		desc := sb.Description()
		d = &desc
	} else {
		var err error
		if d, err = matchDevice(be.Device().Name); err != nil {
			return nil, err
		}
	}
	return &strategy.Target{Device: d, Geometry: func(i int) (int, int, error) {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return j.Block[0] * j.Block[1] * j.Block[2], j.Grid[0] * j.Grid[1] * j.Grid[2], nil
	}}, nil
}

// declaredResources gives a configuration's registers per thread and
// shared memory per thread block (static + dynamic, bytes: occupancy
// counts both) from the spec's Gtune.Simulation Registers and
// SharedMemory expressions. On the simulated GPU these are what it
// simulates (Registers defaults to 32 there); on a real GPU they are the
// spec's declaration, required: without a Registers expression it
// returns nil, and the occupancy-guided strategies say that the spec must
// declare them.
func declaredResources(be backend.Backend, s *spec.Spec, sp *space.Space) func(int) (int, int, error) {
	if s.Simulation == nil {
		return nil
	}
	if _, isSim := be.(*sim.Sim); !isSim && s.Simulation.Registers == nil {
		return nil
	}
	return func(i int) (int, int, error) {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			return 0, 0, err
		}
		return j.Work.Registers, j.Work.SharedMemory + j.DynamicSharedBytes, nil
	}
}

package backend

import "github.com/gtune/gtune/device"

// Optional capabilities of a Backend, found by interface assertion:
// code outside cmd never asks which concrete backend it has.
//
//   - ResourceReporter (backend.go): a compiled configuration's registers
//     and shared memory without a launch.
//   - Simulator: the GPU is a model of a device-database description.

// Simulator is a backend whose GPU is a model of a device-database
// description (backend/sim): its description is exact (not matched by
// the driver's name), its GPU settings are applied to a simulated control
// surface of that description (gpuctl) rather than through NVML, and the
// resources a spec declares for it (Gtune.Simulation) are what it runs.
type Simulator interface {
	Backend
	// Description is the simulated device's description (a copy).
	Description() device.Description
	// Simulated marks the capability; it does nothing.
	Simulated()
}

package registry

import (
	"context"
	"fmt"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
)

// CUDADevices asks one CUDA worker per GPU of this host for its
// description; NVML (read-only) gives the count, so this process never
// creates a CUDA context. Errors: no driver, a GPU whose worker does not
// start (the GPUs described before it are returned).
func CUDADevices(ctx context.Context) ([]backend.DeviceInfo, error) {
	n, err := Kind{Name: "cuda"}.Count()
	if err != nil {
		return nil, err
	}
	var devs []backend.DeviceInfo
	for i := 0; i < n; i++ {
		b, err := cuda.Open(ctx, i, cuda.Options{})
		if err != nil {
			return devs, fmt.Errorf("GPU %d: %w", i, err)
		}
		devs = append(devs, b.Device().Local)
		b.Close()
	}
	return devs, nil
}

// SimulatedDevices are the GPUs the simulator can be (the CUDA GPUs of
// the device database of compute capability 3.0 and above), each as the
// simulated GPU of a run describes itself, with its device-database id
// (what --sim-device takes), in the database's order.
func SimulatedDevices() ([]backend.DeviceInfo, []string) {
	var devs []backend.DeviceInfo
	var ids []string
	for _, d := range device.All() {
		if !d.IsCUDA() || d.ComputeMajor < 3 {
			continue // the simulator models CUDA GPUs of CC >= 3.0
		}
		devs = append(devs, sim.New(d, sim.Options{}).Device().Local)
		ids = append(ids, d.ID)
	}
	return devs, ids
}

package registry

import (
	"context"
	"fmt"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
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

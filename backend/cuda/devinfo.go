package cuda

import (
	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/nvml"
)

// CUdevice_attribute values (cuda.h) for the occupancy limits that
// device.FromLocal takes from the driver.
const (
	attrWarpSize                  = 10
	attrMaxRegistersPerBlock      = 12
	attrL2CacheSize               = 38
	attrMaxThreadsPerSM           = 39
	attrMaxSharedPerSM            = 81
	attrMaxRegistersPerSM         = 82
	attrMaxBlocksPerSM            = 106
	attrReservedSharedMemPerBlock = 111
)

// describeLimits fills info's occupancy limits from cuDeviceGetAttribute
// (0 where the driver does not answer).
func (w *worker) describeLimits(info *backend.DeviceInfo) {
	info.WarpSize = w.attr(attrWarpSize)
	info.MaxRegistersPerBlock = w.attr(attrMaxRegistersPerBlock)
	info.L2Bytes = int64(w.attr(attrL2CacheSize))
	info.MaxThreadsPerSM = w.attr(attrMaxThreadsPerSM)
	info.SharedMemoryPerBlock = w.attr(attrMaxSharedPerBlock)
	info.SharedMemoryPerSM = w.attr(attrMaxSharedPerSM)
	info.RegistersPerSM = w.attr(attrMaxRegistersPerSM)
	info.SharedMemoryPerBlockOptin = w.attr(attrMaxSharedPerBlockOptin)
	info.MaxBlocksPerSM = w.attr(attrMaxBlocksPerSM)
	info.ReservedSharedMemoryPerBlock = w.attr(attrReservedSharedMemPerBlock)
}

// describeClocks fills info's default power limit and supported clocks
// from NVML, read-only.
func describeClocks(nd nvml.Device, info *backend.DeviceInfo) {
	if v, err := nd.DefaultPowerLimitMW(); err == nil {
		info.DefaultPowerLimitW = float64(v) / 1000
	}
	mems, err := nd.SupportedMemoryClocksMHz()
	if err != nil {
		return
	}
	for _, m := range mems {
		cs, err := nd.SupportedGraphicsClocksMHz(m)
		if err != nil || len(cs) == 0 {
			continue
		}
		if info.SupportedClocksMHz == nil {
			info.SupportedClocksMHz = map[int][]int{}
		}
		for _, c := range cs {
			info.SupportedClocksMHz[int(m)] = append(info.SupportedClocksMHz[int(m)], int(c))
		}
	}
}

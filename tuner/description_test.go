package tuner

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// nameOnly is a backend that reports only its GPU's name and state, as a
// replay of a recorded run does (cache.Replay); nothing else is called.
type nameOnly struct {
	backend.Backend
	d device.Description
}

func (b nameOnly) Device() device.Description { return b.d }

// A backend that reports only a GPU's name gets the device database's
// description of it, with its own state kept (a replayed H100 has the
// H100's SMs and peaks, so occupancy and the projection work on it); a
// name the database does not know is an error listing the known ones.
func TestDescriptionOfANameOnly(t *testing.T) {
	local := device.Local{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-recorded"}
	d, err := Description(nameOnly{d: device.Description{Name: local.Name, Local: local}})
	if err != nil || d.ID != "h100_sxm" || d.SMs != 132 || d.PeakFP32GFLOPS != 66900 || d.Local.UUID != "GPU-recorded" {
		t.Fatalf("%+v, %v", d, err)
	}
	_, err = Description(nameOnly{d: device.Description{Local: device.Local{Name: "Some GPU 9000"}}})
	if err == nil || !strings.Contains(err.Error(), `GPU "Some GPU 9000" is not in the device database`) || !strings.Contains(err.Error(), "h100_sxm") {
		t.Errorf("unknown GPU: %v", err)
	}
}

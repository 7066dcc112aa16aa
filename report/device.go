package report

import (
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/store"
)

// DeviceRef is how every JSON document of gtune names a GPU, the same
// object everywhere: a GPU a run measured on (backend, name, UUID, driver;
// with State, what the backend read of it when the run started: clocks,
// power limit, limits), or a device-database entry (ID and name).
type DeviceRef struct {
	Backend string        `json:"backend,omitempty"` // cuda, sim, replay
	ID      string        `json:"id,omitempty"`      // device-database entry
	Name    string        `json:"name"`
	UUID    string        `json:"uuid,omitempty"`
	Driver  string        `json:"driver,omitempty"`
	State   *device.Local `json:"state,omitempty"`
}

// LocalRef names the GPU a backend opened, with its state.
func LocalRef(l device.Local) DeviceRef {
	return DeviceRef{Backend: l.Backend, Name: l.Name, UUID: l.UUID, Driver: l.Driver, State: &l}
}

// RunRef names the GPU a stored run measured on.
func RunRef(r *store.Run) DeviceRef {
	return DeviceRef{Backend: r.Backend, Name: r.DeviceName, UUID: r.DeviceUUID, Driver: r.Driver}
}

// EntryRef names a device-database entry.
func EntryRef(d *device.Description) DeviceRef { return DeviceRef{ID: d.ID, Name: d.Name} }

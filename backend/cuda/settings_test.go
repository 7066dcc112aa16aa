package cuda

import (
	"context"
	"testing"

	"github.com/gtune/gtune/backend"
)

// A plan that names GPU settings is refused, before any worker is asked,
// by a backend opened without Options.AllowSettings.
func TestRunRefusesSettingsWithoutPermission(t *testing.T) {
	b := &Backend{} // no worker: the refusal must come first
	j := &tjob{Job: &backend.Job{Key: "256,1410"}, Settings: &backend.Settings{CoreClockMHz: 1410}}
	res, err := b.Run(context.Background(), j.Plan(&backend.Binary{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.StatusLaunchFailed || res.Reason != backend.SettingsRefused {
		t.Fatalf("result %+v", res)
	}
}

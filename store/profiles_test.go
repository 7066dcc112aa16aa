package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Device profiles round-trip; the newest measured one per device is the
// latest, a simulated one never is; bad profiles are refused.
func TestDeviceProfiles(t *testing.T) {
	db := openTemp(t)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	add := func(dev, source string, at time.Time, fp32 float64) *Profile {
		t.Helper()
		js, _ := json.Marshal(map[string]any{"device": dev, "fp32_gflops": fp32})
		p := &Profile{Device: dev, Name: strings.ToUpper(dev), Source: source, MeasuredAt: at, JSON: js}
		if err := db.AddProfile(p); err != nil || p.ID == 0 || p.Host == "" {
			t.Fatalf("AddProfile: %v, %+v", err, p)
		}
		return p
	}
	add("h100_sxm", "measured", t0, 60000)
	newer := add("h100_sxm", "measured", t0.Add(time.Hour), 61000)
	add("h100_sxm", "simulated", t0.Add(2*time.Hour), 66900)
	h200 := add("h200", "measured", t0, 62000)
	all, err := db.Profiles()
	if err != nil || len(all) != 4 || all[0].Source != "simulated" || all[3].Device == "" {
		t.Fatalf("Profiles: %v, %d", err, len(all))
	}
	latest, err := db.LatestProfiles()
	if err != nil || len(latest) != 2 || latest["h100_sxm"].ID != newer.ID || latest["h200"].ID != h200.ID {
		t.Fatalf("LatestProfiles: %v %+v", err, latest)
	}
	var back map[string]any
	if err := json.Unmarshal(latest["h100_sxm"].JSON, &back); err != nil || back["fp32_gflops"] != 61000.0 || !latest["h100_sxm"].MeasuredAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("round trip: %v %v at %v", err, back, latest["h100_sxm"].MeasuredAt)
	}
	for _, bad := range []*Profile{{Device: "", Source: "measured", JSON: []byte("{}")}, {Device: "x", Source: "measured", JSON: []byte("{")}} {
		if err := db.AddProfile(bad); err == nil {
			t.Errorf("AddProfile(%+v) accepted", bad)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/store"
)

// gtune probe on the simulated GPU prints and stores its profile; a
// simulated profile is not a measured one for devices --all, a measured
// one is shown with its date.
func TestProbeAndDevicesAll(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	code, out, errs := gtune(t, "probe", "--backend", "sim", "--sim-device", "a100_40gb", "--db", db, "--json", "--iterations", "3")
	var doc struct {
		Profile struct {
			Device, Source string
			FP32GFLOPS     float64 `json:"fp32_gflops"`
			Memory         []struct {
				BlocksPerSM int     `json:"blocks_per_sm"`
				ReadGBs     float64 `json:"read_gbs"`
			}
		}
		Specification struct {
			FP32GFLOPS float64 `json:"fp32_gflops"`
		}
		Stored int64
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("probe: exit %d: %s %s", code, out, errs)
	}
	p := doc.Profile
	if p.Device != "a100_40gb" || p.Source != "simulated" || doc.Stored != 1 || len(p.Memory) != 4 || p.Memory[3].BlocksPerSM != 8 ||
		p.FP32GFLOPS <= 0.8*doc.Specification.FP32GFLOPS || p.FP32GFLOPS > doc.Specification.FP32GFLOPS {
		t.Fatalf("profile %+v, specification %+v, stored %d", p, doc.Specification, doc.Stored)
	}
	if !strings.Contains(errs, "probe: fp32") {
		t.Errorf("no progress lines: %s", errs)
	}
	code, out, _ = gtune(t, "probe", "--backend", "sim", "--sim-device", "a100_40gb", "--db", db, "--iterations", "3", "--no-progress")
	if code != 0 || !strings.Contains(out, "device profile of Simulated NVIDIA A100-PCIE-40GB (SIM-a100_40gb): simulated") ||
		!strings.Contains(out, "stored as device profile 2 in ") {
		t.Fatalf("probe table: exit %d:\n%s", code, out)
	}
	d, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.AddProfile(&store.Profile{Device: "h200", Name: "NVIDIA H200", Source: "measured", MeasuredAt: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), JSON: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	code, out, errs = gtune(t, "devices", "--all", "--db", db, "--json")
	var all []struct {
		ID, Profile string
	}
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil {
		t.Fatalf("devices --all: exit %d: %s", code, errs)
	}
	seen := map[string]string{}
	for _, e := range all {
		seen[e.ID] = e.Profile
	}
	if seen["h200"] != "measured 2026-11-20" || seen["a100_40gb"] != "specification" {
		t.Errorf("profiles %v", seen)
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	if code, out, _ = gtune(t, "devices", "--all", "--db", missing); code != 0 || !strings.Contains(out, "specification") {
		t.Errorf("devices --all without a database: exit %d", code)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("devices --all created %s", missing)
	}
}

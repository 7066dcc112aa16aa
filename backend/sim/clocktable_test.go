package sim

import (
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/device"
)

// TestSettingsClockTable: the SM clock is resolved among the clocks
// supported at the memory clock asked for.
func TestSettingsClockTable(t *testing.T) {
	d, err := device.Lookup("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	dc := *d
	dc.ClockTables = []device.ClockTable{{MemoryClockMHz: 2619, CoreClocksMHz: d.CoreClocksMHz}, {MemoryClockMHz: 1593, CoreClocksMHz: []int{1200, 1000, 800}}}
	s := New(&dc, Options{Noise: -1})
	w := &backend.Work{Bytes: 1e9, Registers: 32}
	j := &backend.Job{Key: "x", Grid: [3]int{132 * 8, 1, 1}, Block: [3]int{256, 1, 1}}
	set := &backend.Settings{MemClockMHz: 1593}
	p, err := s.predict(w, j, set)
	if err != nil || p.SMClockMHz != 1200 || p.MemClockMHz != 1593 {
		t.Errorf("memory 1593 MHz alone: %d/%d MHz, %v; want 1200/1593", p.SMClockMHz, p.MemClockMHz, err)
	}
	set.CoreClockMHz = 950
	if p, err = s.predict(w, j, set); err != nil || p.SMClockMHz != 1000 {
		t.Errorf("SM 950 at memory 1593 MHz: %d MHz, %v; want 1000", p.SMClockMHz, err)
	}
	set.CoreClockMHz = 1980
	if _, err = s.predict(w, j, set); err == nil || !strings.Contains(err.Error(), "SM clock at memory clock 1593 MHz 1980 MHz outside the supported 800–1200 MHz") {
		t.Errorf("SM 1980 at memory 1593 MHz: %v", err)
	}
}

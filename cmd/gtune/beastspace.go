package main

import (
	"io"
	"time"

	"github.com/gtune/gtune/beast"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/report"
)

// beastSpaces are the declared (BEAST-style) search spaces gtune ships,
// by the name --beast takes.
var beastSpaces = map[string]func(*device.Description) (*beast.Space, error){
	"dgemm": beast.DGEMM,
}

// runBeastSpace counts (and lists) a declared search space for a device
// of the device database: autotuning-gemm-energy-beast.md's DGEMM space
// (Figure 3, section 2.3.2), whose constraints read the device's
// limits.
func runBeastSpace(out io.Writer, name, deviceID string, list, asJSON bool) error {
	mk, ok := beastSpaces[name]
	if !ok {
		return badInput("--beast %q: unknown declared space (known: dgemm)", name)
	}
	if deviceID == "" {
		return badInput("--beast %s needs --sim-device, a device-database id (gtune devices --all lists them)", name)
	}
	d, err := device.Lookup(deviceID)
	if err != nil {
		return inputError{err}
	}
	s, err := mk(d)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var cfgs [][]expr.Value
	n := 0
	err = s.Each(func(cfg []expr.Value) bool {
		n++
		if list {
			cfgs = append(cfgs, append([]expr.Value(nil), cfg...))
		}
		return true
	})
	if err != nil {
		return err
	}
	return report.BeastSpace(out, name, d, s.Names(), n, cfgs, time.Since(t0), list, asJSON)
}

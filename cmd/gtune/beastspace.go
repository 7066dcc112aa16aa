package main

import (
	"io"
	"time"

	"github.com/gtune/gtune/beast"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/report"
)

// runBeastSpace counts (and lists) a declared search space for a device
// of the device database: autotuning-gemm-energy-beast.md's DGEMM space
// (Figure 3, section 2.3.2), whose constraints read the device's
// limits.
func runBeastSpace(out io.Writer, name, deviceID string, list, asJSON bool) error {
	mk, ok := beast.Declared[name]
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
	n, cfgs, err := s.Collect(list)
	if err != nil {
		return err
	}
	return report.BeastSpace(out, name, d, s.Names(), n, cfgs, time.Since(t0), list, asJSON)
}

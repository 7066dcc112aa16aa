package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gtune/gtune/beast"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
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
		return badInput("--beast %s needs --device, a device-database id (gtune devices --all lists them)", name)
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
	elapsed := time.Since(t0)
	names := s.Names()
	switch {
	case asJSON:
		doc := map[string]any{"beast": name, "device": d.ID, "parameters": names, "valid": n, "build_ms": float64(elapsed.Microseconds()) / 1000}
		if list {
			rows := make([]map[string]any, len(cfgs))
			for i, cfg := range cfgs {
				m := map[string]any{}
				for j, v := range cfg {
					m[names[j]] = v.GoValue()
				}
				rows[i] = m
			}
			doc["configurations"] = rows
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case list:
		w := csv.NewWriter(out)
		if err := w.Write(names); err != nil {
			return err
		}
		row := make([]string, len(names))
		for _, cfg := range cfgs {
			for j, v := range cfg {
				row[j] = v.String()
			}
			if err := w.Write(row); err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	}
	fmt.Fprintf(out, "%s on %s: %d iterators, %d valid configurations (enumerated in %s)\n", name, d.Name, len(names), n, elapsed.Round(time.Microsecond))
	return nil
}

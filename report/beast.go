package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/expr"
)

// BeastSpace prints a declared (BEAST) search space enumerated on device
// d: its iterators' names and the number of valid configurations n (and
// the time the enumeration took), or with list every configuration cfgs
// (CSV, or inside the JSON document with asJSON).
func BeastSpace(out io.Writer, name string, d *device.Description, names []string, n int, cfgs [][]expr.Value, elapsed time.Duration, list, asJSON bool) error {
	switch {
	case asJSON:
		doc := map[string]any{"beast": name, "device": EntryRef(d), "parameters": names, "valid": n, "elapsed_s": elapsed.Seconds()}
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

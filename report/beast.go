package report

import (
	"encoding/csv"
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
		// Fields in the order of their names, as the map it replaced.
		var doc struct {
			Beast          string           `json:"beast"`
			Configurations []map[string]any `json:"configurations,omitempty"`
			Device         DeviceRef        `json:"device"`
			ElapsedS       float64          `json:"elapsed_s"`
			Parameters     []string         `json:"parameters"`
			Valid          int              `json:"valid"`
		}
		doc.Beast, doc.Device, doc.Parameters, doc.Valid, doc.ElapsedS = name, EntryRef(d), names, n, elapsed.Seconds()
		if list {
			doc.Configurations = make([]map[string]any, len(cfgs))
			for i, cfg := range cfgs {
				m := map[string]any{}
				for j, v := range cfg {
					m[names[j]] = v.GoValue()
				}
				doc.Configurations[i] = m
			}
		}
		return WriteJSON(out, doc)
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

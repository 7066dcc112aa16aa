package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"time"

	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

// Space prints a spec's search space: its size (raw and valid
// configurations, parameters, restrictions, build time), or with list
// every valid configuration (CSV, or inside the JSON document with
// asJSON). s is nil for a workload's combined space (list only).
func Space(out io.Writer, s *spec.Spec, sp *space.Space, elapsed time.Duration, list, asJSON bool) error {
	switch {
	case asJSON:
		// Fields in the order of their names, as the map it replaced.
		var doc struct {
			Configurations []map[string]any `json:"configurations,omitempty"`
			ElapsedS       float64          `json:"elapsed_s"`
			Kernel         string           `json:"kernel,omitempty"`
			Parameters     any              `json:"parameters"`
			Raw            float64          `json:"raw"`
			Restrictions   any              `json:"restrictions,omitempty"`
			Spec           string           `json:"spec,omitempty"`
			Valid          int              `json:"valid"`
		}
		doc.Raw, doc.Valid, doc.Parameters, doc.ElapsedS = sp.RawCount(), sp.Len(), paramDoc(sp), elapsed.Seconds()
		if s != nil { // nil for a workload's combined space
			doc.Spec, doc.Kernel, doc.Restrictions = s.Path, s.KernelName, restrictionDoc(s)
		}
		if list {
			doc.Configurations = make([]map[string]any, sp.Len())
			for i := range doc.Configurations {
				m := map[string]any{}
				for j, v := range sp.Values(i) {
					m[sp.Params()[j].Name] = v.GoValue()
				}
				doc.Configurations[i] = m
			}
		}
		return WriteJSON(out, doc)
	case list:
		w := csv.NewWriter(out)
		head := make([]string, len(sp.Params()))
		for i, p := range sp.Params() {
			head[i] = p.Name
		}
		if err := w.Write(head); err != nil {
			return err
		}
		row := make([]string, len(head))
		for i := 0; i < sp.Len(); i++ {
			for j, v := range sp.Values(i) {
				row[j] = v.String()
			}
			if err := w.Write(row); err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	default:
		fmt.Fprintf(out, "%s: %d tunable parameters, %d restrictions\n", s.Path, len(sp.Params()), len(s.Restrictions))
		fmt.Fprintf(out, "raw configurations:   %.0f\n", sp.RawCount())
		fmt.Fprintf(out, "valid configurations: %d\n", sp.Len())
		fmt.Fprintf(out, "built in %s\n", elapsed.Round(time.Microsecond))
		return nil
	}
}

func paramDoc(sp *space.Space) []map[string]any {
	var ps []map[string]any
	for _, p := range sp.Params() {
		vals := make([]any, len(p.Values))
		for i, v := range p.Values {
			vals[i] = v.GoValue()
		}
		ps = append(ps, map[string]any{"name": p.Name, "values": vals})
	}
	return ps
}

func restrictionDoc(s *spec.Spec) []string {
	var rs []string
	for _, r := range s.Restrictions {
		rs = append(rs, r.Source)
	}
	return rs
}

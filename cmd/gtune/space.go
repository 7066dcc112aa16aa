package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

func newSpaceCmd() *cobra.Command {
	var list, asJSON bool
	var maxConfigs int
	var beastName, deviceID string
	c := &cobra.Command{
		Use:   "space SPEC | space --beast NAME --device ID",
		Short: "Count (and list) the valid configurations of a kernel specification, or of a declared space (--beast dgemm)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if beastName != "" {
				if len(args) > 0 {
					return badInput("give a SPEC or --beast, not both")
				}
				return runBeastSpace(cmd.OutOrStdout(), beastName, deviceID, list, asJSON)
			}
			if len(args) != 1 {
				return badInput("space needs a SPEC (or --beast NAME --device ID)")
			}
			s, err := spec.LoadWith(args[0], spec.LoadOptions{NoSource: true})
			if err != nil {
				return err
			}
			t0 := time.Now()
			sp, err := buildSpace(cmd.Context(), s, maxConfigs)
			if err != nil {
				return err
			}
			elapsed := time.Since(t0)
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				doc := map[string]any{
					"spec": s.Path, "kernel": s.KernelName,
					"raw": sp.RawCount(), "valid": sp.Len(),
					"parameters":   paramDoc(sp),
					"build_ms":     float64(elapsed.Microseconds()) / 1000,
					"restrictions": restrictionDoc(s),
				}
				if list {
					cfgs := make([]map[string]any, sp.Len())
					for i := range cfgs {
						m := map[string]any{}
						for j, v := range sp.Values(i) {
							m[sp.Params()[j].Name] = v.GoValue()
						}
						cfgs[i] = m
					}
					doc["configurations"] = cfgs
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
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
		},
	}
	c.Flags().BoolVar(&list, "list", false, "print every valid configuration (CSV, or inside the JSON document with --json)")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON document")
	addMaxConfigsFlag(c.Flags(), &maxConfigs)
	c.Flags().StringVar(&beastName, "beast", "", "a declared search space instead of a SPEC: dgemm (autotuning-gemm-energy-beast.md, Figure 3)")
	c.Flags().StringVar(&deviceID, "device", "", "with --beast: the device-database id whose limits the constraints read, e.g. h100_sxm")
	return c
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

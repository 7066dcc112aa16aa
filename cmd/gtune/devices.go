package main

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/store"
)

func newDevicesCmd() *cobra.Command {
	var asJSON, all bool
	var dbPath string
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the GPUs (or, without a CUDA driver, the simulated ones); --all lists the device database",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all {
				db := device.All()
				measured, err := store.MeasuredProfiles(dbPath)
				if err != nil {
					return err
				}
				if asJSON {
					type entry struct {
						*device.Description
						Profile string `json:"profile"`
					}
					out := make([]entry, len(db))
					for i, d := range db {
						out[i] = entry{d, cmp.Or(measured[d.ID], "specification")}
					}
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(out)
				}
				report.DeviceDatabase(cmd.OutOrStdout(), db, measured)
				return nil
			}
			var devs []backend.DeviceInfo
			var ids []string // device-database ids of simulated GPUs
			if err := cuda.Available(); err == nil {
				devs, err = registry.CUDADevices(cmd.Context())
				if err != nil {
					return err
				}
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "gtune: no CUDA driver here; listing the simulated GPUs: choose one with --sim-device ID, the simulated GPU of a run is always --device 0 (gtune tune --backend cuda says why there is no driver)")
				for _, d := range device.All() {
					if !d.IsCUDA() || d.ComputeMajor < 3 {
						continue // the simulator models CUDA GPUs of CC >= 3.0
					}
					devs = append(devs, sim.New(d, sim.Options{}).Device().Local)
					ids = append(ids, d.ID)
				}
			}
			if asJSON {
				refs := make([]report.DeviceRef, len(devs))
				for i, d := range devs {
					refs[i] = report.LocalRef(d)
					if i < len(ids) {
						refs[i].ID = ids[i]
					}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(refs)
			}
			report.Devices(cmd.OutOrStdout(), devs, ids)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&all, "all", false, "list every GPU of the device database (the ids --sim-device takes) and which have a measured device profile (gtune probe) in --db")
	c.Flags().StringVar(&dbPath, "db", "gtune.db", "with --all: the results database whose device profiles are shown (left alone when it does not exist)")
	return c
}

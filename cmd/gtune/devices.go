package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"

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
				measured, err := measuredProfiles(dbPath)
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
				devs, err = listCUDADevices(cmd.Context())
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

// listCUDADevices asks one worker per GPU for its description; NVML
// (read-only) gives the count, so the parent never creates a CUDA context.
func listCUDADevices(ctx context.Context) ([]backend.DeviceInfo, error) {
	n, err := registry.Kind{Name: "cuda"}.Count()
	if err != nil {
		return nil, err
	}
	var devs []backend.DeviceInfo
	for i := 0; i < n; i++ {
		b, err := cuda.Open(ctx, i, cuda.Options{})
		if err != nil {
			return devs, fmt.Errorf("GPU %d: %w", i, err)
		}
		devs = append(devs, b.Device().Local)
		b.Close()
	}
	return devs, nil
}

// measuredProfiles gives, by device id, "measured DATE" for each GPU with
// a profile measured on a real GPU in the database at path; an empty map
// where the file does not exist (it is not created).
func measuredProfiles(path string) (map[string]string, error) {
	out := map[string]string{}
	// An empty file holds no profile (it was a database to be): read as
	// absent, not written to make it one.
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return out, nil
	}
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, inputError{err}
	}
	defer db.Close()
	latest, err := db.LatestProfiles()
	if err != nil {
		return nil, err
	}
	for id, p := range latest {
		out[id] = "measured " + p.MeasuredAt.UTC().Format("2006-01-02")
	}
	return out, nil
}

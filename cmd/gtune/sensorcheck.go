package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/registry"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/internal/flagrange"
	"github.com/gtune/gtune/measure"
	"github.com/gtune/gtune/report"
)

func init() { subcommands = append(subcommands, newSensorCheckCmd) }

func newSensorCheckCmd() *cobra.Command {
	var dev int
	var be, simDev string
	var asJSON bool
	c := &cobra.Command{
		Use:   "sensor-check",
		Short: "Measure the GPU's energy sensors and say which method to trust for which window length",
		Long: `sensor-check measures, read-only, the energy counter's update period and step, the power-sample
buffer's spacing and depth, and a pulsed load (busy 25 ms of every 100 ms) seen by the counter, the
sample buffer and the polled instantaneous power; then a continuous load split into single counter
periods. It runs in the CUDA worker; on the simulated GPU it exercises the simulated sensors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var r *measure.SensorReport
			var ref report.DeviceRef // the GPU checked, as every command's JSON names it
			d, err := chooseSimulated(cmd, be, simDev, dev, "checking")
			if err != nil {
				return err
			}
			if d != nil {
				sb := sim.New(d, sim.Options{})
				ref = report.LocalRef(sb.Device().Local)
				ref.ID = d.ID
				if r, err = sb.SensorCheck(measure.SensorCheckOptions{}); err != nil {
					return err
				}
			} else {
				if err := cuda.Available(); err != nil {
					return fmt.Errorf("--backend cuda: %w", err)
				}
				b, err := cuda.Open(cmd.Context(), dev, cuda.Options{Stderr: cmd.ErrOrStderr()})
				if err != nil {
					return err
				}
				defer b.Close()
				ref = report.LocalRef(b.Device().Local)
				if r, err = b.SensorCheck(cmd.Context(), measure.SensorCheckOptions{}); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				doc := report.JSONSafe(r)
				doc["device"] = ref
				return enc.Encode(doc)
			}
			report.SensorReport(cmd.OutOrStdout(), r)
			return nil
		},
	}
	f := c.Flags()
	flagrange.Int(f, &dev, "device", 0, 0, 1023, "CUDA device index")
	f.StringVar(&be, "backend", "auto", "auto, cuda or sim")
	f.StringVar(&simDev, "sim-device", "h100_sxm", "device-database id of the simulated GPU")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// chooseSimulated resolves --backend for a command that drives one GPU
// directly (sensor-check, probe): the simulated GPU --sim-device (for
// "sim", or "auto" without a CUDA driver, said on stderr with verb), or
// nil for the CUDA GPU. Errors are bad input: an unknown backend, an
// unknown device, --device other than 0 on the simulator.
func chooseSimulated(cmd *cobra.Command, backendFlag, simDevice string, deviceIndex int, verb string) (*device.Description, error) {
	// These commands drive one GPU's sensors or probes: no projection.
	if backendFlag == "model" {
		return nil, badInput("unknown backend %q (valid: auto, cuda, sim)", backendFlag)
	}
	k, err := registry.Resolve(backendFlag)
	if err != nil {
		return nil, badInput("unknown backend %q (valid: auto, cuda, sim)", backendFlag)
	}
	if k.Fallback {
		fmt.Fprintf(cmd.ErrOrStderr(), "gtune: no CUDA driver here; %s the simulated GPU %s (--backend cuda says why)\n", verb, simDevice)
	}
	if !k.Modelled {
		return nil, nil
	}
	if deviceIndex != 0 {
		return nil, badInput("--device %d: the simulated GPU is device 0 (choose its model with --sim-device)", deviceIndex)
	}
	return registry.SimulatedGPU(simDevice, nil)
}

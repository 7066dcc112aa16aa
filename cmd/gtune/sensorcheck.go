package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/sim"
	"github.com/gtune/gtune/device"
	"github.com/gtune/gtune/measure"
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
			useSim := be == "sim"
			switch be {
			case "cuda", "sim":
			case "auto":
				if err := cuda.Available(); err != nil {
					useSim = true
					fmt.Fprintf(cmd.ErrOrStderr(), "gtune: no CUDA driver here; checking the simulated GPU %s\n", simDev)
				}
			default:
				return badInput("unknown backend %q (valid: auto, cuda, sim)", be)
			}
			if useSim {
				d, err := device.Lookup(simDev)
				if err != nil {
					return inputError{err}
				}
				if r, err = sim.New(d, sim.Options{}).SensorCheck(measure.SensorCheckOptions{}); err != nil {
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
				if r, err = b.SensorCheck(cmd.Context(), measure.SensorCheckOptions{}); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(jsonSafe(r))
			}
			writeSensorReport(cmd.OutOrStdout(), r)
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&dev, "device", 0, "CUDA device index")
	f.StringVar(&be, "backend", "auto", "auto, cuda or sim")
	f.StringVar(&simDev, "sim-device", "h100_sxm", "device-database id of the simulated GPU")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// jsonSafe turns a struct into a map by its json tags, NaN becoming null
// (encoding/json refuses NaN).
func jsonSafe(v any) map[string]any {
	out := map[string]any{}
	rv := reflect.Indirect(reflect.ValueOf(v))
	for i := 0; i < rv.NumField(); i++ {
		tag := strings.Split(rv.Type().Field(i).Tag.Get("json"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		f := rv.Field(i).Interface()
		if x, ok := f.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			f = nil
		}
		out[tag] = f
	}
	return out
}

func writeSensorReport(w io.Writer, r *measure.SensorReport) {
	na := func(format string, x float64) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return fmt.Sprintf(format, x)
	}
	fmt.Fprintf(w, "device: %s\n", r.Device)
	fmt.Fprintf(w, "energy counter: updates every %.1f ms (sd %.2f ms), median step %.0f mJ at idle (smallest %.0f mJ), read %.1f µs; idle %.1f W\n",
		1e3*r.CounterPeriodS, 1e3*r.CounterPeriodStdS, r.CounterStepMJ, r.CounterMinStepMJ, 1e6*r.CounterReadS, r.IdlePowerW)
	if r.SamplesAvailable {
		fmt.Fprintf(w, "power samples: every %.1f ms, %d held, %.2f s deep\n", 1e3*r.SampleSpacingS, r.SampleCount, r.SampleDepthS)
	} else {
		fmt.Fprintln(w, "power samples: not available")
	}
	fmt.Fprintf(w, "pulsed load (busy %.0f ms of every %.0f ms, %.2f s): counter %.3f J, sample buffer %s J (%s), polled power %s J (%s, %d readings)\n",
		1e3*r.PulseBusyS, 1e3*r.PulsePeriodS, r.PulseSpanS, r.CounterEnergyJ, na("%.3f", r.SampleEnergyJ), na("%+.1f %%", 100*r.SampleErrorRel),
		na("%.3f", r.PolledEnergyJ), na("%+.1f %%", 100*r.PolledErrorRel), r.PolledReadings)
	fmt.Fprintf(w, "continuous load: %.1f W; single counter periods CV %.2f %% (%.2f %% with the mean period; %d periods); sample buffer vs counter %s\n",
		r.SteadyPowerW, 100*r.SteadyPeriodCV, 100*r.SteadyPeriodCVMean, r.SteadyPeriods, na("%+.2f %%", 100*r.SteadySampleRel))
	fmt.Fprintln(w, "which method to trust:")
	for _, a := range r.Advice {
		fmt.Fprintf(w, "  - %s\n", a)
	}
}

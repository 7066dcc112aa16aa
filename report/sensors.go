package report

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/gtune/gtune/measure"
)

// JSONSafe turns a struct into a map by its json tags, NaN becoming null
// (encoding/json refuses NaN).
func JSONSafe(v any) map[string]any {
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

// SensorReport prints what sensor-check measured of the energy sensors
// and its advice on which method to trust for which window length.
func SensorReport(w io.Writer, r *measure.SensorReport) {
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

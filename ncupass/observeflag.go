package ncupass

import (
	"strings"

	"github.com/gtune/gtune/internal/badinput"
)

// ParseObserve reads --observe: "" (none), "ncu" (DefaultMetrics) or
// "ncu:METRIC,..." (those, ncu's names). Errors (bad input): another
// observer name, an empty metric name or one with a space.
func ParseObserve(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	name, list, hasList := strings.Cut(v, ":")
	if name != "ncu" {
		return nil, badinput.New("--observe %q: the observer of a separate profiling pass is ncu (ncu or ncu:METRIC,...); measurements made with the timing are Gtune.Measurement.Observers", v)
	}
	if !hasList {
		return DefaultMetrics, nil
	}
	ms := strings.Split(list, ",")
	for _, m := range ms {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t") {
			return nil, badinput.New("--observe %q: a metric name is empty or has a space (ncu's names, such as dram__throughput.avg.pct_of_peak_sustained_elapsed)", v)
		}
	}
	return ms, nil
}

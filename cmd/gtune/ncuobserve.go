package main

import (
	"strings"

	"github.com/gtune/gtune/ncupass"
)

// parseObserve reads --observe: "" (none), "ncu" (ncupass.DefaultMetrics) or
// "ncu:METRIC,..." (those). Errors: another observer name, an empty
// metric name.
func parseObserve(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	name, list, hasList := strings.Cut(v, ":")
	if name != "ncu" {
		return nil, badInput("--observe %q: the observer of a separate profiling pass is ncu (ncu or ncu:METRIC,...); measurements made with the timing are Gtune.Measurement.Observers", v)
	}
	if !hasList {
		return ncupass.DefaultMetrics, nil
	}
	ms := strings.Split(list, ",")
	for _, m := range ms {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t") {
			return nil, badInput("--observe %q: a metric name is empty or has a space (ncu's names, such as dram__throughput.avg.pct_of_peak_sustained_elapsed)", v)
		}
	}
	return ms, nil
}

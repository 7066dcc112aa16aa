// Package trace writes how long the steps of a run took to standard
// error, for the topics GTUNE_TRACE names (comma-separated, e.g.
// GTUNE_TRACE=prepare): a diagnostic of where the time before and
// between measurements goes, off by default and free when off.
package trace

import (
	"fmt"
	"os"
	"strings"
	"time"
)

var topics = strings.Split(os.Getenv("GTUNE_TRACE"), ",")

// On reports whether GTUNE_TRACE names topic.
func On(topic string) bool {
	for _, t := range topics {
		if strings.TrimSpace(t) == topic {
			return true
		}
	}
	return false
}

// Step writes "gtune: trace: <who>: <step> <seconds> s" for topic's
// step, begun at t0, when GTUNE_TRACE names topic.
func Step(topic, who, step string, t0 time.Time) {
	if On(topic) {
		fmt.Fprintf(os.Stderr, "gtune: trace: %s: %s %.3f s\n", who, step, time.Since(t0).Seconds())
	}
}

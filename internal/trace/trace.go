// Package trace writes how long the steps of a run took to standard
// error, for the topics GTUNE_TRACE names (comma-separated, e.g.
// GTUNE_TRACE=prepare,compile): a diagnostic of where the time before
// and between measurements goes, off by default and free when off.
// Topics: prepare (the GPUs opened, the arguments, the reference run, the
// run's start), compile (each compile process's first compilation).
package trace

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

var (
	topics = strings.Split(os.Getenv("GTUNE_TRACE"), ",")
	// begun is about when the process started (this package's
	// initialisation): each step says when it ended on that clock.
	begun           = time.Now()
	out   io.Writer = os.Stderr
)

// On reports whether GTUNE_TRACE names topic.
func On(topic string) bool {
	for _, t := range topics {
		if strings.TrimSpace(t) == topic {
			return true
		}
	}
	return false
}

// Step writes "gtune: trace: <who>: <step> <seconds> s (at <seconds> s)"
// for topic's step, begun at t0, when GTUNE_TRACE names topic: how long
// it took, and when it ended since the process started.
func Step(topic, who, step string, t0 time.Time) {
	if On(topic) {
		fmt.Fprintf(out, "gtune: trace: %s: %s %.3f s (at %.3f s)\n", who, step, time.Since(t0).Seconds(), time.Since(begun).Seconds())
	}
}

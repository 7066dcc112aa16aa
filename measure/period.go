package measure

import (
	"sync"
	"time"
)

// maxGaps bounds what a PeriodEstimate keeps: the most recent gaps.
const maxGaps = 1024

// PeriodEstimate pools the gaps between consecutive energy-counter updates
// that one process has seen, to know the counter's update period better
// than one measurement can.
//
// Why it matters: a trial's mean power is its counter difference over
// its length, and the length is m update periods. The counter's energy
// steps come on a regular grid (on an H100 the step per 100 ms varied by
// 0.3 % under a steady load while the CPU saw the same updates 98–103 ms
// apart), but the instants at which a poll sees an update are late by a
// scheduling delay that grows when the CPU is busy compiling other
// configurations. Timing trials by the mean period between one
// measurement's first and latest detections carried that delay into the
// power: the same configuration measured 484, 521 and 493 W in three runs
// against a steady 500–506 W. A detection
// delay lengthens one gap and shortens the next by the same amount, so
// the median of many gaps is the period, unbiased and insensitive to
// the occasional long delay; the estimate improves with every
// measurement of the run.
//
// Assumption: gaps come from one counter of one GPU, consecutive updates
// only (a gap spanning two updates must not be added). Safe for
// concurrent use.
type PeriodEstimate struct {
	mu   sync.Mutex
	gaps []float64 // s
}

// Add records gaps between consecutive updates, s.
func (e *PeriodEstimate) Add(gaps ...float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gaps = append(e.gaps, gaps...)
	if n := len(e.gaps); n > maxGaps {
		e.gaps = append(e.gaps[:0], e.gaps[n-maxGaps:]...)
	}
}

// Period is the median of the gaps recorded, and how many there are; 0
// when none.
func (e *PeriodEstimate) Period() (time.Duration, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.gaps) == 0 {
		return 0, 0
	}
	return time.Duration(Median(e.gaps) * float64(time.Second)), len(e.gaps)
}

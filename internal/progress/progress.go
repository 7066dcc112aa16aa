// Package progress shows how far gtune's long steps are on stderr: a bar
// or spinner on a terminal, a plain line every PlainEvery otherwise (a
// log, CI, a batch job), nothing under Quiet.
package progress

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/tuner"
)

// runBar draws evaluations done/total, the ETA and the best so far on
// stderr. It draws nothing when stderr is not a terminal, so logs and CI
// output stay clean.
// When stderr is not a terminal (a log, CI, a batch job), a line every
// PlainEvery says how far the run is instead.
type runBar struct {
	w     io.Writer
	obj   objective.Objective
	bar   *progressbar.ProgressBar
	term  bool
	total int
	start time.Time
	last  time.Time
	gpus  int // GPUs of the run (tune --devices); the line gives their rate when several
}

// New draws a run's progress over gpus GPUs.
func New(w io.Writer, obj objective.Objective, gpus int) tuner.Progress {
	return &runBar{w: w, obj: obj, term: IsTerminal(w), gpus: gpus}
}

// Quiet, set by --quiet, silences progress of every kind on every
// command; results and errors are still printed.
var Quiet bool

// IsTerminal says whether w is a terminal (progress is drawn there).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Start implements tuner.Progress.
func (p *runBar) Start(total int) {
	p.total, p.start, p.last = total, time.Now(), time.Now()
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetVisibility(IsTerminal(p.w)),
		progressbar.OptionSetDescription("tuning"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionClearOnFinish(),
	)
}

// Step implements tuner.Progress.
func (p *runBar) Step(done int, best *tuner.Evaluation) {
	if p.bar == nil {
		return
	}
	if best != nil {
		p.bar.Describe(fmt.Sprintf("best %s %s %s", p.obj.Name, report.Format(best.Value), p.obj.Unit))
	}
	_ = p.bar.Set(done)
	if p.term || time.Since(p.last) < PlainEvery {
		return
	}
	p.last = time.Now()
	el := time.Since(p.start)
	line := fmt.Sprintf("gtune: tuning: %d of %d configurations, %s elapsed", done, p.total, el.Round(time.Second))
	if done > 0 && done < p.total {
		line += fmt.Sprintf(", about %s left", (time.Duration(float64(el) * float64(p.total-done) / float64(done))).Round(time.Second))
	}
	if p.gpus > 1 && el > 0 {
		rate := float64(done) / el.Seconds()
		line += fmt.Sprintf(", %.2f per second on %d GPUs (%.2f each)", rate, p.gpus, rate/float64(p.gpus))
	}
	if best != nil {
		line += fmt.Sprintf(", best %s %s %s", p.obj.Name, report.Format(best.Value), p.obj.Unit)
	}
	fmt.Fprintln(p.w, line)
}

// Finish implements tuner.Progress.
func (p *runBar) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// Activity shows a long step on stderr when it is a terminal: a bar of
// total steps, or a spinner with the elapsed time when total < 0. Redrawn
// at most five times a second; Finish clears it.
func Activity(w io.Writer, desc string, total int) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(IsTerminal(w) && !Quiet),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetWidth(24),
		progressbar.OptionClearOnFinish(),
	)
}

// PlainEvery is how often a long step says how far it is when stderr is
// not a terminal (a log, CI, a batch job): one line each time (a variable
// for the tests).
var PlainEvery = 10 * time.Second

// During runs f with a spinner described by desc on w (see Activity),
// redrawn while f runs; when w is not a terminal, a line every
// PlainEvery says the step is still going.
func During(w io.Writer, desc string, f func() error) error {
	st := StartStep(w, desc)
	err := f()
	st.Finish()
	return err
}

// Step is a long step shown on w: a spinner on a terminal, plain lines
// otherwise. Say replaces what the spinner or the next line tells.
type Step struct {
	w        io.Writer
	desc     string
	term     bool
	bar      *progressbar.ProgressBar
	start    time.Time
	done     chan struct{}
	mu       sync.Mutex
	detail   string
	lastLine time.Time
}

// StartStep shows a long step described by desc on w until Finish.
func StartStep(w io.Writer, desc string) *Step {
	if Quiet {
		w = io.Discard
	}
	s := &Step{w: w, desc: desc, term: IsTerminal(w), start: time.Now(), done: make(chan struct{})}
	s.lastLine = s.start
	s.bar = Activity(w, desc, -1)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.tick()
			}
		}
	}()
	return s
}

// Say sets the step's detail (e.g. a count and the time left).
func (s *Step) Say(detail string) {
	s.mu.Lock()
	s.detail = detail
	s.mu.Unlock()
}

func (s *Step) tick() {
	s.mu.Lock()
	detail := s.detail
	s.mu.Unlock()
	if s.term {
		if detail != "" {
			s.bar.Describe(s.desc + ": " + detail)
		}
		_ = s.bar.Add(1)
		return
	}
	if time.Since(s.lastLine) < PlainEvery {
		return
	}
	s.lastLine = time.Now()
	line := fmt.Sprintf("gtune: %s: %s elapsed", s.desc, time.Since(s.start).Round(time.Second))
	if detail != "" {
		line += ", " + detail
	}
	fmt.Fprintln(s.w, line)
}

// Elapsed is the time since the step started.
func (s *Step) Elapsed() time.Duration { return time.Since(s.start) }

// Finish ends the step's display.
func (s *Step) Finish() {
	close(s.done)
	_ = s.bar.Finish()
}

// SpaceDetail says how far a search space's construction is: partial
// configurations examined, the share of the search done and the time left
// at the rate so far.
func SpaceDetail(examined uint64, fraction float64, elapsed time.Duration) string {
	d := fmt.Sprintf("%.3g partial configurations examined", float64(examined))
	if fraction > 0 && fraction < 1 && !math.IsNaN(fraction) {
		left := time.Duration(float64(elapsed) * (1 - fraction) / fraction)
		d += fmt.Sprintf(", %.1f %% of the search, about %s left", 100*fraction, left.Round(time.Second))
	}
	return d
}

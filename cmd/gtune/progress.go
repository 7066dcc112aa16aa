package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/gtune/gtune/objective"
	"github.com/gtune/gtune/report"
	"github.com/gtune/gtune/tuner"
)

// barProgress draws evaluations done/total, the ETA and the best so far on
// stderr. It draws nothing when stderr is not a terminal, so logs and CI
// output stay clean.
type barProgress struct {
	w   io.Writer
	obj objective.Objective
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, obj objective.Objective) tuner.Progress {
	return &barProgress{w: w, obj: obj}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func (p *barProgress) Start(total int) {
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetVisibility(isTerminal(p.w)),
		progressbar.OptionSetDescription("tuning"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Step(done int, best *tuner.Evaluation) {
	if p.bar == nil {
		return
	}
	if best != nil {
		p.bar.Describe(fmt.Sprintf("best %s %s %s", p.obj.Name, report.Format(best.Value), p.obj.Unit))
	}
	_ = p.bar.Set(done)
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// activity shows a long step on stderr when it is a terminal: a bar of
// total steps, or a spinner with the elapsed time when total < 0. Redrawn
// at most five times a second; Finish clears it.
func activity(w io.Writer, desc string, total int) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(isTerminal(w)),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetWidth(24),
		progressbar.OptionClearOnFinish(),
	)
}

// during runs f with a spinner described by desc on w (see activity),
// redrawn while f runs.
func during(w io.Writer, desc string, f func() error) error {
	bar := activity(w, desc, -1)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = bar.Add(1)
			}
		}
	}()
	err := f()
	close(done)
	_ = bar.Finish()
	return err
}

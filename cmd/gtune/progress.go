package main

import (
	"fmt"
	"io"
	"os"

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

func (p *barProgress) Step(done int, best *tuner.Outcome) {
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

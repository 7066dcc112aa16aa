// Command report-check opens a gtune HTML report in headless Chromium
// (Debian's chromium package) and checks it as a reader's browser shows
// it: the page logs no console error and throws no exception, every
// section of report.Sections is there (report.BenchSection in a report
// of bench-strategies results alone), and every chart drew its data
// points (each chart's hover layer holds as many circles as its
// data-points attribute says, at least one). It screenshots each section
// into OUTDIR as NN-ID.png.
//
//	go run ./scripts/report-check report.html OUTDIR
//
// It exits 1 when a check fails and 2 when Chromium cannot be started.
// CHROMIUM names the browser (default: chromedp's search, which finds
// /usr/bin/chromium).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gtune/gtune/report"
)

// chartInfo is what the page says of one chart.
type chartInfo struct {
	Section  string `json:"section"`
	Declared int    `json:"declared"` // its data-points attribute
	Circles  int    `json:"circles"`  // hover circles in the DOM
	Paths    int    `json:"paths"`    // drawn SVG paths (axes, markers, lines)
	Width    int    `json:"width"`    // rendered size, CSS px
	Height   int    `json:"height"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: report-check REPORT.html OUTDIR")
		os.Exit(2)
	}
	problems, err := check(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "report-check:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println("FAIL:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Println("ok: no console error, every section present, every chart drew its points")
}

func check(page, outDir string) ([]string, error) {
	abs, err := filepath.Abs(page)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.WindowSize(1400, 1000), chromedp.NoSandbox)
	if p := os.Getenv("CHROMIUM"); p != "" {
		opts = append(opts, chromedp.ExecPath(p))
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// Subscribe before the page loads, collect in the background, and
	// stop when the checks are done (Console's iterator ends with its
	// context).
	cctx, stopConsole := context.WithCancel(ctx)
	defer stopConsole()
	messages := chromedp.Console(cctx)
	var problems []string
	var consoleProblems []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				consoleProblems = append(consoleProblems, "console "+m.String())
			}
		}
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady("body")); err != nil {
		return nil, err
	}
	sections, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("section")).map(s => s.id)`))
	if err != nil {
		return nil, err
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartInfo](`Array.from(document.querySelectorAll("div.chart")).map(c => {
		const r = c.getBoundingClientRect();
		return {section: c.closest("section").id, declared: +c.dataset.points,
			circles: c.querySelectorAll("svg.hover circle").length,
			paths: c.querySelectorAll("svg.plot path").length,
			width: Math.round(r.width), height: Math.round(r.height)};
	})`))
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range sections {
		have[s] = true
	}
	// A report of runs has every run section; one of bench-strategies
	// results alone has its own.
	want := report.Sections
	if !have["facts"] && have[report.BenchSection] {
		want = []string{report.BenchSection}
	}
	for _, s := range want {
		if !have[s] {
			problems = append(problems, "section "+s+" missing")
		}
	}
	for i, c := range charts {
		if c.Declared < 1 || c.Circles != c.Declared || c.Paths < 2 || c.Width < 100 || c.Height < 100 {
			problems = append(problems, fmt.Sprintf("chart %d in %s: %d points declared, %d hover circles, %d paths, %d×%d px", i+1, c.Section, c.Declared, c.Circles, c.Paths, c.Width, c.Height))
		}
	}
	fmt.Printf("%d sections, %d charts\n", len(sections), len(charts))
	for i, s := range sections {
		png, err := chromedp.Run(ctx, chromedp.Screenshot("section#"+s, chromedp.NodeVisible))
		if err != nil {
			return nil, fmt.Errorf("screenshot of %s: %w", s, err)
		}
		name := filepath.Join(outDir, fmt.Sprintf("%02d-%s.png", i+1, s))
		if err := os.WriteFile(name, png, 0o644); err != nil {
			return nil, err
		}
	}
	time.Sleep(200 * time.Millisecond) // the last console events in flight
	stopConsole()
	<-done
	return append(problems, consoleProblems...), nil
}

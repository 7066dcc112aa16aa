package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gtune/gtune/store"
)

// The report of a synthetic run: every section, one strip plot per
// parameter of a few values (block_size_x 6, tile 4, unroll 2) and a
// note for one of 40 values (a launch order's many), the date given.
func TestWriteHTMLSections(t *testing.T) {
	r := syntheticRun(120)
	for i, e := range r.Evals {
		e.Params = append(e.Params, store.Param{Name: "order", Value: fmt.Sprintf("o%d", i%40)})
	}
	var b strings.Builder
	if err := WriteHTML(&b, []HTMLRun{r}, nil, HTMLOptions{Generated: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range Sections {
		if !strings.Contains(page, `<section id="`+s+`">`) {
			t.Errorf("section %s missing", s)
		}
	}
	params := page[strings.Index(page, `<section id="parameters">`):strings.Index(page, `<section id="correlations">`)]
	if n := len(regexp.MustCompile(`<div class="chart"`).FindAllString(params, -1)); n != 3 {
		t.Errorf("%d parameter charts, want 3", n)
	}
	if !strings.Contains(params, "order: 40 values, too many to set side by side") {
		t.Error("no note for the parameter of 40 values")
	}
	if !strings.Contains(page, "2026-11-25 12:00 UTC") {
		t.Error("the date given is not printed")
	}
	if err := WriteHTML(&b, nil, nil, HTMLOptions{}); err == nil {
		t.Error("a report of nothing: no error")
	}
}

package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"strings"
	"unicode"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gtune/gtune/store"
)

// point is one chart point: data coordinates and what hovering it shows
// (a configuration, usually).
type point struct {
	X, Y  float64
	Label string
	// of and runName, when set, give the label instead: a
	// configuration's, written only for the points a chart shows.
	of      *store.Evaluation
	runName string
}

func (q point) label() string {
	if q.of != nil {
		return label(q.runName, q.of)
	}
	return q.Label
}

// series is one set of points of a chart, drawn as markers or as a line
// through them in order.
type series struct {
	Name   string
	Points []point
	Line   bool       // a line through the points in order, no markers
	Marked bool       // larger, filled markers (a Pareto front, a hull)
	Color  color.RGBA // zero: the palette's colour for the series' index
}

// chart is a two-dimensional plot of one or more series, rendered to an
// inline SVG by gonum/plot with an invisible overlay of one circle per
// point whose SVG <title> is the point's label: a browser shows it on
// hover, with no script.
type chart struct {
	Title, XLabel, YLabel string
	Series                []series
	// Marks are vertical lines at these x values, labelled (a ridge
	// frequency).
	Marks []point
	// NominalX and NominalY name the x or y positions 0, 1, ... (a
	// parameter's values, a bar chart's bars).
	NominalX, NominalY []string
	// Bars, when set, draws horizontal bars of these values at y 0, 1, ...
	// instead of the series.
	Bars   []float64
	Width  vg.Length // 0: 7.5 in
	Height vg.Length // 0: 4 in
}

// maxScatter is the most markers one series of a chart draws.
const maxScatter = 4000

// palette is Okabe and Ito's colour-blind-safe palette.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{230, 159, 0, 255}, {86, 180, 233, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
}

// hoverRecorder is an invisible plotter that records where its points
// land on the canvas, so that the overlay's circles sit on the markers.
type hoverRecorder struct {
	points []point
	out    *[]point // canvas coordinates (vg points, origin bottom left) and labels
}

func (h hoverRecorder) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, q := range h.points {
		if bad(q.X) || bad(q.Y) {
			continue
		}
		*h.out = append(*h.out, point{X: float64(tx(q.X)), Y: float64(ty(q.Y)), Label: q.label()})
	}
}

// The charts' text is sans serif, as the page's (gonum/plot reads its
// default font when a plot is made; the report is its only user here).
func init() { plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"} }

// trimmedTicks are gonum/plot's default ticks with trailing zeros cut
// from their labels: its fixed precision writes 2500.00 for a step of 2.5
// thousand.
type trimmedTicks struct{}

func (trimmedTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ts {
		if strings.Contains(t.Label, ".") && !strings.ContainsAny(t.Label, "eE") {
			ts[i].Label = strings.TrimSuffix(strings.TrimRight(t.Label, "0"), ".")
		}
	}
	return ts
}

// charWidth is about the mean width of a character of the charts' 12 pt
// titles and labels, for wrapping them.
const charWidth = vg.Length(7)

// wrap breaks s into lines of at most max characters where it can: after
// a space, a dot (not a decimal point) or an underscore run, which is where Nsight Compute's
// metric names (dram__throughput.avg.pct_of_peak_sustained_elapsed)
// part; a piece longer than max stays whole. gonum/plot draws each line.
func wrap(s string, max int) string {
	if max < 8 || len([]rune(s)) <= max {
		return s
	}
	var lines []string
	line, piece := "", ""
	flush := func() {
		if line != "" && len([]rune(line))+len([]rune(piece)) > max {
			lines = append(lines, strings.TrimRight(line, " "))
			line = ""
		}
		line += piece
		piece = ""
	}
	rs := []rune(s)
	for i, r := range rs {
		piece += string(r)
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		if r == ' ' || (r == '.' && !unicode.IsDigit(next)) || (r == '_' && next != '_') {
			flush()
		}
	}
	flush()
	return strings.Join(append(lines, line), "\n")
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

var (
	svgHeader = regexp.MustCompile(`(?s)^<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?`)
	svgXMLNS  = regexp.MustCompile(`\s+xmlns(:xlink)?="[^"]*"`)
)

// SVG renders c: the chart's SVG and the overlay, inside one positioned
// element. Errors come from gonum/plot (a series it cannot plot).
func (c chart) SVG() (template.HTML, error) {
	p := plot.New()
	p.Title.Text = wrap(c.Title, int(c.Width/charWidth))
	p.X.Label.Text = wrap(c.XLabel, int(c.Width/charWidth))
	p.Y.Label.Text = wrap(c.YLabel, int(c.Height/charWidth))
	p.X.Tick.Marker, p.Y.Tick.Marker = trimmedTicks{}, trimmedTicks{}
	p.Add(plotter.NewGrid())
	var hover []point
	rec := hoverRecorder{out: &hover}
	if c.Bars != nil {
		bars, err := plotter.NewBarChart(plotter.Values(c.Bars), vg.Points(8))
		if err != nil {
			return "", fmt.Errorf("report: chart %q: %w", c.Title, err)
		}
		bars.Horizontal = true
		bars.Color = palette[0]
		bars.LineStyle.Width = 0
		p.Add(bars)
		for i, v := range c.Bars {
			label := fmt.Sprintf("%.3f", v)
			if i < len(c.NominalY) {
				label = c.NominalY[i] + ": " + label
			}
			rec.points = append(rec.points, point{X: v, Y: float64(i), Label: label})
		}
	}
	if c.NominalY != nil {
		p.NominalY(c.NominalY...)
	}
	if c.NominalX != nil {
		p.NominalX(c.NominalX...)
	}
	thinned := 0
	var linePoints []point
	var legend []legendEntry
	for i, s := range c.Series {
		if !s.Line && !s.Marked && len(s.Points) > maxScatter {
			// A browser draws some thousands of markers briskly and a
			// hundred thousand not at all; every k-th one keeps the
			// cloud's shape (fronts and hulls are Marked: never thinned).
			k := (len(s.Points) + maxScatter - 1) / maxScatter
			var keep []point
			for j := 0; j < len(s.Points); j += k {
				keep = append(keep, s.Points[j])
			}
			thinned = max(thinned, k)
			s.Points = keep
		}
		xys := make(plotter.XYs, 0, len(s.Points))
		for _, q := range s.Points {
			if !bad(q.X) && !bad(q.Y) {
				xys = append(xys, plotter.XY{X: q.X, Y: q.Y})
			}
		}
		if len(xys) == 0 {
			continue
		}
		col := s.Color
		if col.A == 0 {
			col = palette[i%len(palette)]
		}
		if s.Line {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return "", fmt.Errorf("report: chart %q, %s: %w", c.Title, s.Name, err)
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			p.Add(l)
			if s.Name != "" {
				legend = append(legend, legendEntry{s.Name, col, "line"})
			}
		} else {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return "", fmt.Errorf("report: chart %q, %s: %w", c.Title, s.Name, err)
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(2)
			sc.GlyphStyle.Shape = draw.RingGlyph{}
			if s.Marked {
				sc.GlyphStyle.Radius = vg.Points(3.5)
				sc.GlyphStyle.Shape = draw.CircleGlyph{}
			}
			p.Add(sc)
			if s.Name != "" {
				kind := "ring"
				if s.Marked {
					kind = "dot"
				}
				legend = append(legend, legendEntry{s.Name, col, kind})
			}
		}
		if s.Line {
			linePoints = append(linePoints, s.Points...)
		} else {
			rec.points = append(rec.points, s.Points...)
		}
	}
	// A line's points are hovered where markers draw them too; a chart
	// of lines alone hovers the lines' points.
	if len(rec.points) == 0 && c.Bars == nil {
		rec.points = linePoints
	}
	for _, m := range c.Marks {
		if bad(m.X) {
			continue
		}
		lo, hi := p.Y.Min, p.Y.Max
		l, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: lo}, {X: m.X, Y: hi}})
		if err != nil {
			return "", err
		}
		l.Color = color.RGBA{120, 120, 120, 255}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		if m.Label != "" {
			legend = append(legend, legendEntry{m.Label, l.Color.(color.RGBA), "dash"})
		}
	}
	p.Add(rec)
	w, h := c.Width, c.Height
	if w == 0 {
		w = 7.5 * vg.Inch
	}
	if h == 0 {
		h = 4 * vg.Inch
	}
	cv := vgsvg.New(w, h)
	p.Draw(draw.New(cv))
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return "", err
	}
	svg := svgHeader.ReplaceAllString(buf.String(), "")
	// Inline SVG in HTML needs no namespace declarations; without them
	// the document names no URL at all.
	svg = svgXMLNS.ReplaceAllString(svg, "")
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="chart" data-points="%d"><div class="plotbox">`, len(hover))
	b.WriteString(strings.Replace(svg, "<svg ", `<svg class="plot" `, 1))
	fmt.Fprintf(&b, `<svg class="hover" viewBox="0 0 %.2f %.2f">`, float64(w.Points()), float64(h.Points()))
	for _, q := range hover {
		fmt.Fprintf(&b, `<circle cx="%.2f" cy="%.2f" r="4"><title>%s</title></circle>`, q.X, float64(h.Points())-q.Y, html.EscapeString(q.Label))
	}
	b.WriteString("</svg></div>")
	// The legend is HTML under the plot, where it hides no point, and
	// says how many of the configurations a thinned plot shows.
	if len(legend) > 0 || thinned > 1 {
		b.WriteString(`<div class="legend">`)
		for _, l := range legend {
			fmt.Fprintf(&b, `<span class="%s" style="--c:#%02x%02x%02x"></span>%s `, l.kind, l.color.R, l.color.G, l.color.B, html.EscapeString(l.name))
		}
		if thinned > 1 {
			fmt.Fprintf(&b, `<em>1 in %d configurations shown</em>`, thinned)
		}
		b.WriteString("</div>")
	}
	b.WriteString("</div>")
	return template.HTML(b.String()), nil
}

// legendEntry is one line of a chart's legend: a series' name, colour
// and how it is drawn (ring, dot, line or dash).
type legendEntry struct {
	name  string
	color color.RGBA
	kind  string
}

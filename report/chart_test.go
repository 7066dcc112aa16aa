package report

import (
	"strings"
	"testing"
)

// Long titles and labels wrap where Nsight Compute's names part, each
// line at most the width given; short ones and unbreakable pieces stay.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"GFLOP/s against time", 51, "GFLOP/s against time"},
		{"GFLOP/s against smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio (ρ = -0.679)", 51,
			"GFLOP/s against smsp__average_warps_issue_stalled_\nlong_scoreboard_per_issue_active.ratio (ρ = -0.679)"},
		{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 30, "dram__throughput.avg.pct_of_\npeak_sustained_elapsed"},
		{"GFLOP/s/W against max_threads_per_block (ρ = -0.702)", 51, "GFLOP/s/W against max_threads_per_block (ρ =\n-0.702)"},
		{"abcdefghijklmnopqrstuvwxyz", 10, "abcdefghijklmnopqrstuvwxyz"},
		{"anything at all", 4, "anything at all"},
	} {
		got := wrap(c.in, c.max)
		if got != c.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if c.max >= 8 {
			for _, l := range strings.Split(got, "\n") {
				if n := len([]rune(l)); n > c.max && strings.ContainsAny(l, " ._") {
					t.Errorf("wrap(%q, %d): line %q of %d characters", c.in, c.max, l, n)
				}
			}
		}
	}
}

// Tick labels lose the trailing zeros of gonum/plot's fixed precision
// (2500.00 10000.00 17500.00 for 300..19788; 0.0 0.5 1.0 1.5 for 0..1.5),
// and only those.
func TestTrimmedTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		want     string
	}{
		{300, 19788, "2500 10000 17500"},
		{0, 1.5, "0 0.5 1 1.5"},
		{12, 99, "30 60 90"},
	} {
		var labels []string
		for _, tk := range (trimmedTicks{}).Ticks(c.min, c.max) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("labels of %g..%g: %q, want %q", c.min, c.max, got, c.want)
		}
	}
}

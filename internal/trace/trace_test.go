package trace

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Step writes for the topics GTUNE_TRACE names only, how long the step
// took and when it ended since the process started.
func TestStep(t *testing.T) {
	var b strings.Builder
	out, topics = &b, []string{"prepare", " compile"}
	defer func() { topics = nil }()
	if !On("prepare") || !On("compile") || On("run") {
		t.Fatalf("On: %v %v %v", On("prepare"), On("compile"), On("run"))
	}
	Step("run", "tuner", "not traced", time.Now())
	Step("prepare", "executor", "slot 0 prepared", time.Now().Add(-1500*time.Millisecond))
	if !regexp.MustCompile(`^gtune: trace: executor: slot 0 prepared 1\.5\d\d s \(at \d+\.\d{3} s\)\n$`).MatchString(b.String()) {
		t.Errorf("%q", b.String())
	}
}

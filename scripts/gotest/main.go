// Command gotest is gtune's test command (the README's): go test over the
// packages given, printed as go test prints them, then one line saying
// how many tests were skipped and why, so that tests skipped for want of
// the shared datasets or a GPU are seen, not hidden among "ok" lines.
//
//	go run ./scripts/gotest ./...        # any go test flags and packages
//
// It also keys Go's test cache on the shared datasets beside the
// repository (../shared/datasets): Go does not track files outside the
// module, so without this a result cached while they were absent would be
// replayed after they appear. The key is GTUNE_SHARED_STAMP, a digest of
// the datasets' names, sizes and modification times, which the tests
// read (internal/shared) so that the cache sees it. The exit status is go
// test's.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gtune/gtune/internal/shared"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), shared.StampEnv+"="+stamp())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	}
	s := summarize(out, os.Stdout)
	err = cmd.Wait()
	fmt.Println(s.line())
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		return 1
	}
	return 0
}

// summary counts the tests run and the skipped ones by reason.
type summary struct {
	tests   int
	skipped map[string]int
}

// line is the summary's one line.
func (s summary) line() string {
	n := 0
	for _, c := range s.skipped {
		n += c
	}
	if n == 0 {
		return fmt.Sprintf("gotest: %d tests, none skipped", s.tests)
	}
	reasons := make([]string, 0, len(s.skipped))
	for r := range s.skipped {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if s.skipped[reasons[i]] != s.skipped[reasons[j]] {
			return s.skipped[reasons[i]] > s.skipped[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", s.skipped[r], r)
	}
	return fmt.Sprintf("gotest: %d tests, %d skipped: %s", s.tests, n, strings.Join(parts, "; "))
}

var (
	// logLine is a t.Log/t.Skip line as test2json passes it on.
	logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)
	// detail is what differs between tests skipped for one reason.
	detail = regexp.MustCompile(`\s*\([^)]*\)|\s*\S*/\S*`)
)

// summarize reads go test -json events from r and writes what go test
// would print without -json: each package's result line, and the output
// of failed tests and packages. It counts tests (top-level and subtests)
// and the skipped ones by reason (their last log line, its paths and
// parenthesised details left out).
func summarize(r interface{ Read([]byte) (int, error) }, w *os.File) summary {
	s := summary{skipped: map[string]int{}}
	held := map[string][]string{} // output of each test, until its end
	last := map[string]string{}   // each test's last log line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: go's own message
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
				fmt.Fprint(w, e.Output)
			}
		case e.Action == "output":
			held[key] = append(held[key], e.Output)
			if m := logLine.FindStringSubmatch(strings.TrimRight(e.Output, "\n")); m != nil {
				last[key] = m[1]
			}
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			if e.Test == "" {
				continue
			}
			s.tests++
			if e.Action == "fail" {
				fmt.Fprint(w, strings.Join(held[key], ""))
			}
			if e.Action == "skip" {
				reason := strings.TrimSpace(detail.ReplaceAllString(last[key], ""))
				if reason == "" {
					reason = "without a reason"
				}
				s.skipped[reason]++
			}
			delete(held, key)
			delete(last, key)
		}
	}
	return s
}

// stamp is a digest of the shared datasets beside the repository: the
// names, sizes and modification times of their files; "absent" when
// there are none.
func stamp() string {
	dir := shared.Dir()
	h := sha256.New()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
			n++
		}
		return nil
	})
	if n == 0 {
		return "absent"
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

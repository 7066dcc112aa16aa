package main

import (
	"os"
	"strings"
	"testing"
)

// summarize prints what go test prints (package lines, failed tests'
// output) and counts skips by reason, the details of each left out.
func TestSummarize(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: needs the shared datasets (../shared/datasets/x.json): not beside the repository\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: needs the shared datasets (../shared/datasets/y/z.json): not beside the repository\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:9: set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Test":"TestD","Output":"    d_test.go:1: got 2, want 3\n"}`,
		`{"Action":"output","Package":"p","Test":"TestD","Output":"--- FAIL: TestD (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestD"}`,
		`{"Action":"pass","Package":"p","Test":"TestE"}`,
		`{"Action":"output","Package":"p","Output":"PASS\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`no Go files in /x`,
	}, "\n")
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(strings.NewReader(events), out)
	out.Seek(0, 0)
	b, _ := os.ReadFile(out.Name())
	wantOut := "    d_test.go:1: got 2, want 3\n--- FAIL: TestD (0.00s)\nFAIL\tp\t0.1s\nno Go files in /x\n"
	if string(b) != wantOut {
		t.Errorf("printed %q, want %q", b, wantOut)
	}
	want := "gotest: 5 tests, 3 skipped: 2 needs the shared datasets: not beside the repository; 1 set GTUNE_CUDA_TEST=1 on a machine with an NVIDIA GPU"
	if got := s.line(); got != want {
		t.Errorf("line %q\nwant %q", got, want)
	}
}

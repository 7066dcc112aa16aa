package profile

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gtune/gtune/backend"
)

// An ncu raw page as ncu 2025 prints it for one launch (numbers grouped
// with commas, base units): 384 MiB of DRAM traffic over 3 Mi warp-level
// global loads and stores, 128 Mi FP32 thread instructions (4 Mi warp
// instructions), 10 Mi warp instructions in all.
func TestParseNcuCSV(t *testing.T) {
	f, err := os.Open("testdata/ncu-raw.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ls, err := ParseNcuCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Kernel != "ep_kernel" {
		t.Fatalf("launches %+v", ls)
	}
	m := ls[0].Mix
	want := Mix{SP: 4 << 20, DP: 0, Mem: 3 << 20, Instructions: 10 << 20, MemBytes: 384 << 20, Source: "ncu"}
	if m != want {
		t.Fatalf("mix %+v, want %+v", m, want)
	}
	rsp, rdp, rmem, nmem, err := m.Ratios()
	if err != nil {
		t.Fatal(err)
	}
	// 4 Mi SP and 3 Mi memory instructions: R_sp 4/7, R_mem 3/7, 128 B each.
	if math.Abs(rsp-4.0/7) > 1e-12 || rdp != 0 || math.Abs(rmem-3.0/7) > 1e-12 || nmem != 128 {
		t.Errorf("ratios %g %g %g, %g B per memory instruction", rsp, rdp, rmem, nmem)
	}
	if _, err := ParseNcuCSV(strings.NewReader("==PROF== nothing\n")); err == nil {
		t.Error("no table: no error")
	}
	f2, _ := os.ReadFile("testdata/ncu-raw.csv")
	bad := strings.Replace(string(f2), `"10,485,760"`, `"n/a"`, 1)
	if _, err := ParseNcuCSV(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "smsp__inst_executed.sum") {
		t.Errorf("n/a metric: err = %v", err)
	}
}

// The model mix: 2 flops per FP32 FMA warp instruction of 32 threads,
// 128 B per coalesced warp memory instruction.
func TestFromWork(t *testing.T) {
	m, err := FromWork(&backend.Job{Key: "k", Work: &backend.Work{Flops: 6400, Bytes: 1280}})
	if err != nil {
		t.Fatal(err)
	}
	if m.SP != 100 || m.Mem != 10 || m.Instructions != 110 || m.MemBytes != 1280 || m.Source != "model" {
		t.Errorf("mix %+v", m)
	}
	if _, err := FromWork(&backend.Job{Key: "k"}); err == nil {
		t.Error("no work: no error")
	}
}

// Every metric of the recorded page with its unit, the launch's
// description columns left out; an "n/a" metric is left out of its
// launch, not an error.
func TestParseNcuMetrics(t *testing.T) {
	f, _ := os.ReadFile("testdata/ncu-raw.csv")
	ls, err := ParseNcuMetrics(strings.NewReader(strings.Replace(string(f), `"134,217,728","0"`, `"134,217,728","n/a"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Kernel != "ep_kernel" {
		t.Fatalf("launches %+v", ls)
	}
	l := ls[0]
	if len(l.Values) != 6 || l.Values["dram__bytes_read.sum"] != 268435456 || l.Units["dram__bytes_read.sum"] != "byte" ||
		l.Values["smsp__inst_executed.sum"] != 10485760 || l.Units["smsp__inst_executed.sum"] != "inst" {
		t.Errorf("values %v units %v", l.Values, l.Units)
	}
	if _, ok := l.Values["smsp__sass_thread_inst_executed_op_fp64_pred_on.sum"]; ok {
		t.Error("the n/a metric has a value")
	}
	if l.Grid != [3]int{264, 1, 1} || l.Block != [3]int{256, 1, 1} {
		t.Errorf("grid %v block %v, want (264, 1, 1) and (256, 1, 1)", l.Grid, l.Block)
	}
	if d := dims("(4, x, 1)"); d != [3]int{} {
		t.Errorf("dims of a bad size: %v", d)
	}
	if _, ok := l.Values["Grid Size"]; ok {
		t.Error("a description column was read as a metric")
	}
}

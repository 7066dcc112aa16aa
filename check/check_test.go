package check

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtune/gtune/space"
	"github.com/gtune/gtune/spec"
)

func buildSpace(_ context.Context, s *spec.Spec) (*space.Space, error) {
	return space.Build(s.Params, s.Restrictions, s.Constants)
}

// examples/dgemm declares registers per thread that, for 259 of its 889
// configurations, overflow the H100's 65,536 registers a block (the
// 512- and 1,024-thread ones with large tiles): the simulated GPU fails
// to launch them, gtune project leaves them out (it projects 630), and
// on the H100 all 259 launched, since the kernel's
// __launch_bounds__(dim_m * dim_n) caps its registers. check warns,
// naming the first and the qualifier; a spec whose declared registers
// all fit (examples/matmul) gets no warning, and both say what was
// checked.
func TestRegistersFit(t *testing.T) {
	dgemm := File(context.Background(), filepath.Join("..", "examples", "dgemm", "spec.json"), Options{BuildSpace: buildSpace})
	if len(dgemm.Problems) > 0 {
		t.Fatalf("dgemm: problems %q", dgemm.Problems)
	}
	want := "examples/dgemm/spec.json: 259 of 889 configurations declare more registers than a thread block of theirs can hold on the NVIDIA H100 80GB HBM3 (Gtune.Simulation Registers; configuration 16,32,64,512,8,64,8,1,512,0: 512 threads × 160 registers, over 65536 a block): the simulated GPU records them launch_failed and gtune project leaves them out; the kernel declares __launch_bounds__(dim_m * dim_n), under which the compiler caps each thread's registers for such a block and spills the rest, so on a GPU they launch: declare Registers within that cap (at most 65536 / threads) to simulate them"
	found := false
	for _, w := range dgemm.Warnings {
		found = found || strings.HasSuffix(w, want)
	}
	if !found {
		t.Errorf("dgemm: warnings %q\nwant one ending %q", dgemm.Warnings, want)
	}
	matmul := File(context.Background(), filepath.Join("..", "examples", "matmul", "spec.json"), Options{BuildSpace: buildSpace})
	for _, w := range matmul.Warnings {
		if strings.Contains(w, "registers than") {
			t.Errorf("matmul: %q", w)
		}
	}
	for name, cf := range map[string][]string{"dgemm": dgemm.Checked, "matmul": matmul.Checked} {
		if !strings.Contains(strings.Join(cf, "\n"), "the simulated work's registers against the NVIDIA H100 80GB HBM3's register file") {
			t.Errorf("%s: checked %q", name, cf)
		}
	}
}

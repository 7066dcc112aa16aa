// Command ptxjobs prints the nvcc commands that emit the PTX of a sample
// of a spec's configurations, each with the defines gtune compiles it
// with (spec.Job), for the projection's checks on kernels whose work no
// spec declares (package emulate). Run the output on a host with nvcc:
//
//	go run ./scripts/ptxjobs -spec SPEC -n 200 -arch compute_80 -out DIR > jobs.sh
//
// Each line writes DIR/KEY.ptx (commas of the key as underscores).
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/gtune/gtune/spec"
)

func main() {
	specPath := flag.String("spec", "", "the spec (T1 JSON)")
	n := flag.Int("n", 200, "configurations, sampled uniformly without replacement (seed 1); 0: all")
	arch := flag.String("arch", "compute_80", "nvcc -arch")
	out := flag.String("out", "ptx", "folder of the PTX files (on the host that runs the commands)")
	resources := flag.String("resources", "", "also compile each to a cubin for this real architecture (e.g. sm_80) with ptxas -v, its report in DIR/KEY.ptxas: the registers and spills the projection cannot see in PTX")
	flag.Parse()
	s, err := spec.Load(*specPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sp, err := s.BuildSpace()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	idx := rand.New(rand.NewPCG(1, 1)).Perm(sp.Len())
	if *n > 0 && *n < len(idx) {
		idx = idx[:*n]
	}
	src := s.KernelFile
	if !filepath.IsAbs(src) {
		src = filepath.Join(filepath.Dir(*specPath), src)
	}
	// Paths relative to here: the commands run in the repository's copy
	// on the GPU host.
	wd, _ := os.Getwd()
	rel := func(x string) string { return strings.ReplaceAll(x, wd+string(filepath.Separator), "") }
	fmt.Printf("mkdir -p %s\n", *out)
	for _, i := range idx {
		j, err := s.Job(sp.Values(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var defs []string
		for _, d := range j.Defines {
			defs = append(defs, fmt.Sprintf("-D%s=%s", d.Name, d.Value))
		}
		opts := rel(strings.Join(s.CompilerOptions, " "))
		name := strings.ReplaceAll(sp.Key(i), ",", "_")
		line := fmt.Sprintf("nvcc -ptx -arch=%s %s %s -o %s/%s.ptx %s", *arch, opts, strings.Join(defs, " "), *out, name, rel(src))
		if *resources != "" {
			line += fmt.Sprintf(" && nvcc -cubin -arch=%s -Xptxas -v %s %s -o /dev/null %s 2> %s/%s.ptxas", *resources, opts, strings.Join(defs, " "), rel(src), *out, name)
		}
		fmt.Println(line)
	}
}

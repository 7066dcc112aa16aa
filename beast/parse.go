package beast

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gtune/gtune/expr"
)

var (
	lineNo  = regexp.MustCompile(`^\d+:\s*`)
	declRe  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)
	filtRe  = regexp.MustCompile(`^filter\s+([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$`)
	rangeRe = regexp.MustCompile(`^\[(.*)\]$`)
	setRe   = regexp.MustCompile(`^\{(.*)\}$`)
)

// Parse reads the text form, one declaration per line, in the notation of
// autotuning-gemm-energy-beast.md Figure 3:
//
//	dim_m = [ 16 : max_threads_dim_0 : 16 ],    a range, both ends inclusive
//	blk_k = [ 1 : INF : 1 ]                     stop INF: closed by filters
//	simd = [ 0 : 1 ]                            step 1
//	read_a = {'texture', 'no_texture'}          a set of constants
//	filter threads: dim_m * dim_n > max_threads_per_block
//
// A filter line discards the configurations for which its expression is
// true. Bounds, steps, set elements and filters are package expr
// expressions. A leading line number "3:", a trailing comma and
// everything after # are ignored, as are blank lines. The space is then
// checked as by New; errors name the line.
func Parse(src string, consts expr.Env) (*Space, error) {
	var iters []Iterator
	var filters []Filter
	for n, line := range strings.Split(src, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(lineNo.ReplaceAllString(line, ""))
		line = strings.TrimSpace(strings.TrimSuffix(line, ","))
		if line == "" {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("beast: line %d %q: %s", n+1, line, fmt.Sprintf(format, a...))
		}
		if m := filtRe.FindStringSubmatch(line); m != nil {
			filters = append(filters, Filter{Name: m[1], Discard: strings.TrimSpace(m[2])})
			continue
		}
		m := declRe.FindStringSubmatch(line)
		if m == nil {
			return nil, bad("want name = [start : stop : step], name = {values} or filter name: expression")
		}
		name, rhs := m[1], strings.TrimSpace(m[2])
		if r := rangeRe.FindStringSubmatch(rhs); r != nil {
			parts := strings.Split(r[1], ":")
			if len(parts) < 2 || len(parts) > 3 {
				return nil, bad("a range has 2 or 3 parts separated by ':', not %d", len(parts))
			}
			it := Range(name, strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), "")
			if len(parts) == 3 {
				it.Step = strings.TrimSpace(parts[2])
			}
			iters = append(iters, it)
			continue
		}
		if r := setRe.FindStringSubmatch(rhs); r != nil {
			e, err := expr.Parse("[" + r[1] + "]")
			if err != nil {
				return nil, bad("set: %v", err)
			}
			env := consts
			if env == nil {
				env = expr.MapEnv{}
			}
			v, err := e.Eval(env)
			if err != nil {
				return nil, bad("set: %v", err)
			}
			iters = append(iters, Set(name, v.List()...))
			continue
		}
		return nil, bad("want [start : stop : step] or {values} after =")
	}
	return New(iters, filters, consts)
}

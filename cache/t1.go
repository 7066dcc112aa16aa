package cache

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gtune/gtune/expr"
)

// maxT1Raw bounds the Cartesian product T1 encodes: its restriction holds
// one bit per raw configuration, written into the expression.
const maxT1Raw = 1 << 24

// bitsPerWord keeps every word of the bitmap a positive int64.
const bitsPerWord = 62

// T1 writes a T1 specification (JSON) of the cache's search space for a
// replay without the kernel's own spec: the tunable parameters are the
// cache's tune_params, and one restriction admits exactly the
// configurations the cache records (valid or not), so a strategy never
// proposes a configuration the cache cannot answer. The restriction is a
// bitmap over the mixed-radix number of each configuration (first
// parameter most significant, Kernel Tuner's enumeration order), written
// as a Python expression; the kernel geometry is a placeholder (1 thread,
// 1 thread block) and the kernel file does not exist, so the spec is for
// spec.LoadWith with NoSource only. The kernel's real restrictions are
// unknown here: configurations the cache lacks are simply absent.
//
// Errors: no tunable parameters, a parameter name that is not a Python
// identifier, a value that is not a number, bool or string, or more than
// 2^24 raw configurations.
func (c *Cache) T1() ([]byte, error) {
	if len(c.ParamNames) == 0 {
		return nil, fmt.Errorf("cache: T1: the cache has no tunable parameters")
	}
	np := len(c.ParamNames)
	values := make([][]expr.Value, np)
	raw := 1
	type param struct {
		Name   string `json:"Name"`
		Type   string `json:"Type,omitempty"` // "" for mixed kinds
		Values string `json:"Values"`
	}
	params := make([]param, np)
	for i, name := range c.ParamNames {
		vs := c.ParamValues[name]
		if len(vs) == 0 {
			return nil, fmt.Errorf("cache: T1: tunable parameter %q has no values", name)
		}
		typ := ""
		for _, v := range vs {
			x, err := expr.FromGo(v)
			if err != nil {
				return nil, fmt.Errorf("cache: T1: tunable parameter %q: %v", name, err)
			}
			var t string
			switch x.Kind() {
			case expr.KindInt:
				t = "int"
			case expr.KindFloat:
				t = "float"
			case expr.KindBool:
				t = "bool"
			case expr.KindString:
				t = "string"
			default:
				return nil, fmt.Errorf("cache: T1: tunable parameter %q: value %s is not a number, bool or string", name, x.String())
			}
			if typ == "" || typ == t {
				typ = t
			} else {
				typ = "mixed"
			}
			values[i] = append(values[i], x)
		}
		if typ == "mixed" {
			typ = ""
		}
		params[i] = param{Name: name, Type: typ, Values: expr.List(values[i]).String()}
		if raw > maxT1Raw/len(vs) {
			return nil, fmt.Errorf("cache: T1: more than %d raw configurations; give the kernel's own spec instead", maxT1Raw)
		}
		raw *= len(vs)
	}

	// The bitmap of recorded configurations.
	radix := make([]int, np)
	stride := 1
	for i := np - 1; i >= 0; i-- {
		radix[i] = stride
		stride *= len(values[i])
	}
	words := make([]int64, (raw+bitsPerWord-1)/bitsPerWord)
	recorded := 0
	for _, e := range c.Entries {
		if len(e.Params) != np {
			continue
		}
		code, ok := 0, true
		for i, v := range e.Params {
			x, err := expr.FromGo(v)
			if err != nil {
				ok = false
				break
			}
			j := indexOf(values[i], x)
			if j < 0 {
				ok = false
				break
			}
			code += j * radix[i]
		}
		if !ok {
			continue
		}
		if words[code/bitsPerWord]&(1<<(code%bitsPerWord)) == 0 {
			recorded++
		}
		words[code/bitsPerWord] |= 1 << (code % bitsPerWord)
	}

	var conditions []map[string]any
	if recorded < raw {
		var code []string
		var read []string
		for i, name := range c.ParamNames {
			if len(values[i]) == 1 {
				continue
			}
			read = append(read, name)
			// The first equal value wins, as space.IndexesOf decides.
			var idx strings.Builder
			idx.WriteByte('(')
			for j, v := range values[i][:len(values[i])-1] {
				fmt.Fprintf(&idx, "%d if %s == %s else ", j, name, v.String())
			}
			fmt.Fprintf(&idx, "%d)", len(values[i])-1)
			code = append(code, fmt.Sprintf("%s*%d", idx.String(), radix[i]))
		}
		cs := "0"
		if len(code) > 0 {
			cs = strings.Join(code, " + ")
		}
		w := make([]string, len(words))
		for i, x := range words {
			w[i] = fmt.Sprint(x)
		}
		cond := fmt.Sprintf("([%s][(%s) // %d] >> ((%s) %% %d)) & 1 == 1", strings.Join(w, ", "), cs, bitsPerWord, cs, bitsPerWord)
		conditions = append(conditions, map[string]any{"Expression": cond, "Parameters": read})
	}

	name := c.KernelName
	if name == "" {
		name = "replay"
	}
	doc := map[string]any{
		"General": map[string]any{"BenchmarkName": name, "OutputFormat": "JSON"},
		"ConfigurationSpace": map[string]any{
			"TuningParameters": params,
			"Conditions":       conditions,
		},
		"KernelSpecification": map[string]any{
			"Language":       "CUDA",
			"KernelName":     name,
			"KernelFile":     name + ".cu",
			"GlobalSizeType": "CUDA",
			"LocalSize":      map[string]string{"X": "1", "Y": "1", "Z": "1"},
			"GlobalSize":     map[string]string{"X": "1", "Y": "1", "Z": "1"},
			"Arguments":      []any{},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

func indexOf(vs []expr.Value, x expr.Value) int {
	for j, v := range vs {
		if v.Equal(x) {
			return j
		}
	}
	return -1
}

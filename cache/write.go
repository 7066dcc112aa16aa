package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/gtune/gtune/expr"
)

// jsonWriter writes JSON the way Python's json module does: ", " and ": "
// separators, floats as repr(), NaN and ±Infinity as bare words. The first
// error sticks.
type jsonWriter struct {
	b   bytes.Buffer
	err error
}

func (jw *jsonWriter) str(s string) { jw.b.WriteString(s) }

func (jw *jsonWriter) float(f float64) {
	switch {
	case math.IsNaN(f):
		jw.b.WriteString("NaN")
	case math.IsInf(f, 1):
		jw.b.WriteString("Infinity")
	case math.IsInf(f, -1):
		jw.b.WriteString("-Infinity")
	default:
		jw.b.WriteString(expr.Float(f).String())
	}
}

func (jw *jsonWriter) value(v any) {
	switch t := v.(type) {
	case nil:
		jw.b.WriteString("null")
	case bool:
		jw.b.WriteString(strconv.FormatBool(t))
	case int:
		jw.b.WriteString(strconv.Itoa(t))
	case int64:
		jw.b.WriteString(strconv.FormatInt(t, 10))
	case float64:
		jw.float(t)
	case string:
		b, err := json.Marshal(t)
		if err != nil && jw.err == nil {
			jw.err = err
		}
		jw.b.Write(b)
	case []float64:
		jw.b.WriteByte('[')
		for i, f := range t {
			if i > 0 {
				jw.b.WriteString(", ")
			}
			jw.float(f)
		}
		jw.b.WriteByte(']')
	case []any:
		jw.b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				jw.b.WriteString(", ")
			}
			jw.value(e)
		}
		jw.b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		jw.b.WriteByte('{')
		jw.members(keys, func(i int) any { return t[keys[i]] })
		jw.b.WriteByte('}')
	default:
		if jw.err == nil {
			jw.err = fmt.Errorf("cannot write a %T as JSON", v)
		}
	}
}

// pretty writes v as Python's json.dumps(v, indent="") does (Kernel
// Tuner's cache header): one element per line, no indentation.
func (jw *jsonWriter) pretty(v any) {
	switch t := v.(type) {
	case []any:
		if len(t) == 0 {
			jw.b.WriteString("[]")
			return
		}
		jw.b.WriteString("[\n")
		for i, e := range t {
			if i > 0 {
				jw.b.WriteString(",\n")
			}
			jw.pretty(e)
		}
		jw.b.WriteString("\n]")
	default:
		jw.value(v)
	}
}

func (jw *jsonWriter) flush(w io.Writer) error {
	if jw.err != nil {
		return jw.err
	}
	_, err := w.Write(jw.b.Bytes())
	jw.b.Reset()
	if err != nil {
		jw.err = err
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Write writes the cache in Kernel Tuner's cache format, closed (readable
// by any JSON parser and by Kernel Tuner's read_cache): the header
// (device_name, kernel_name, problem_size, tune_params_keys, tune_params,
// objective when set) one element per line, then one line per entry in
// Keys order with the tunable parameters, time (the error marker for an
// invalid entry), times, compile_time, verification_time, benchmark_time
// (left out when not recorded), the Extra observations, strategy_time,
// framework_time, the Other members and timestamp. Errors: no tunable
// parameters, an entry whose Params do not match ParamNames, a write error.
func (c *Cache) Write(w io.Writer) error {
	if len(c.ParamNames) == 0 {
		return errors.New("cache: Write: the cache has no tunable parameters")
	}
	jw := &jsonWriter{}
	jw.str("{\n\"device_name\": ")
	jw.value(c.DeviceName)
	jw.str(",\n\"kernel_name\": ")
	jw.value(c.KernelName)
	jw.str(",\n\"problem_size\": ")
	jw.pretty(c.ProblemSize)
	jw.str(",\n\"tune_params_keys\": ")
	names := make([]any, len(c.ParamNames))
	for i, n := range c.ParamNames {
		names[i] = n
	}
	jw.pretty(names)
	jw.str(",\n\"tune_params\": {\n")
	for i, n := range c.ParamNames {
		if i > 0 {
			jw.str(",\n")
		}
		jw.value(n)
		jw.str(": ")
		jw.pretty(c.ParamValues[n])
	}
	jw.str("\n}")
	if c.Objective != "" {
		jw.str(",\n\"objective\": ")
		jw.value(c.Objective)
	}
	jw.str(",\n\"cache\": {")
	for i, key := range c.Keys() {
		e := c.Entries[key]
		if len(e.Params) != len(c.ParamNames) {
			return fmt.Errorf("cache: Write: entry %q has %d parameter values, the cache has %d tunable parameters", key, len(e.Params), len(c.ParamNames))
		}
		if i > 0 {
			jw.str(",")
		}
		jw.str("\n")
		jw.value(key)
		jw.str(": {")
		jw.members(c.ParamNames, func(j int) any { return e.Params[j] })
		field := func(name string, write func()) {
			jw.str(", ")
			jw.value(name)
			jw.str(": ")
			write()
		}
		timing := func(name string, v float64) {
			if !math.IsNaN(v) {
				field(name, func() { jw.float(v) })
			}
		}
		if e.Valid() {
			if !math.IsNaN(e.Time) {
				field("time", func() { jw.float(e.Time) })
			}
		} else {
			m := entryMarker(e)
			field("time", func() { jw.value(m) })
			if c.Objective != "" && c.Objective != "time" {
				if _, has := e.Extra[c.Objective]; !has {
					field(c.Objective, func() { jw.value(m) })
				}
			}
		}
		if e.Times != nil {
			field("times", func() { jw.value(e.Times) })
		}
		timing("compile_time", e.CompileMs)
		timing("verification_time", e.VerificationMs)
		timing("benchmark_time", e.BenchmarkMs)
		for _, name := range sortedKeys(e.Extra) {
			v := e.Extra[name]
			field(name, func() { jw.float(v) })
		}
		timing("strategy_time", e.StrategyMs)
		timing("framework_time", e.FrameworkMs)
		for _, name := range sortedKeys(e.Other) {
			v := e.Other[name]
			field(name, func() { jw.value(v) })
		}
		if e.Timestamp != "" {
			field("timestamp", func() { jw.value(e.Timestamp) })
		}
		jw.str("}")
		if jw.err == nil && jw.b.Len() > 1<<16 {
			if err := jw.flush(w); err != nil {
				return err
			}
		}
	}
	jw.str("}\n}\n")
	return jw.flush(w)
}

// MarshalHeader encodes what a results database does not otherwise keep of
// a Kernel Tuner cache (problem_size, and tune_params in parameter order)
// as one JSON string, for UnmarshalHeader to restore on export.
func (c *Cache) MarshalHeader() (string, error) {
	jw := &jsonWriter{}
	jw.str(`{"problem_size": `)
	jw.value(c.ProblemSize)
	jw.str(`, "tune_params": {`)
	jw.members(c.ParamNames, func(i int) any { return c.ParamValues[c.ParamNames[i]] })
	jw.str("}}")
	var b bytes.Buffer
	if err := jw.flush(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// UnmarshalHeader restores ProblemSize, ParamNames and ParamValues from a
// MarshalHeader string.
func (c *Cache) UnmarshalHeader(s string) error {
	var head map[string]json.RawMessage
	if err := json.Unmarshal(pythonJSON([]byte(s)), &head); err != nil {
		return fmt.Errorf("cache: header: %v", err)
	}
	tmp := &Cache{}
	if err := tmp.readHeader(head); err != nil {
		return fmt.Errorf("cache: header: %v", err)
	}
	c.ProblemSize, c.ParamNames, c.ParamValues = tmp.ProblemSize, tmp.ParamNames, tmp.ParamValues
	return nil
}

// members writes the members of a JSON object (without its braces): each
// name with value(i), separated by ", ", in the order of names.
func (jw *jsonWriter) members(names []string, value func(i int) any) {
	for i, n := range names {
		if i > 0 {
			jw.str(", ")
		}
		jw.value(n)
		jw.str(": ")
		jw.value(value(i))
	}
}

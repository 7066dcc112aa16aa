package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/gtune/gtune/backend"
)

// T4SchemaVersion is the version of the T4 results schema WriteT4 writes
// (formats/T4_1.0.0_results-schema.json; Kernel Tuner's
// file_utils.store_output_file writes the same).
const T4SchemaVersion = "1.0.0"

// T4 invalidity values (the schema's enum) and their gtune statuses.
var t4Status = map[string]backend.Status{
	"correct":     backend.StatusValid,
	"compile":     backend.StatusCompileFailed,
	"runtime":     backend.StatusRuntimeFailed,
	"timeout":     backend.StatusTimeout,
	"correctness": backend.StatusVerificationFailed,
	"constraints": backend.StatusLaunchFailed,
}

// T4Invalidity is the T4 invalidity value of a gtune status: correct,
// compile, runtime, timeout, correctness (verification_failed) or
// constraints (launch_failed, as Kernel Tuner writes InvalidConfig).
func T4Invalidity(s backend.Status) string {
	switch s {
	case backend.StatusValid:
		return "correct"
	case backend.StatusCompileFailed:
		return "compile"
	case backend.StatusTimeout:
		return "timeout"
	case backend.StatusVerificationFailed:
		return "correctness"
	case backend.StatusLaunchFailed:
		return "constraints"
	}
	return "runtime"
}

type t4Measurement struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
	Unit  string `json:"unit"`
}

type t4Result struct {
	Timestamp     string          `json:"timestamp"`
	Configuration json.RawMessage `json:"configuration"`
	Times         map[string]any  `json:"times"`
	Invalidity    string          `json:"invalidity"`
	Measurements  []t4Measurement `json:"measurements"`
	Objectives    []string        `json:"objectives"`
}

// parseT4 builds a Cache from the members of a T4 results file. The file
// names no device or kernel, and no tunable parameter values besides those
// of its results: ParamValues are the values used, sorted.
func parseT4(head map[string]json.RawMessage) (*Cache, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(head["results"], &raws); err != nil {
		return nil, fmt.Errorf("T4 results: %v", err)
	}
	c := &Cache{Format: "t4", Entries: make(map[string]*Entry, len(raws)), ParamValues: map[string][]any{}}
	seen := map[string]map[string]bool{}
	for i, raw := range raws {
		var r t4Result
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&r); err != nil {
			return nil, fmt.Errorf("T4 result %d: %v", i, err)
		}
		if r.Configuration == nil {
			return nil, fmt.Errorf("T4 result %d has no configuration", i)
		}
		if i == 0 {
			keys, err := objectKeys(r.Configuration)
			if err != nil {
				return nil, fmt.Errorf("T4 result 0: configuration: %v", err)
			}
			c.ParamNames = keys
			for _, k := range keys {
				seen[k] = map[string]bool{}
			}
			if len(r.Objectives) > 0 {
				c.Objective = r.Objectives[0]
			}
		}
		var cfg map[string]any
		d = json.NewDecoder(bytes.NewReader(r.Configuration))
		d.UseNumber()
		if err := d.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("T4 result %d: configuration: %v", i, err)
		}
		if len(cfg) != len(c.ParamNames) {
			return nil, fmt.Errorf("T4 result %d: configuration has %d parameters, the first result has %d", i, len(cfg), len(c.ParamNames))
		}
		params := make([]any, len(c.ParamNames))
		for j, name := range c.ParamNames {
			v, ok := cfg[name]
			if !ok {
				return nil, fmt.Errorf("T4 result %d: configuration has no value for tunable parameter %q", i, name)
			}
			params[j] = plain(v)
			if s := pyStr(params[j]); !seen[name][s] {
				seen[name][s] = true
				c.ParamValues[name] = append(c.ParamValues[name], params[j])
			}
		}
		e := newEntry(KeyOf(params))
		e.Params = params
		e.Timestamp = r.Timestamp
		st, ok := t4Status[r.Invalidity]
		if !ok {
			return nil, fmt.Errorf("T4 result %d (%s): unknown invalidity %q (valid: correct, compile, runtime, timeout, correctness, constraints)", i, e.Key, r.Invalidity)
		}
		e.Status = st
		e.Error = MarkerOf(st)
		for name, v := range r.Times {
			var p *float64
			switch name {
			case "compilation", "compilation_time":
				p = &e.CompileMs
			case "benchmark":
				p = &e.BenchmarkMs
			case "framework":
				p = &e.FrameworkMs
			case "search_algorithm":
				p = &e.StrategyMs
			case "validation":
				p = &e.VerificationMs
			case "runtimes":
				ts, ok := v.([]any)
				if !ok {
					return nil, fmt.Errorf("T4 result %d (%s): times.runtimes is not a list", i, e.Key)
				}
				for _, t := range ts {
					f, ok := number(t)
					if !ok {
						return nil, fmt.Errorf("T4 result %d (%s): times.runtimes holds a non-number", i, e.Key)
					}
					e.Times = append(e.Times, f)
				}
				continue
			}
			if p == nil {
				continue
			}
			if f, ok := number(v); ok {
				*p = f
			}
		}
		for _, m := range r.Measurements {
			f, isNum := number(m.Value)
			if s, ok := m.Value.(string); ok && IsMarker(s) {
				continue // invalidity says it
			}
			if m.Name == "time" && isNum {
				if st == backend.StatusValid {
					e.Time = f
				}
				continue
			}
			if isNum {
				if e.Extra == nil {
					e.Extra = map[string]float64{}
				}
				e.Extra[m.Name] = f
				continue
			}
			if e.Other == nil {
				e.Other = map[string]any{}
			}
			e.Other[m.Name] = plain(m.Value)
		}
		c.Entries[e.Key] = e
	}
	for _, name := range c.ParamNames {
		sortValues(c.ParamValues[name])
	}
	return c, nil
}

// sortValues orders parameter values: numbers ascending, then booleans
// (false first), then strings, then anything else by its Python str().
func sortValues(vs []any) {
	rank := func(v any) int {
		switch v.(type) {
		case int, float64:
			return 0
		case bool:
			return 1
		case string:
			return 2
		}
		return 3
	}
	num := func(v any) float64 {
		switch t := v.(type) {
		case int:
			return float64(t)
		case float64:
			return t
		}
		return 0
	}
	sort.SliceStable(vs, func(i, j int) bool {
		ri, rj := rank(vs[i]), rank(vs[j])
		if ri != rj {
			return ri < rj
		}
		switch ri {
		case 0:
			return num(vs[i]) < num(vs[j])
		case 1:
			return !vs[i].(bool) && vs[j].(bool)
		}
		return pyStr(vs[i]) < pyStr(vs[j])
	})
}

// WriteT4 writes the cache as a T4 results file (schema 1.0.0), one result
// per entry in Keys order, as Kernel Tuner's store_output_file does:
// times.compilation, benchmark, framework, search_algorithm, validation
// (ms, left out when not recorded) and runtimes; invalidity from Status;
// correctness 1 for valid entries and 0 otherwise; measurements "time"
// (the Kernel Tuner error marker for an invalid entry) and every Extra,
// unit "ms" for names starting with "time" as Kernel Tuner writes;
// objectives [Objective] ("time" when empty). Non-finite numbers are
// written as Python does (NaN, Infinity).
func (c *Cache) WriteT4(w io.Writer) error {
	if len(c.ParamNames) == 0 {
		return errors.New("cache: WriteT4: the cache has no tunable parameters")
	}
	objective := c.Objective
	if objective == "" {
		objective = "time"
	}
	jw := &jsonWriter{}
	jw.str(`{"results": [`)
	for i, key := range c.Keys() {
		e := c.Entries[key]
		if len(e.Params) != len(c.ParamNames) {
			return fmt.Errorf("cache: WriteT4: entry %q has %d parameter values, the cache has %d tunable parameters", key, len(e.Params), len(c.ParamNames))
		}
		if i > 0 {
			jw.str(", ")
		}
		jw.str(`{"timestamp": `)
		jw.value(e.Timestamp)
		jw.str(`, "configuration": {`)
		jw.members(c.ParamNames, func(j int) any { return e.Params[j] })
		jw.str(`}, "times": {`)
		first := true
		for _, t := range []struct {
			name string
			v    float64
		}{{"compilation", e.CompileMs}, {"benchmark", e.BenchmarkMs}, {"framework", e.FrameworkMs},
			{"search_algorithm", e.StrategyMs}, {"validation", e.VerificationMs}} {
			if math.IsNaN(t.v) {
				continue
			}
			if !first {
				jw.str(", ")
			}
			first = false
			jw.value(t.name)
			jw.str(": ")
			jw.float(t.v)
		}
		if len(e.Times) > 0 {
			if !first {
				jw.str(", ")
			}
			jw.str(`"runtimes": `)
			jw.value(e.Times)
		}
		jw.str(`}, "invalidity": `)
		jw.value(T4Invalidity(e.Status))
		if e.Valid() {
			jw.str(`, "correctness": 1, "measurements": [`)
		} else {
			jw.str(`, "correctness": 0, "measurements": [`)
		}
		jw.str(`{"name": "time", "value": `)
		if e.Valid() {
			jw.float(e.Time)
		} else {
			jw.value(entryMarker(e))
		}
		jw.str(`, "unit": "ms"}`)
		for _, name := range sortedKeys(e.Extra) {
			jw.str(`, {"name": `)
			jw.value(name)
			jw.str(`, "value": `)
			jw.float(e.Extra[name])
			jw.str(`, "unit": `)
			jw.value(unitOf(name))
			jw.str("}")
		}
		jw.str(`], "objectives": [`)
		jw.value(objective)
		jw.str("]}")
		if jw.err == nil && jw.b.Len() > 1<<16 {
			if err := jw.flush(w); err != nil {
				return err
			}
		}
	}
	jw.str(`], "schema_version": `)
	jw.value(T4SchemaVersion)
	jw.str("}\n")
	return jw.flush(w)
}

func unitOf(name string) string {
	if len(name) >= 4 && name[:4] == "time" {
		return "ms"
	}
	return ""
}

// entryMarker is the error marker to write for an invalid entry.
func entryMarker(e *Entry) string {
	if e.Error != "" {
		return e.Error
	}
	return MarkerOf(e.Status)
}

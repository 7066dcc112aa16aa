package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// t1ReadPast are keys gtune reads past, by parent (a list's elements as
// "[]"): T1 1.0.0 schema keys (../shared/datasets/formats/
// T1_1.0.0_input-schema.json) that gtune does not use, and keys
// benchmark_hub's published files add. Any other key a file's objects hold
// is a mistake, most often a misspelling.
var t1ReadPast = map[string][]string{
	"":                                {"BenchmarkConfig"},
	"General":                         {"LoggingLevel", "OutputFile"},
	"KernelSpecification":             {"Device", "Profiling", "SharedMemory", "SimulationInput", "Stream", "Misc"},
	"KernelSpecification.Arguments[]": {"DataSource", "TypeSize"},
	"KernelSpecification.ReferenceArguments[]": {"DataSource"},
}

// unknownKeys lists every key of data (the spec file's text, JSON or YAML)
// that neither File's fields nor t1ReadPast name, as *Error values naming
// the key's path and, where one is close, the known key meant. Maps
// (Gtune.Constants, a reference configuration) hold names of the user's
// own and are not checked.
func unknownKeys(file string, data []byte, yamlFile bool) error {
	var v any
	var err error
	if yamlFile {
		err = yaml.Unmarshal(data, &v)
	} else {
		err = json.Unmarshal(data, &v)
	}
	if err != nil {
		return nil // decoding already reported it
	}
	var errs []error
	walkKeys(v, reflect.TypeFor[File](), "", "", func(path, parent, key string, known []string) {
		msg := "unknown key"
		if near := closest(key, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		errs = append(errs, &Error{File: file, Field: strings.TrimPrefix(path+"."+key, "."), Msg: msg})
	})
	return errors.Join(errs...)
}

// walkKeys visits v against type t; path names v for messages (with list
// indexes), generic its parent in t1ReadPast's form.
func walkKeys(v any, t reflect.Type, path, generic string, unknown func(path, parent, key string, known []string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.Type{}
		var known []string
		for f := range t.Fields() {
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f.Type
			known = append(known, name)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			switch {
			case ok:
				walkKeys(m[k], ft, join(path, k), join(generic, k), unknown)
			case strings.HasPrefix(k, "$") || slices.Contains(t1ReadPast[generic], k):
			default:
				unknown(path, generic, k, known)
			}
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			walkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), generic+"[]", unknown)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Closest is the known name that name most likely misspells ("" when
// none is close): equal but for case, or within an edit distance of a
// quarter of its length (at least 2). Other file formats (workloads) use
// it for their own "did you mean".
func Closest(name string, known []string) string { return closest(name, known) }

// closest is the known key key most likely misspells: equal but for case,
// or within an edit distance of a quarter of its length (at least 2).
func closest(key string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		d := editDistance(strings.ToLower(key), strings.ToLower(k))
		if d <= max(2, len(k)/4) && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

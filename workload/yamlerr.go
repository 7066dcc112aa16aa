package workload

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gtune/gtune/spec"
)

// sections name the workload file's parts by the Go type that decodes
// them, so that a decoding error names where in the file it is, not a
// Go type.
var sections = map[string]struct {
	where string
	typ   reflect.Type
}{
	"File":            {"the top level", reflect.TypeFor[File]()},
	"FileKernel":      {"a kernel", reflect.TypeFor[FileKernel]()},
	"FileMeasurement": {"measurement", reflect.TypeFor[FileMeasurement]()},
}

var (
	unknownFieldRE = regexp.MustCompile(`^line (\d+): field (\S+) not found in type workload\.(\w+)$`)
	wrongKindRE    = regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
)

// yamlKinds say what a YAML tag holds, yamlWants what a Go type takes, in
// the words of the file's author.
var (
	yamlKinds = map[string]string{"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false",
		"seq": "a list", "map": "a mapping (key: value)", "null": "nothing"}
	yamlWants = map[string]string{"int": "a whole number", "*int": "a whole number", "float64": "a number", "bool": "true or false",
		"*bool": "true or false", "string": "a string", "[]string": "a list of names", "[]any": "a list", "[]interface {}": "a list",
		"map[string]interface {}": "a mapping (key: value)", "map[string]any": "a mapping (key: value)"}
)

// yamlMessage rewrites a YAML decoding error of a workload file for its
// author: an unknown key with the key meant ("did you mean"), a value of
// the wrong kind with what is wanted, each on its own line with its line
// number; other errors as they are.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	lines := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		if m := unknownFieldRE.FindStringSubmatch(e); m != nil {
			sec, ok := sections[m[3]]
			if !ok {
				lines = append(lines, e)
				continue
			}
			known := yamlKeys(sec.typ)
			msg := fmt.Sprintf("line %s: %s: unknown key %q (known: %s)", m[1], sec.where, m[2], strings.Join(known, ", "))
			if near := spec.Closest(m[2], known); near != "" {
				msg = fmt.Sprintf("line %s: %s: unknown key %q (did you mean %s?)", m[1], sec.where, m[2], near)
			}
			lines = append(lines, msg)
			continue
		}
		if m := wrongKindRE.FindStringSubmatch(e); m != nil {
			got := yamlKinds[m[2]]
			if got == "" {
				got = "a " + m[2]
			}
			if m[3] != "" {
				got = fmt.Sprintf("%q is %s", m[3], got)
			} else {
				got = "the value is " + got
			}
			want := yamlWants[m[4]]
			switch {
			case want != "":
			case m[4] == "[]workload.FileKernel":
				want = "a list of kernels, each a mapping with name and spec"
			case strings.HasPrefix(m[4], "[]"):
				want = "a list"
			case strings.HasPrefix(m[4], "map["), strings.HasPrefix(m[4], "workload."), strings.HasPrefix(m[4], "*workload."):
				want = "a mapping (key: value)"
			default:
				want = "another kind of value"
			}
			lines = append(lines, fmt.Sprintf("line %s: %s; want %s", m[1], got, want))
			continue
		}
		lines = append(lines, e)
	}
	return strings.Join(lines, "\n")
}

// yamlKeys are the keys a struct type decodes, from its yaml tags.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Error is the one kind of error Load returns: what is wrong (Msg), in
// which file, at which field (a path such as
// "ConfigurationSpace.Conditions[2].Expression"; empty for the file as a
// whole) and, for malformed JSON/YAML, at which line and column (1-based;
// 0 when unknown).
type Error struct {
	File   string
	Field  string
	Line   int
	Column int
	Msg    string
	Err    error // the cause, when another package's error is behind Msg (Unwrap)
}

// Unwrap gives the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MetricList is Gtune.Metrics. It decodes from a JSON/YAML object
// {"name": "expression", ...} in the order written (a value may also be an
// object {"Expression", "Direction", "Unit"}), or from a list of RawMetric.
type MetricList []RawMetric

// UnmarshalJSON implements json.Unmarshaler, keeping object order.
func (m *MetricList) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		*m = nil
		return nil
	}
	if data[0] == '[' {
		var l []RawMetric
		if err := json.Unmarshal(data, &l); err != nil {
			return fmt.Errorf("Gtune.Metrics: %v", err)
		}
		*m = l
		return nil
	}
	if data[0] != '{' {
		return fmt.Errorf("Gtune.Metrics must be an object {\"name\": \"expression\"} or a list of {Name, Expression}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	var out MetricList
	for dec.More() {
		tk, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tk.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		met := RawMetric{Name: name}
		if err := json.Unmarshal(raw, &met.Expression); err != nil {
			var obj RawMetric
			if err2 := json.Unmarshal(raw, &obj); err2 != nil || obj.Expression == "" {
				return fmt.Errorf("Gtune.Metrics[%q] must be an expression string or {Expression, Direction, Unit}", name)
			}
			met.Expression, met.Direction, met.Unit = obj.Expression, obj.Direction, obj.Unit
		}
		out = append(out, met)
	}
	*m = out
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping mapping order.
func (m *MetricList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []RawMetric
		if err := n.Decode(&l); err != nil {
			return err
		}
		*m = l
		return nil
	case yaml.MappingNode:
		var out MetricList
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			met := RawMetric{Name: k.Value}
			switch v.Kind {
			case yaml.ScalarNode:
				met.Expression = v.Value
			case yaml.MappingNode:
				var obj RawMetric
				if err := v.Decode(&obj); err != nil {
					return err
				}
				met.Expression, met.Direction, met.Unit = obj.Expression, obj.Direction, obj.Unit
			default:
				return fmt.Errorf("line %d: Gtune.Metrics[%q] must be an expression string or {Expression, Direction, Unit}", v.Line, k.Value)
			}
			out = append(out, met)
		}
		*m = out
		return nil
	}
	return fmt.Errorf("line %d: Gtune.Metrics must be a mapping {name: expression} or a list of {Name, Expression}", n.Line)
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// decodeJSON decodes data into f; numbers in untyped fields stay
// json.Number so that 16 remains an int.
func decodeJSON(file string, data []byte, f *File) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(f)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			off := dec.InputOffset()
			l, c := lineCol(data, off)
			return &Error{File: file, Line: l, Column: c, Msg: "malformed JSON: unexpected data after the top-level object"}
		}
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset is just past the offending byte.
		l, c := lineCol(data, se.Offset-1)
		return &Error{File: file, Line: l, Column: c, Msg: "malformed JSON: " + se.Error()}
	case errors.As(err, &te):
		// Offset is just past the value of the wrong type; point at its start.
		start := valueStart(data, te.Offset)
		l, c := lineCol(data, start)
		return &Error{File: file, Field: te.Field, Line: l, Column: c,
			Msg: fmt.Sprintf("malformed JSON: %s value where %s is expected", te.Value, jsonTypeName(te.Type.String()))}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		l, c := lineCol(data, int64(len(data)))
		return &Error{File: file, Line: l, Column: c, Msg: "malformed JSON: unexpected end of file"}
	}
	// Errors from our UnmarshalJSON methods carry no offset.
	return &Error{File: file, Msg: "malformed JSON: " + err.Error()}
}

func jsonTypeName(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "map"), strings.HasPrefix(t, "spec."), strings.HasPrefix(t, "*spec."):
		return "an object"
	}
	return t
}

// valueStart finds the start of the JSON value that ends at off.
func valueStart(data []byte, off int64) int64 {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	i := off - 1
	for i >= 0 && isSpace(data[i]) {
		i--
	}
	if i < 0 {
		return 0
	}
	switch data[i] {
	case '"':
		for j := i - 1; j >= 0; j-- {
			if data[j] == '"' && (j == 0 || data[j-1] != '\\') {
				return j
			}
		}
	case '}', ']':
		depth := 0
		inStr := false
		for j := i; j >= 0; j-- {
			c := data[j]
			if c == '"' && (j == 0 || data[j-1] != '\\') {
				inStr = !inStr
				continue
			}
			if inStr {
				continue
			}
			switch c {
			case '}', ']':
				depth++
			case '{', '[':
				depth--
				if depth == 0 {
					return j
				}
			}
		}
	default:
		j := i
		for j >= 0 && !isSpace(data[j]) && data[j] != ':' && data[j] != ',' && data[j] != '[' {
			j--
		}
		return j + 1
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

var yamlLineRE = regexp.MustCompile(`line (\d+)(?:, column (\d+))?`)

// decodeYAML decodes data into f. yaml.v3 reports lines only; the column
// is recovered from the node tree (the value on the reported line).
func decodeYAML(file string, data []byte, f *File) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return yamlError(file, err, nil)
	}
	if root.Kind == 0 {
		return &Error{File: file, Line: 1, Column: 1, Msg: "malformed YAML: empty document"}
	}
	if err := root.Decode(f); err != nil {
		return yamlError(file, err, &root)
	}
	return nil
}

func yamlError(file string, err error, root *yaml.Node) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	e := &Error{File: file, Msg: "malformed YAML: " + msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		if m[2] != "" {
			e.Column, _ = strconv.Atoi(m[2])
		}
		e.Msg = "malformed YAML: " + strings.TrimSpace(strings.TrimPrefix(strings.Replace(msg, m[0], "", 1), ":"))
		// yaml.v3 reports parser (not scanner) errors at the 0-based line
		// of their context mark; libyaml's parser messages all start so.
		if root == nil && strings.Contains(msg, "did not find expected") {
			e.Line++
		}
		if e.Column == 0 && root != nil {
			e.Column = yamlColumn(root, e.Line)
		}
	}
	return e
}

// yamlColumn gives the column of the value on line: the value of a mapping
// entry whose key is on that line, else the first node on it.
func yamlColumn(n *yaml.Node, line int) int {
	first := 0
	var walk func(n *yaml.Node) int
	walk = func(n *yaml.Node) int {
		if n.Line == line && first == 0 {
			first = n.Column
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Line == line {
					return n.Content[i+1].Column
				}
			}
		}
		for _, c := range n.Content {
			if col := walk(c); col != 0 {
				return col
			}
		}
		return 0
	}
	if col := walk(n); col != 0 {
		return col
	}
	return first
}

package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// encodeNumbers writes a name→number map as a JSON object with sorted keys,
// non-finite values as null. A nil or empty map is "{}".
func encodeNumbers(m map[string]float64) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	o := make(map[string]*float64, len(m))
	for k, v := range m {
		if finite(v) {
			v := v
			o[k] = &v
		} else {
			o[k] = nil
		}
	}
	b, err := json.Marshal(o)
	return string(b), err
}

// decodeNumbers reads a name→number object, leaving out null values; an
// empty object is a nil map.
func decodeNumbers(s string) (map[string]float64, error) {
	var o map[string]*float64
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, err
	}
	var m map[string]float64
	for k, v := range o {
		if v == nil {
			continue
		}
		if m == nil {
			m = make(map[string]float64, len(o))
		}
		m[k] = *v
	}
	return m, nil
}

// encodeTimes writes a JSON array, non-finite values as null.
func encodeTimes(ts []float64) (string, error) {
	o := make([]*float64, len(ts))
	for i, v := range ts {
		if finite(v) {
			v := v
			o[i] = &v
		}
	}
	b, err := json.Marshal(o)
	return string(b), err
}

// decodeTimes reads a JSON array, leaving out nulls; empty is nil.
func decodeTimes(s string) ([]float64, error) {
	var o []*float64
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, err
	}
	var ts []float64
	for _, v := range o {
		if v != nil {
			ts = append(ts, *v)
		}
	}
	return ts, nil
}

// sanitize replaces non-finite floats inside JSON-like values (maps,
// slices, float64, float32) by nil so that encoding/json accepts them.
func sanitize(v any) any {
	switch x := v.(type) {
	case float64:
		if !finite(x) {
			return nil
		}
	case float32:
		if !finite(float64(x)) {
			return nil
		}
	case map[string]any:
		o := make(map[string]any, len(x))
		for k, e := range x {
			o[k] = sanitize(e)
		}
		return o
	case []any:
		o := make([]any, len(x))
		for i, e := range x {
			o[i] = sanitize(e)
		}
		return o
	case []float64:
		o := make([]any, len(x))
		for i, e := range x {
			o[i] = sanitize(e)
		}
		return o
	}
	return v
}

func encodeSettings(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(sanitize(m))
	return string(b), err
}

func decodeSettings(s string) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// encodeParams writes the parameters as one JSON object in their order.
// Integers are written as JSON integers and floats always with a fraction
// or exponent ("2.0", not "2"), so that decodeParams can give each value
// back its kind. A non-finite float is null. Duplicate or empty names and
// values of other types are an error.
func encodeParams(ps []Param) (string, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	seen := make(map[string]bool, len(ps))
	for i, p := range ps {
		if p.Name == "" {
			return "", fmt.Errorf("parameter %d has an empty name", i)
		}
		if seen[p.Name] {
			return "", fmt.Errorf("parameter %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.Name)
		b.Write(k)
		b.WriteByte(':')
		switch v := p.Value.(type) {
		case float64:
			b.WriteString(floatJSON(v, 64))
		case float32:
			b.WriteString(floatJSON(float64(v), 32))
		case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			val, err := json.Marshal(v)
			if err != nil {
				return "", fmt.Errorf("parameter %q: %v", p.Name, err)
			}
			b.Write(val)
		default:
			// A struct (expr.Value, say) would marshal to "{}" and lose the value.
			return "", fmt.Errorf("parameter %q has a value of type %T; want an integer, float, string or bool", p.Name, p.Value)
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

func floatJSON(v float64, bits int) string {
	if !finite(v) {
		return "null"
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// decodeParams reads a params object in its stored order. A JSON integer
// that fits an int reads back as int, any other number as float64; strings,
// booleans and null as string, bool and nil.
func decodeParams(s string) ([]Param, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("params %q is not a JSON object", s)
	}
	var ps []Param
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		name, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("params %q: key is not a string", s)
		}
		var raw any
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("params %q: %v", s, err)
		}
		ps = append(ps, Param{Name: name, Value: fromNumber(raw)})
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	return ps, nil
}

// fromNumber turns the json.Numbers of a UseNumber decode into int or
// float64, recursively.
func fromNumber(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 0); err == nil {
				return int(i)
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = fromNumber(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fromNumber(e)
		}
	}
	return v
}

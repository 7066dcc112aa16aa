package spec

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gtune/gtune/backend"
)

// kernelParam is one parameter of a __global__ function as written.
type kernelParam struct {
	Text    string // as written, whitespace collapsed
	Pointer bool   // a pointer or array: a Vector argument's device address
	// Type is the scalar type, or for a pointer the pointee's; kind 0
	// when unknown (a typedef, a macro, a template parameter, void).
	Type scalarType
}

var (
	commentRE = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	qualRE    = regexp.MustCompile(`\b(const|volatile|restrict|__restrict__|__restrict|register|__global|__local|__constant|__private|struct)\b`)
	wordRE    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// scalarType is a type's kind ('f' float, 'i' integer), component size
// in bytes and number of components (float4: 'f', 4, 4).
type scalarType struct {
	kind  byte
	size  int
	lanes int
}

// cTypes maps spelled C/CUDA types (words in order, qualifiers removed)
// to their scalarType.
var cTypes = map[string]scalarType{
	"float": {'f', 4, 1}, "double": {'f', 8, 1}, "half": {'f', 2, 1}, "__half": {'f', 2, 1}, "__nv_bfloat16": {'f', 2, 1},
	"float2": {'f', 4, 2}, "float3": {'f', 4, 3}, "float4": {'f', 4, 4}, "double2": {'f', 8, 2}, "double4": {'f', 8, 4},
	"half2": {'f', 2, 2}, "__half2": {'f', 2, 2},
	"char": {'i', 1, 1}, "signed char": {'i', 1, 1}, "unsigned char": {'i', 1, 1}, "bool": {'i', 1, 1}, "int8_t": {'i', 1, 1}, "uint8_t": {'i', 1, 1},
	"short": {'i', 2, 1}, "short int": {'i', 2, 1}, "unsigned short": {'i', 2, 1}, "unsigned short int": {'i', 2, 1}, "int16_t": {'i', 2, 1}, "uint16_t": {'i', 2, 1},
	"int": {'i', 4, 1}, "signed": {'i', 4, 1}, "signed int": {'i', 4, 1}, "unsigned": {'i', 4, 1}, "unsigned int": {'i', 4, 1}, "int32_t": {'i', 4, 1}, "uint32_t": {'i', 4, 1},
	"long": {'i', 8, 1}, "long int": {'i', 8, 1}, "unsigned long": {'i', 8, 1}, "long long": {'i', 8, 1}, "unsigned long long": {'i', 8, 1},
	"long long int": {'i', 8, 1}, "unsigned long long int": {'i', 8, 1}, "int64_t": {'i', 8, 1}, "uint64_t": {'i', 8, 1}, "size_t": {'i', 8, 1},
	"int2": {'i', 4, 2}, "int4": {'i', 4, 4}, "uint2": {'i', 4, 2}, "uint4": {'i', 4, 4}, "char4": {'i', 1, 4}, "uchar4": {'i', 1, 4},
}

// t1Types maps a T1 argument Type to what it puts in a buffer or a scalar.
var t1Types = map[string]scalarType{
	"bool": {'i', 1, 1}, "int8": {'i', 1, 1}, "uint8": {'i', 1, 1}, "int16": {'i', 2, 1}, "uint16": {'i', 2, 1},
	"int32": {'i', 4, 1}, "uint32": {'i', 4, 1}, "int64": {'i', 8, 1}, "uint64": {'i', 8, 1},
	"half": {'f', 2, 1}, "half2": {'f', 2, 2}, "half4": {'f', 2, 4}, "half8": {'f', 2, 8}, "half16": {'f', 2, 16},
	"float": {'f', 4, 1}, "float2": {'f', 4, 2}, "float4": {'f', 4, 4}, "float8": {'f', 4, 8}, "float16": {'f', 4, 16},
	"double": {'f', 8, 1}, "double2": {'f', 8, 2}, "double4": {'f', 8, 4}, "double8": {'f', 8, 8}, "double16": {'f', 8, 16},
}

// kernelSignature finds the parameters of the __global__ function name in
// src. ok is false when it cannot say for sure — no declaration with
// __global__ in this file (it may come from a header or a macro), a
// template, or declarations that disagree — and the check is then left
// to the driver before the first launch.
func kernelSignature(src, name string) (params []kernelParam, ok bool) {
	if name == "" || strings.ContainsAny(name, "<:") {
		return nil, false
	}
	code := commentRE.ReplaceAllStringFunc(src, func(c string) string { return strings.Repeat(" ", len(c)) })
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\(`)
	var found [][]kernelParam
	for _, m := range re.FindAllStringIndex(code, -1) {
		// The declaration's head runs back to the end of the previous
		// statement, block or preprocessor line.
		head := code[:m[0]]
		start := strings.LastIndexAny(head, ";{}")
		head = head[start+1:]
		var kept []string
		for _, line := range strings.Split(head, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") {
				kept = append(kept, line)
			}
		}
		head = strings.Join(kept, " ")
		if !strings.Contains(head, "__global__") || strings.Contains(head, "template") {
			continue
		}
		open := m[1] - 1
		depth, end := 0, -1
		for i := open; i < len(code) && end < 0; i++ {
			switch code[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			return nil, false
		}
		found = append(found, splitParams(code[open+1:end]))
	}
	if len(found) == 0 {
		return nil, false
	}
	for _, f := range found[1:] {
		if len(f) != len(found[0]) {
			return nil, false
		}
		for i := range f {
			if f[i] != found[0][i] {
				return nil, false
			}
		}
	}
	return found[0], true
}

// splitParams splits a parameter list at its top-level commas.
func splitParams(list string) []kernelParam {
	if t := strings.TrimSpace(list); t == "" || t == "void" {
		return nil
	}
	var out []kernelParam
	depth, from := 0, 0
	for i := 0; i <= len(list); i++ {
		if i < len(list) {
			switch list[i] {
			case '(', '<', '[':
				depth++
				continue
			case ')', '>', ']':
				depth--
				continue
			case ',':
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		}
		out = append(out, parseParam(list[from:i]))
		from = i + 1
	}
	return out
}

func parseParam(text string) kernelParam {
	text = strings.Join(strings.Fields(text), " ")
	p := kernelParam{Text: text, Pointer: strings.ContainsAny(text, "*[&")}
	t := text
	if i := strings.IndexByte(t, '['); i >= 0 {
		t = t[:i]
	}
	t = strings.ReplaceAll(t, "*", " ")
	t = strings.ReplaceAll(t, "&", " ")
	t = qualRE.ReplaceAllString(t, " ")
	words := wordRE.FindAllString(t, -1)
	if len(words) >= 2 {
		words = words[:len(words)-1] // the parameter's name
	}
	p.Type = cTypes[strings.Join(words, " ")]
	return p
}

// checkSignature compares the spec's Arguments with the kernel's
// parameters as the source declares them, so that a wrong argument list is
// refused before any GPU work rather than launched: the count, and for
// each argument that a Vector meets a pointer and a Scalar a value, of the
// same kind (float or integer) and component size where the source spells
// a known type. Typedefs, macros and templates are left to the driver's
// check before the first launch (backend/cuda).
func (l *loader) checkSignature() error {
	s := l.s
	params, ok := kernelSignature(s.Source, s.KernelName)
	if !ok {
		return nil
	}
	for i, p := range params {
		if p.Text == "" {
			return l.errf("KernelSpecification.KernelFile", "parameter %d of %s in %s is empty (a stray comma: the kernel cannot compile)", i+1, s.KernelName, filepathBase(s.KernelFile))
		}
	}
	args := s.Raw.KernelSpecification.Arguments
	if len(params) != len(args) {
		var texts []string
		for _, p := range params {
			texts = append(texts, p.Text)
		}
		return l.errf("KernelSpecification.Arguments", "lists %d arguments, but %s in %s takes %d parameters (%s)",
			len(args), s.KernelName, filepathBase(s.KernelFile), len(params), strings.Join(texts, ", "))
	}
	for i, a := range args {
		p := params[i]
		field := fmt.Sprintf("KernelSpecification.Arguments[%d] (%s)", i, a.Name)
		where := fmt.Sprintf("parameter %d of %s is %q", i+1, s.KernelName, p.Text)
		vector := a.MemoryType == "Vector"
		if vector != p.Pointer {
			what := "a Scalar"
			if vector {
				what = "a Vector (passed as a device pointer)"
			}
			return l.errf(field+".MemoryType", "is %s, but %s", what, where)
		}
		tt, known := t1Types[a.Type]
		if !known || p.Type.kind == 0 {
			continue
		}
		// A buffer may be read in wider vectors of its type (a float
		// buffer as float4*); a scalar is passed by value, so its whole
		// size must agree.
		if tt.kind != p.Type.kind || tt.size != p.Type.size || (!vector && tt.lanes != p.Type.lanes) {
			return l.errf(field+".Type", "is %s, but %s: the kernel would read the %s as another type", a.Type, where,
				map[bool]string{true: "buffer", false: "value"}[vector])
		}
	}
	return nil
}

func filepathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// WorkingSetBytes is the device memory the Vector arguments take, bytes
// (what a launch can touch at most); 0 when a type's size is unknown.
func (s *Spec) WorkingSetBytes() int64 {
	var n int64
	for i, a := range s.args {
		if a.Kind != backend.ArgVector {
			continue
		}
		size := int64(0)
		if t, ok := t1Types[a.Type]; ok {
			size = int64(t.size * t.lanes)
		} else if a.Type == "custom" {
			size = int64(s.Raw.KernelSpecification.Arguments[i].TypeSize)
		}
		if size == 0 {
			return 0
		}
		n += a.Count * size
	}
	return n
}

package spec

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/gtune/gtune/internal/bounded"
)

// checkSource reads the kernel source the way a compiler would before the
// first configuration is compiled, so that a spec whose kernel cannot
// compile is refused on the simulator too (which never compiles): the file
// must be text and not empty, KernelName must name a function of it or of
// a local file it includes, and its brackets must balance. Limits: the
// name is looked for as written (a kernel made by a macro with ## is not
// checked), includes are followed one level from the kernel's folder and
// the spec's include paths (an include not found there stops the check),
// and in a file with #if/#ifdef, whose branches may open a block each,
// brackets are checked along two paths: the first branch of every
// conditional and the last (BracketPaths). A file unbalanced along both
// is refused; along one, it gets a warning (the configurations that take
// that branch cannot compile).
func (l *loader) checkSource() error {
	s := l.s
	src := []byte(s.Source)
	const field = "KernelSpecification.KernelFile"
	name := filepathBase(s.KernelFile)
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return l.errf(field, "%s is not text: byte %d is NUL", name, i)
	}
	if !utf8.Valid(src) {
		// NVRTC reads bytes: Latin-1 in a comment compiles.
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %s is not valid UTF-8 (another encoding, or binary data)", field, name))
	}
	code := stripCode(s.Source)
	if strings.TrimSpace(code) == "" {
		return l.errf(field, "%s holds no code", name)
	}
	if !condRE.MatchString(code) {
		s.BracketsChecked = "brackets"
		if line, what := unbalanced(code); what != "" {
			return &Error{File: s.KernelFile, Line: line, Msg: what + " (the kernel cannot compile)"}
		}
		return l.checkKernelName(code)
	}
	first, last, ok := BracketPaths(code)
	if !ok {
		s.BracketsChecked = ""
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s: brackets not checked: its #if, #elif, #else and #endif do not pair", name))
		return l.checkKernelName(code)
	}
	s.BracketsChecked = "brackets (along the first and the last branch of each #if)"
	l1, w1 := unbalanced(first)
	l2, w2 := unbalanced(last)
	switch {
	case w1 != "" && l1 == l2 && w1 == w2:
		return &Error{File: s.KernelFile, Line: l1, Msg: w1 + " along both the first and the last branch of each #if (the kernel cannot compile)"}
	case w1 != "" && w2 != "":
		return &Error{File: s.KernelFile, Line: l1, Msg: w1 + " along the first branch of each #if, and " + w2 + fmt.Sprintf(" (line %d) along the last (the kernel cannot compile)", l2)}
	case w1 != "":
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s:%d: %s along the first branch of each #if: the configurations that take it cannot compile", name, l1, w1))
	case w2 != "":
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s:%d: %s along the last branch of each #if: the configurations that take it cannot compile", name, l2, w2))
	}
	return l.checkKernelName(code)
}

// BracketPaths gives two readings of code (comments and literals
// blanked) with its conditional directives resolved: first takes the
// first branch of every #if/#ifdef/#ifndef group (every condition true),
// last the last one (#else, or none when the group has no #else: every
// condition false). Lines left out, and the conditional directives
// themselves, are blanked, so line numbers still count. ok is false
// when the directives do not pair (an #endif without #if, an #if never
// closed).
func BracketPaths(code string) (first, last string, ok bool) {
	lines := strings.Split(code, "\n")
	directive := func(i int) string {
		t := strings.TrimLeft(lines[i], " \t")
		if !strings.HasPrefix(t, "#") {
			return ""
		}
		d := strings.TrimLeft(t[1:], " \t")
		for _, k := range []string{"ifdef", "ifndef", "if", "elif", "else", "endif"} {
			if strings.HasPrefix(d, k) {
				return k
			}
		}
		return ""
	}
	// branch reads lines from i up to the directive ending the branch
	// (#elif, #else, #endif; len(lines) at the end of the file), adding
	// the lines path p keeps to kept.
	var branch func(i int, p int, kept []bool) (end int, ok bool)
	branch = func(i int, p int, kept []bool) (int, bool) {
		for i < len(lines) {
			switch directive(i) {
			case "elif", "else", "endif":
				return i, true
			case "if", "ifdef", "ifndef":
				var branches [][]bool
				hasElse := false
				j := i
				for {
					b := make([]bool, len(lines))
					end, ok := branch(j+1, p, b)
					if !ok || end == len(lines) {
						return 0, false // never closed
					}
					branches = append(branches, b)
					d := directive(end)
					hasElse = hasElse || d == "else"
					j = end
					if d == "endif" {
						break
					}
				}
				var chosen []bool
				switch {
				case p == 0:
					chosen = branches[0]
				case hasElse:
					chosen = branches[len(branches)-1]
				}
				for k, on := range chosen {
					kept[k] = kept[k] || on
				}
				i = j + 1
			default:
				kept[i] = true
				i++
			}
		}
		return i, true
	}
	var out [2]string
	for p := range 2 {
		kept := make([]bool, len(lines))
		end, ok := branch(0, p, kept)
		if !ok || end != len(lines) {
			return "", "", false
		}
		text := make([]string, len(lines))
		for i, ln := range lines {
			if kept[i] {
				text[i] = ln
			}
		}
		out[p] = strings.Join(text, "\n")
	}
	return out[0], out[1], true
}

// checkKernelName looks for KernelName followed by "(" in code and in
// the local files it includes.
func (l *loader) checkKernelName(code string) error {
	s := l.s
	kn := s.KernelName
	if i := strings.IndexByte(kn, '<'); i >= 0 {
		kn = kn[:i]
	}
	if i := strings.LastIndex(kn, "::"); i >= 0 {
		kn = kn[i+2:]
	}
	kn = strings.TrimSpace(kn)
	if kn == "" || strings.Contains(code, "##") {
		return nil
	}
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(kn) + `\s*[(<]`)
	if re.MatchString(code) {
		return nil
	}
	// A quoted include is looked for from the kernel's folder on, one in
	// angle brackets in the include folders only; one of those not found
	// is a system header (it cannot hold the kernel), a quoted one not
	// found stops the check (the kernel may be in what cannot be read).
	for _, inc := range s.Includes() {
		found := false
		for _, d := range s.IncludeDirs(inc.Angle) {
			b, err := bounded.ReadFile(filepath.Join(d, inc.Name), bounded.Text, "an included header")
			if err != nil {
				continue
			}
			found = true
			if re.MatchString(stripCode(string(b))) {
				return nil
			}
			break
		}
		if !found && !inc.Angle {
			return nil
		}
	}
	return l.errf("KernelSpecification.KernelName", "%s: no function of that name in %s or the local files it includes", s.KernelName, filepathBase(s.KernelFile))
}

// Include is one #include directive of the kernel source: the file
// named, whether in angle brackets, and its line (1-based).
type Include struct {
	Name  string
	Angle bool
	Line  int
}

// Includes lists the kernel source's #include directives, in order
// (commented-out ones too: the text is read as written, where string
// literals still hold the names). Empty for a spec loaded with NoSource.
func (s *Spec) Includes() []Include {
	var out []Include
	for _, m := range includeRE.FindAllStringSubmatchIndex(s.Source, -1) {
		out = append(out, Include{Name: s.Source[m[4]:m[5]], Angle: s.Source[m[2]:m[3]] == "<",
			Line: 1 + strings.Count(s.Source[:m[0]], "\n")})
	}
	return out
}

// IncludeDirs are the folders NVRTC searches for an include, as the
// spec's compiler options give them (-I DIR, -IDIR, --include-path=DIR,
// resolved at load), after the kernel's own folder for a quoted include
// (angle false).
func (s *Spec) IncludeDirs(angle bool) []string {
	var dirs []string
	if !angle {
		dirs = append(dirs, filepath.Dir(s.KernelFile))
	}
	for i, o := range s.CompilerOptions {
		switch {
		case o == "-I" && i+1 < len(s.CompilerOptions):
			dirs = append(dirs, s.CompilerOptions[i+1])
		case strings.HasPrefix(o, "-I") && len(o) > 2:
			dirs = append(dirs, o[2:])
		case strings.HasPrefix(o, "--include-path="):
			dirs = append(dirs, strings.TrimPrefix(o, "--include-path="))
		}
	}
	return dirs
}

var (
	includeRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]`)
	condRE    = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*if`)
)

// stripCode blanks comments, string and character literals of C/C++
// source, keeping newlines (so that lines still count).
func stripCode(src string) string {
	b := []byte(src)
	out := make([]byte, len(b))
	copy(out, b)
	blank := func(from, to int) {
		for k := from; k < to && k < len(out); k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
	}
	for i := 0; i < len(b); {
		switch {
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				j = len(b) - i
			}
			blank(i, i+j)
			i += j
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			j := bytes.Index(b[i+2:], []byte("*/"))
			end := len(b)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			blank(i, end)
			i = end
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			j := i + 1
			for j < len(b) && b[j] != q && b[j] != '\n' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			blank(i, min(j+1, len(b)))
			i = j + 1
		default:
			i++
		}
	}
	return string(out)
}

// unbalanced finds the first bracket of code that does not match: its
// line and what is wrong, or "" when all balance. A file with conditional
// directives is not judged.
func unbalanced(code string) (line int, what string) {
	if condRE.MatchString(code) {
		return 0, ""
	}
	type open struct {
		c    byte
		line int
	}
	var stack []open
	ln := 1
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{'}
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch c {
		case '\n':
			ln++
		case '(', '[', '{':
			stack = append(stack, open{c, ln})
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1].c != pairs[c] {
				return ln, fmt.Sprintf("unmatched '%c'", c)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		return o.line, fmt.Sprintf("'%c' is never closed", o.c)
	}
	return 0, ""
}

// Package cache reads and writes the result files of other auto-tuners, so
// that gtune can replay recorded tuning runs instead of measuring: Kernel
// Tuner cache files (.json, or .json.gz) and T4 results files (the auto-tuning
// community's results format, formats/T4_1.0.0_results-schema.json). A
// Replay (replay.go) serves a Cache to the tuner as a backend.Backend, the
// way Kernel Tuner's simulation mode serves its cache to a strategy.
//
// # Kernel Tuner cache files
//
// Kernel Tuner (kernel_tuner/util.py: correct_open_cache, read_cache) writes
// a cache as a JSON object whose last member, "cache", maps a configuration
// key (the parameter values' Python str() joined by ",") to one object per
// configuration, appended one line at a time while tuning runs. Until the
// run ends the file lacks its closing "}\n}"; read_cache repairs the ending
// before parsing. Load reads such files too, and further keeps every
// complete entry of a file cut in the middle of an entry (Kernel Tuner
// would refuse that one); Cache.Truncated says that the ending was repaired.
//
// Invalid configurations hold one of Kernel Tuner's error markers
// ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig") in
// place of a number, usually in "time". Python's json writes NaN and
// ±Infinity as bare NaN, Infinity, -Infinity; Load accepts them.
package cache

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/expr"
	"github.com/gtune/gtune/internal/bounded"
)

// Kernel Tuner's error markers (kernel_tuner/util.py: ErrorConfig and its
// subclasses), as written into cache files.
const (
	// MarkerInvalid: the configuration fails the restrictions, or Kernel
	// Tuner could not even create the kernel instance (e.g. a thread block
	// larger than the device allows).
	MarkerInvalid = "InvalidConfig"
	// MarkerCompileFailed: the compiler rejected the configuration.
	MarkerCompileFailed = "CompilationFailedConfig"
	// MarkerRuntimeFailed: the launch or the run failed.
	MarkerRuntimeFailed = "RuntimeFailedConfig"
)

// IsMarker reports whether s is one of Kernel Tuner's error markers.
func IsMarker(s string) bool {
	return s == MarkerInvalid || s == MarkerCompileFailed || s == MarkerRuntimeFailed
}

// Cache is one recorded tuning run: a Kernel Tuner cache or a T4 results
// file. Times are in ms throughout.
type Cache struct {
	Path       string // as given to Load; "" when built in memory
	Format     string // "kerneltuner" or "t4"
	DeviceName string // Kernel Tuner's device_name ("" in T4 files and some AMD caches)
	KernelName string
	// ProblemSize is Kernel Tuner's problem_size as decoded from JSON
	// (a number or a list of numbers); nil when absent.
	ProblemSize any
	// ParamNames are the tunable parameters in Kernel Tuner's order
	// (tune_params_keys); for a T4 file, the order of the first result's
	// configuration.
	ParamNames []string
	// ParamValues are the values of each parameter (tune_params): int,
	// float64, bool or string, in the file's order; for a T4 file, the
	// values the results use, sorted.
	ParamValues map[string][]any
	Objective   string // "time" unless the file says otherwise; "" when absent
	Entries     map[string]*Entry
	// Truncated is true when the file lacked its proper ending (a cache
	// still being written, or cut short) and only its complete entries were
	// read.
	Truncated bool
}

// Entry is one recorded configuration. Durations are ms; a duration that
// the file does not record is NaN.
type Entry struct {
	Key    string // Kernel Tuner key: the values' Python str() joined by ","
	Params []any  // in ParamNames order: int, float64, bool or string
	// Time is the objective time in ms (Kernel Tuner: the mean of Times);
	// NaN when the configuration is invalid or the time is absent.
	Time           float64
	Times          []float64 // one per timed launch, ms
	CompileMs      float64
	BenchmarkMs    float64
	FrameworkMs    float64
	VerificationMs float64
	StrategyMs     float64
	// Error is Kernel Tuner's error marker of an invalid configuration
	// (MarkerInvalid, MarkerCompileFailed, MarkerRuntimeFailed); "" when
	// valid.
	Error string
	// Status is the gtune status of the configuration (see StatusOf).
	Status backend.Status
	// Extra holds the other numeric observations by their file names:
	// GFLOP/s, GB/s, energy (J), power, nvml_power (W), ps_energy (J),
	// core_freq (MHz), temperature (°C), ...
	Extra     map[string]float64
	Timestamp string // as written, "" when absent
	// Other holds the remaining members that are neither numbers nor
	// error markers (lists, strings, null), decoded as encoding/json does.
	Other map[string]any
}

// Valid reports whether the configuration ran and gave a result.
func (e *Entry) Valid() bool { return e.Status == backend.StatusValid }

// StatusOf maps a Kernel Tuner error marker to a gtune status: "" is
// valid, CompilationFailedConfig compile_failed, RuntimeFailedConfig
// runtime_failed, and InvalidConfig launch_failed (gtune has no status for
// a configuration that cannot be instantiated: Kernel Tuner uses it for
// restriction failures and for thread blocks beyond the device's limits).
func StatusOf(marker string) backend.Status {
	switch marker {
	case "":
		return backend.StatusValid
	case MarkerCompileFailed:
		return backend.StatusCompileFailed
	case MarkerInvalid:
		return backend.StatusLaunchFailed
	}
	return backend.StatusRuntimeFailed
}

// MarkerOf is the Kernel Tuner error marker Kernel Tuner would write for a
// gtune status: "" for valid, CompilationFailedConfig for compile_failed,
// InvalidConfig for launch_failed, RuntimeFailedConfig for the rest
// (runtime_failed, timeout, verification_failed: Kernel Tuner has no
// finer marker).
func MarkerOf(s backend.Status) string {
	switch s {
	case backend.StatusValid:
		return ""
	case backend.StatusCompileFailed:
		return MarkerCompileFailed
	case backend.StatusLaunchFailed:
		return MarkerInvalid
	}
	return MarkerRuntimeFailed
}

// Load reads a Kernel Tuner cache file or a T4 results file, gzip-
// compressed or not (told by the content, not the name). Errors name the
// file: unreadable, not JSON, neither format, a cache cut before its first
// entry, an entry without a value for a tunable parameter.
func Load(path string) (*Cache, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cache: %v", err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("cache %s: %v", path, err)
	}
	c.Path = path
	return c, nil
}

// Read is Load from a reader; errors do not name a file.
func Read(r io.Reader) (*Cache, error) {
	br := bufio.NewReader(r)
	gz := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz = true
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %v", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	b, err := bounded.ReadAll(r, bounded.Data, "the cache", "a Kernel Tuner cache")
	if gz && errors.Is(err, io.ErrUnexpectedEOF) {
		// A cache is compressed once it is whole; a compressed file cut
		// short is damaged, not a cache still being written.
		return nil, fmt.Errorf("gzip: the compressed data ends early, after %d bytes of the cache: the file is damaged (a cut copy?)", len(b))
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	b = pythonJSON(bytes.TrimSpace(b))
	if len(b) == 0 {
		return nil, errors.New("the file is empty")
	}
	return parse(b)
}

// Sentinels standing for Python's bare NaN, Infinity and -Infinity, which
// encoding/json does not accept; pythonJSON turns them into these strings.
const (
	sentinelNaN    = "\x00NaN"
	sentinelInf    = "\x00Infinity"
	sentinelNegInf = "\x00-Infinity"
)

// pythonJSON rewrites the bare NaN, Infinity and -Infinity that Python's
// json module writes outside strings into sentinel strings.
func pythonJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 64)
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if inStr {
			out.WriteByte(ch)
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				inStr = false
			}
			continue
		}
		switch {
		case ch == '"':
			inStr = true
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out.WriteString(`"\u0000NaN"`)
			i += 2
			continue
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out.WriteString(`"\u0000Infinity"`)
			i += 7
			continue
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out.WriteString(`"\u0000-Infinity"`)
			i += 8
			continue
		}
		out.WriteByte(ch)
	}
	return out.Bytes()
}

// number converts a decoded JSON value to a float64: json.Number, or a
// sentinel of a non-finite number.
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			// Out of float64 range: Python reads it as ±inf too.
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return f, true
			}
			return 0, false
		}
		return f, true
	case string:
		switch t {
		case sentinelNaN:
			return math.NaN(), true
		case sentinelInf:
			return math.Inf(1), true
		case sentinelNegInf:
			return math.Inf(-1), true
		}
	}
	return 0, false
}

// plain converts a decoded JSON value (with json.Number) to the Go value of
// a tunable parameter or an Other member: json.Number to int when it is
// written as an integer and fits, else float64; sentinels to ±Inf/NaN;
// lists and objects recursively.
func plain(v any) any {
	switch t := v.(type) {
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil && i == int64(int(i)) {
				return int(i)
			}
		}
		f, _ := number(t)
		return f
	case string:
		if f, ok := number(t); ok {
			return f
		}
		return t
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// pyStr is Python's str() of a parameter value, as in Kernel Tuner keys.
func pyStr(v any) string {
	x, err := expr.FromGo(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return x.PyStr()
}

// KeyOf is the Kernel Tuner key of parameter values: their Python str()
// joined by ",".
func KeyOf(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = pyStr(v)
	}
	return strings.Join(parts, ",")
}

// parse decodes the top-level object, streaming the members of "cache"
// so that a file cut inside them keeps its complete entries.
func parse(b []byte) (*Cache, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a Kernel Tuner cache or T4 results file: the top level is not a JSON object")
	}
	head := map[string]json.RawMessage{}
	c := &Cache{Entries: map[string]*Entry{}}
	sawCache := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, headerErr(err)
		}
		name, _ := tok.(string)
		if name == "cache" {
			if err := c.readHeader(head); err != nil {
				return nil, err
			}
			sawCache = true
			complete, err := c.readEntries(dec)
			if err != nil {
				return nil, err
			}
			if !complete {
				c.Truncated = true
				return c, nil
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, headerErr(err)
		}
		head[name] = raw
	}
	if _, err := dec.Token(); err != nil && !sawCache {
		return nil, headerErr(err)
	} else if err != nil {
		c.Truncated = true // cut after the last entry's closing braces
	}
	if sawCache {
		return c, nil
	}
	if _, ok := head["results"]; ok {
		return parseT4(head)
	}
	return nil, errors.New(`neither a Kernel Tuner cache (no "cache" member) nor a T4 results file (no "results" member)`)
}

func headerErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("the file ends before its first cache entry")
	}
	return fmt.Errorf("not JSON: %v", err)
}

// readHeader decodes the members before "cache".
func (c *Cache) readHeader(head map[string]json.RawMessage) error {
	c.Format = "kerneltuner"
	str := func(name string, dst *string) error {
		raw, ok := head[name]
		if !ok {
			return nil
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if s, ok := v.(string); ok {
			*dst = s
		} else if v != nil {
			return fmt.Errorf("%s is %s, not a string", name, raw)
		}
		return nil
	}
	if err := str("device_name", &c.DeviceName); err != nil {
		return err
	}
	if err := str("kernel_name", &c.KernelName); err != nil {
		return err
	}
	if err := str("objective", &c.Objective); err != nil {
		return err
	}
	if raw, ok := head["problem_size"]; ok {
		v, err := decodeNumberValue(raw)
		if err != nil {
			return fmt.Errorf("problem_size: %v", err)
		}
		c.ProblemSize = v
	}
	raw, ok := head["tune_params"]
	if !ok {
		return errors.New(`no "tune_params" before the cache entries`)
	}
	order, err := objectKeys(raw)
	if err != nil {
		return fmt.Errorf("tune_params: %v", err)
	}
	var tp map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&tp); err != nil {
		return fmt.Errorf("tune_params: %v", err)
	}
	c.ParamNames = order
	if raw, ok := head["tune_params_keys"]; ok {
		var keys []string
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("tune_params_keys: %v", err)
		}
		c.ParamNames = keys
	}
	c.ParamValues = make(map[string][]any, len(tp))
	for _, name := range c.ParamNames {
		vs, ok := tp[name].([]any)
		if !ok {
			return fmt.Errorf("tune_params has no list of values for %q", name)
		}
		c.ParamValues[name] = plain(vs).([]any)
	}
	return nil
}

func decodeNumberValue(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return plain(v), nil
}

// objectKeys lists the member names of a JSON object in file order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if dl, ok := tok.(json.Delim); !ok || dl != '{' {
		return nil, errors.New("not a JSON object")
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// readEntries streams the members of "cache". complete is false when the
// input ends inside it; the entries read until then are kept.
func (c *Cache) readEntries(dec *json.Decoder) (complete bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		if isEOF(err) {
			return false, nil
		}
		return false, fmt.Errorf("cache: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, errors.New(`"cache" is not a JSON object`)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			if isEOF(err) {
				return false, nil
			}
			return false, fmt.Errorf("cache entry %d: %v", len(c.Entries)+1, err)
		}
		key, _ := tok.(string)
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if isEOF(err) {
				return false, nil
			}
			return false, fmt.Errorf("cache entry %q: %v", key, err)
		}
		e, err := c.entry(key, m)
		if err != nil {
			return false, err
		}
		c.Entries[key] = e
	}
	if _, err := dec.Token(); err != nil { // the closing brace of "cache"
		if isEOF(err) {
			return false, nil
		}
		return false, fmt.Errorf("cache: %v", err)
	}
	return true, nil
}

func isEOF(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// timing members of a Kernel Tuner entry.
var timingFields = []string{"compile_time", "benchmark_time", "framework_time", "verification_time", "strategy_time"}

func (e *Entry) timing(name string) *float64 {
	switch name {
	case "compile_time":
		return &e.CompileMs
	case "benchmark_time":
		return &e.BenchmarkMs
	case "framework_time":
		return &e.FrameworkMs
	case "verification_time":
		return &e.VerificationMs
	case "strategy_time":
		return &e.StrategyMs
	}
	return nil
}

func newEntry(key string) *Entry {
	nan := math.NaN()
	return &Entry{Key: key, Time: nan, CompileMs: nan, BenchmarkMs: nan, FrameworkMs: nan, VerificationMs: nan, StrategyMs: nan}
}

// entry builds an Entry from one decoded cache member.
func (c *Cache) entry(key string, m map[string]any) (*Entry, error) {
	e := newEntry(key)
	e.Params = make([]any, len(c.ParamNames))
	isParam := make(map[string]bool, len(c.ParamNames))
	for i, name := range c.ParamNames {
		v, ok := m[name]
		if !ok {
			return nil, fmt.Errorf("cache entry %q has no value for tunable parameter %q", key, name)
		}
		e.Params[i] = plain(v)
		isParam[name] = true
	}
	// The marker of "time" wins, then the objective's, then any other
	// member's (newer Kernel Tuner versions also write "__error__").
	markerOf := func(name string) string {
		if s, ok := m[name].(string); ok && IsMarker(s) {
			return s
		}
		return ""
	}
	e.Error = markerOf("time")
	if e.Error == "" && c.Objective != "" {
		e.Error = markerOf(c.Objective)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if isParam[name] {
			continue
		}
		v := m[name]
		if s, ok := v.(string); ok && IsMarker(s) {
			if e.Error == "" {
				e.Error = s
			}
			continue
		}
		switch name {
		case "time":
			if f, ok := number(v); ok {
				e.Time = f
				continue
			}
		case "times":
			if ts, ok := v.([]any); ok {
				e.Times = make([]float64, 0, len(ts))
				good := true
				for _, t := range ts {
					f, ok := number(t)
					if !ok {
						good = false
						break
					}
					e.Times = append(e.Times, f)
				}
				if good {
					continue
				}
				e.Times = nil
			}
		case "timestamp":
			if s, ok := v.(string); ok {
				e.Timestamp = s
				continue
			}
		}
		if p := e.timing(name); p != nil {
			if f, ok := number(v); ok {
				*p = f
				continue
			}
		}
		if f, ok := number(v); ok {
			if e.Extra == nil {
				e.Extra = map[string]float64{}
			}
			e.Extra[name] = f
			continue
		}
		if e.Other == nil {
			e.Other = map[string]any{}
		}
		e.Other[name] = plain(v)
	}
	if e.Error != "" {
		e.Time = math.NaN()
	} else {
		// A measured duration is not negative and not infinite: an
		// entry of -1 ms would be replayed as the optimum. (NaN is a
		// time not recorded, as Python's json writes it.)
		bad := func(f float64) bool { return math.IsInf(f, 0) || f < 0 }
		if bad(e.Time) {
			return nil, fmt.Errorf("cache entry %q: time %v ms is not a duration (want a number ≥ 0, or an error marker)", key, e.Time)
		}
		for _, t := range e.Times {
			if bad(t) {
				return nil, fmt.Errorf("cache entry %q: times holds %v ms, not a duration (want numbers ≥ 0)", key, t)
			}
		}
	}
	e.Status = StatusOf(e.Error)
	return e, nil
}

// RecordedOrder is the keys of the entries with a timestamp in the order
// of their timestamps (Kernel Tuner's time of the benchmark; gtune's
// export, the time the evaluation started): the order in which the
// recorded run evaluated, and told its strategy, those configurations.
// Entries without a readable timestamp are left out; equal timestamps are
// ordered by key.
func (c *Cache) RecordedOrder() []string {
	type stamped struct {
		key string
		at  time.Time
	}
	var es []stamped
	for k, e := range c.Entries {
		if t, ok := parsePyTime(e.Timestamp); ok {
			es = append(es, stamped{k, t})
		}
	}
	slices.SortFunc(es, func(a, b stamped) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.key
	}
	return keys
}

// Keys gives the entry keys in a stable order: Kernel Tuner's enumeration
// order where the values are in ParamValues (first parameter slowest),
// then by key.
func (c *Cache) Keys() []string {
	pos := make([]map[string]int, len(c.ParamNames))
	for i, name := range c.ParamNames {
		pos[i] = map[string]int{}
		for j, v := range c.ParamValues[name] {
			s := pyStr(v)
			if _, dup := pos[i][s]; !dup {
				pos[i][s] = j
			}
		}
	}
	type rank struct {
		key string
		idx []int
	}
	rs := make([]rank, 0, len(c.Entries))
	for k, e := range c.Entries {
		r := rank{key: k, idx: make([]int, len(e.Params))}
		for i, v := range e.Params {
			j, ok := 0, false
			if i < len(pos) {
				j, ok = pos[i][pyStr(v)]
			}
			if !ok {
				j = math.MaxInt
			}
			r.idx[i] = j
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(a, b int) bool {
		for i := range rs[a].idx {
			if i >= len(rs[b].idx) {
				return false
			}
			if rs[a].idx[i] != rs[b].idx[i] {
				return rs[a].idx[i] < rs[b].idx[i]
			}
		}
		return rs[a].key < rs[b].key
	})
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.key
	}
	return out
}

// Best is the valid entry with the lowest Time, ties broken by key; nil
// when no entry is valid with a finite time.
func (c *Cache) Best() *Entry {
	var best *Entry
	for _, e := range c.Entries {
		if !e.Valid() || math.IsNaN(e.Time) {
			continue
		}
		if best == nil || e.Time < best.Time || (e.Time == best.Time && e.Key < best.Key) {
			best = e
		}
	}
	return best
}

// Counts gives the number of entries per status.
func (c *Cache) Counts() map[backend.Status]int {
	n := map[backend.Status]int{}
	for _, e := range c.Entries {
		n[e.Status]++
	}
	return n
}

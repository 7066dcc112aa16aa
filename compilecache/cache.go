// Package compilecache keeps compiled kernels so that each distinct kernel
// is compiled once: in memory for a run, and on disk between runs (a
// resumed or repeated run recompiles nothing). A binary is keyed by
// everything that decides it (Key): the compiler and its target
// (backend.Compiler), the kernel's name, source, compiler options and
// defines, and the simulated work. A compiler's rejection of a kernel is
// kept as well (its log), so a repeated run does not compile a failing
// configuration again either. The disk part is bounded in size: the
// least recently used binaries are removed first.
//
// Headers a kernel includes from files are not part of the key: a change
// to one is not seen (run with --no-compile-cache, or clear the folder).
//
// # Integrity
//
// The cache never uses a file as it is on trust. Each entry carries its
// key and a SHA-256 of its key and contents (entrySum); an entry whose
// check fails (altered on disk, a file of another key, garbage, an empty
// or cut file) is removed, reported through the warning function (naming
// the file) and counted as a miss, so the kernel is compiled again. An
// entry that passes the check but whose binary the GPU cannot load (a
// foreign image with a matching sum) is removed by its user through
// Discard, which warns the same way.
package compilecache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
	"github.com/gtune/gtune/internal/bounded"
)

// DefaultMaxBytes bounds the disk part of a cache opened without a bound:
// 2 GiB, about 20,000 CUBINs of 100 KiB.
const DefaultMaxBytes int64 = 2 << 30

// Cache is one cache folder. Its methods are safe for concurrent use; two
// processes may share a folder (files are written whole, then renamed).
type Cache struct {
	dir string
	max int64

	// warn receives the warnings (SetWarn); nil: none.
	warn func(msg string)

	mu     sync.Mutex
	mem    map[string]entry
	hits   int
	misses int
	trimAt time.Time
}

// DefaultDir is the user's cache folder for gtune's binaries:
// $XDG_CACHE_HOME/gtune/kernels (os.UserCacheDir). Errors: no cache folder
// can be determined (no $HOME).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "gtune", "kernels"), nil
}

// Open opens (creating it) the cache folder dir, its disk part bounded by
// maxBytes (≤ 0: DefaultMaxBytes). Errors: a folder that cannot be
// created.
func Open(dir string, maxBytes int64) (*Cache, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("compile cache: %w", err)
	}
	return &Cache{dir: dir, max: maxBytes, mem: map[string]entry{}}, nil
}

// Dir is the cache's folder.
func (c *Cache) Dir() string { return c.dir }

// SetWarn sets the function that receives the cache's warnings: one line
// naming a file that failed its check and was removed (gtune prints them
// on standard error). Call it before the cache is used.
func (c *Cache) SetWarn(warn func(msg string)) { c.warn = warn }

func (c *Cache) warnf(format string, args ...any) {
	if c.warn != nil {
		c.warn(fmt.Sprintf(format, args...))
	}
}

// Key is the cache key of job j of kernel k compiled by compiler (the
// backend's backend.Compiler identity): a SHA-256 over the compiler, the
// kernel's name, source (the job's own when it has one), compiler options
// and the job's defines and simulated work, hex. The configuration key and
// the launch geometry are not part of it: configurations that differ only
// in GPU settings or grid share one binary.
func Key(compiler string, k backend.Kernel, j *backend.Job) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	// Version 2: entries carry their key and a checksum (entrySum); the
	// files of version 1 are never read, and age out of the folder.
	field("gtune-compile-2")
	field(compiler)
	field(k.KernelName)
	src := k.Source
	if j.Source != "" {
		src = j.Source
	}
	field(src)
	field(strings.Join(k.CompilerOptions, "\x00"))
	for _, d := range j.Defines {
		field(d.Name + "=" + d.Value)
	}
	if j.Work != nil {
		w, _ := json.Marshal(j.Work)
		field(string(w))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// entry is a compilation's outcome as stored on disk: a binary, or the
// compiler's log rejecting the kernel, with its key and checksum.
type entry struct {
	Key      string          `json:"key"`
	Binary   *backend.Binary `json:"binary,omitempty"`
	Rejected string          `json:"rejected,omitempty"`
	// SHA256 is entrySum of the rest, hex.
	SHA256 string `json:"sha256"`
}

// entrySum is the checksum of an entry: SHA-256 over its key, binary
// (image, log, compile time and PTX where kept) and rejection log, each length-prefixed,
// hex.
func entrySum(e entry) string {
	h := sha256.New()
	field := func(b []byte) { fmt.Fprintf(h, "%d:", len(b)); h.Write(b); h.Write([]byte{'\n'}) }
	field([]byte("gtune-compile-entry-1"))
	field([]byte(e.Key))
	if b := e.Binary; b != nil {
		field([]byte("binary"))
		field(b.Image)
		field([]byte(b.Log))
		field([]byte(strconv.FormatFloat(b.CompileMs, 'g', -1, 64)))
		// Entries written before PTX was kept have none and keep their
		// checksum.
		if len(b.PTX) > 0 {
			field([]byte("ptx"))
			field(b.PTX)
		}
	}
	field([]byte(e.Rejected))
	return hex.EncodeToString(h.Sum(nil))
}

// check says why e, read from a file for key, cannot be used; "" when it
// can.
func (e entry) check(key string) string {
	switch {
	case e.Binary == nil && e.Rejected == "":
		return "it holds no binary"
	case e.Key != key:
		return "it holds the entry of another key"
	case e.SHA256 == "":
		return "it has no checksum"
	case e.SHA256 != entrySum(e):
		return "its checksum does not match its contents (altered on disk)"
	case e.Binary != nil && len(e.Binary.Image) == 0:
		return "its binary image is empty"
	}
	return ""
}

// outcome is e as Get returns it.
func (e entry) outcome() (*backend.Binary, *backend.CompileError) {
	if e.Binary == nil {
		return nil, &backend.CompileError{Log: e.Rejected}
	}
	return e.Binary, nil
}

func (c *Cache) path(key string) string { return filepath.Join(c.dir, key[:2], key+".json") }

// Get gives the outcome stored under key, from memory or disk: the
// binary, or (rejected non-nil) the compiler's rejection of the kernel;
// ok is false when nothing is stored. It counts a hit or a miss. A file
// that cannot be decoded or fails its check (see Integrity) is a miss: it
// is removed, with a warning naming it (a crash mid-write leaves no such
// file; a foreign or altered one may).
func (c *Cache) Get(key string) (bin *backend.Binary, rejected *backend.CompileError, ok bool) {
	c.mu.Lock()
	if e, ok := c.mem[key]; ok {
		c.hits++
		c.mu.Unlock()
		bin, rejected = e.outcome()
		return bin, rejected, true
	}
	c.mu.Unlock()
	p := c.path(key)
	data, err := bounded.ReadFile(p, bounded.Data, "a compile-cache entry")
	var e entry
	if err == nil {
		why := ""
		if jerr := json.Unmarshal(data, &e); jerr != nil {
			why = "it is not a compile-cache entry (" + jerr.Error() + ")"
		} else {
			why = e.check(key)
		}
		if why != "" {
			err = errors.New(why)
			os.Remove(p)
			c.warnf("compile cache: %s: %s; removed, the kernel is compiled again", p, why)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.misses++
		return nil, nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used: kept longest
	c.mem[key] = e
	c.hits++
	bin, rejected = e.outcome()
	return bin, rejected, true
}

// Discard removes the entry of key from memory and disk, with a warning
// naming its file and why (a binary that passed its check but that the
// GPU could not load), so that the next Get misses and the kernel is
// compiled again. It returns the file's path.
func (c *Cache) Discard(key, why string) string {
	c.mu.Lock()
	delete(c.mem, key)
	c.mu.Unlock()
	p := c.path(key)
	os.Remove(p)
	c.warnf("compile cache: %s: %s; removed, the kernel is compiled again", p, why)
	return p
}

// Put stores b under key in memory and on disk (written to a temporary
// file, then renamed), then trims the folder to its bound at most every
// 10 s. Errors: the disk write; the binary stays in memory.
func (c *Cache) Put(key string, b *backend.Binary) error { return c.put(key, entry{Binary: b}) }

// PutRejected stores the compiler's rejection of the kernel under key
// (its log), as Put does a binary. A failure of the compiler's process
// (backend.CompileError.Process) is not a rejection: do not store it.
func (c *Cache) PutRejected(key string, log string) error {
	return c.put(key, entry{Rejected: log})
}

func (c *Cache) put(key string, e entry) error {
	e.Key = key
	e.SHA256 = entrySum(e)
	c.mu.Lock()
	c.mem[key] = e
	trim := time.Since(c.trimAt) > 10*time.Second
	if trim {
		c.trimAt = time.Now()
	}
	c.mu.Unlock()
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("compile cache: writing %s: %w", p, errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("compile cache: %w", err)
	}
	if trim {
		return c.Trim()
	}
	return nil
}

// Stats are the hits and misses of Get since Open.
func (c *Cache) Stats() (hits, misses int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// Trim removes the least recently used binaries (by modification time,
// which Get renews) until the folder holds at most its bound. Errors: the
// folder cannot be read.
func (c *Cache) Trim() error {
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile by another process
		}
		files = append(files, file{p, info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	sort.Slice(files, func(a, b int) bool { return files[a].mod.Before(files[b].mod) })
	for _, f := range files {
		if total <= c.max {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
	return nil
}

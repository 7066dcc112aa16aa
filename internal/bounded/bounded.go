// Package bounded reads files and streams up to a size bound, so that no
// input (a device such as /dev/zero, a file grown by mistake, a
// decompression bomb) can make gtune read until memory runs out. The
// bounds are the callers': each names what it reads.
package bounded

import (
	"fmt"
	"io"
	"os"
)

// Common bounds, in bytes.
const (
	MiB = 1 << 20
	GiB = 1 << 30
	// Text is the bound of a specification, a workload, a kernel
	// source or an included header, a journal or a state file.
	Text = 64 * MiB
	// PTX is the bound of one PTX module (a kernel's is kilobytes to a
	// few megabytes).
	PTX = 256 * MiB
	// Data is the bound of a Kernel Tuner cache or a T4 file, an output
	// to verify against, a profiler's report, a compile-cache entry,
	// after decompression.
	Data = 1 * GiB
)

// TooLarge is the error of an input over its bound.
type TooLarge struct {
	Name  string // the file, or what the stream is
	What  string // what it was read as: "a spec", "PTX"
	Bound int64  // bytes
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("%s is larger than %s, the most gtune reads as %s", e.Name, size(e.Bound), e.What)
}

func size(n int64) string {
	switch {
	case n >= GiB && n%GiB == 0:
		return fmt.Sprintf("%d GiB", n/GiB)
	case n >= MiB && n%MiB == 0:
		return fmt.Sprintf("%d MiB", n/MiB)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the file at path, of at most bound bytes, read as what
// (for the error). Errors: os.Open's, the read's, a *TooLarge naming the
// path when the file (or the device, the pipe) holds more than bound.
func ReadFile(path string, bound int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > bound {
		return nil, &TooLarge{Name: path, What: what, Bound: bound}
	}
	return ReadAll(f, bound, path, what)
}

// ReadAll reads r to its end, at most bound bytes; name and what name
// it in the error. Errors: the read's (with what was read before it), a
// *TooLarge when r holds more than bound.
func ReadAll(r io.Reader, bound int64, name, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, bound+1))
	if int64(len(b)) > bound {
		return nil, &TooLarge{Name: name, What: what, Bound: bound}
	}
	return b, err
}

// Reader is r cut at bound bytes: a read past the bound fails with a
// *TooLarge naming name and what, for inputs read as a stream (a CSV on
// standard input) rather than whole.
func Reader(r io.Reader, bound int64, name, what string) io.Reader {
	return &reader{r: r, left: bound, err: &TooLarge{Name: name, What: what, Bound: bound}}
}

type reader struct {
	r    io.Reader
	left int64
	err  error
}

func (b *reader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), b.err // the bytes within the bound, then the error
	}
	return n, err
}

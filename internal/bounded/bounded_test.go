package bounded

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBounds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, bytes.Repeat([]byte("x"), 10), 0o644)
	if b, err := ReadFile(p, 10, "a test"); err != nil || len(b) != 10 {
		t.Errorf("10 bytes at a bound of 10: %d, %v", len(b), err)
	}
	_, err := ReadFile(p, 9, "a test")
	var tl *TooLarge
	if !errors.As(err, &tl) || err.Error() != p+" is larger than 9 bytes, the most gtune reads as a test" {
		t.Errorf("10 bytes at a bound of 9: %v", err)
	}
	// A device with no size: read up to the bound, then refused.
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := ReadFile("/dev/zero", 2*MiB, "PTX")
		if err == nil || err.Error() != "/dev/zero is larger than 2 MiB, the most gtune reads as PTX" {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	if _, err := ReadAll(strings.NewReader("abc"), 2, "stdin", "a cache"); err == nil || !strings.Contains(err.Error(), "stdin is larger than 2 bytes") {
		t.Errorf("stream: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 1, "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if got := size(Data); got != "1 GiB" {
		t.Errorf("size(Data) = %q", got)
	}
}

func TestReader(t *testing.T) {
	b, err := io.ReadAll(Reader(strings.NewReader("abcdef"), 6, "stdin", "a CSV"))
	if err != nil || string(b) != "abcdef" {
		t.Errorf("6 bytes at a bound of 6: %q, %v", b, err)
	}
	b, err = io.ReadAll(Reader(strings.NewReader("abcdefg"), 6, "stdin", "a CSV"))
	var tl *TooLarge
	if !errors.As(err, &tl) || string(b) != "abcdef" || err.Error() != "stdin is larger than 6 bytes, the most gtune reads as a CSV" {
		t.Errorf("7 bytes at a bound of 6: %q, %v", b, err)
	}
}

package gpuctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gtune/gtune/backend"
)

// Session applies configurations' GPU settings to one GPU and puts the
// original settings back at Close. Before its first change it reads the
// original settings and writes them to the journal (when it has a path),
// so that a crash between a change and Close can be repaired with
// Restore(journal). Safe for concurrent use.
type Session struct {
	ctl     Controller
	journal string
	meta    Journal

	mu      sync.Mutex
	begun   bool
	orig    State
	applied backend.Settings // the last settings applied; 0 fields not yet touched
	closed  bool
}

// NewSession returns a Session for ctl. journal is the journal's path
// ("" writes none: an in-memory simulated GPU); meta gives the journal's
// Backend, DeviceName and SimState.
func NewSession(ctl Controller, journal string, meta Journal) *Session {
	return &Session{ctl: ctl, journal: journal, meta: meta}
}

// Controller is the session's controller.
func (s *Session) Controller() Controller { return s.ctl }

// JournalPath is where the journal is written ("" for none).
func (s *Session) JournalPath() string { return s.journal }

// begin records the original settings; call with s.mu held.
func (s *Session) begin() error {
	if s.begun {
		return nil
	}
	if s.closed {
		return errors.New("gpuctl: session is closed")
	}
	orig, err := s.ctl.Get()
	if err != nil {
		return err
	}
	if s.journal != "" {
		j := s.meta
		j.DeviceUUID, j.Original, j.PID, j.Created = s.ctl.DeviceUUID(), orig, os.Getpid(), time.Now().UTC().Format(time.RFC3339)
		if err := WriteJournal(s.journal, j); err != nil {
			return err
		}
	}
	s.orig, s.begun = orig, true
	return nil
}

// Original is the state recorded before the first change; ok is false
// before any change.
func (s *Session) Original() (State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.orig, s.begun
}

// Probe tells whether the user may change settings, changing nothing: it
// sets the power limit to its current value (NVML has no permission
// query). The journal is written first and removed again when the probe
// is refused. Errors: ErrNoPermission (errors.Is) and NVML's others.
func (s *Session) Probe() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.begin(); err != nil {
		return err
	}
	err := s.ctl.SetPowerLimit(s.orig.PowerLimitW)
	if err != nil && errors.Is(err, ErrNoPermission) {
		s.forget()
	}
	return err
}

// forget drops the journal of a session that changed nothing.
func (s *Session) forget() {
	if s.journal != "" {
		os.Remove(s.journal)
	}
	s.begun = false
}

// Apply sets the non-zero fields of st that differ from what the session
// set last: memory clock first (the SM clock's table depends on it), then
// SM clock, then power limit. Errors: *SettingError for an unsupported
// value, ErrNoPermission, NVML's others.
func (s *Session) Apply(st backend.Settings) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == (backend.Settings{}) {
		return nil
	}
	if err := s.begin(); err != nil {
		return err
	}
	if st.MemClockMHz != 0 && st.MemClockMHz != s.applied.MemClockMHz {
		if err := s.ctl.SetMemClock(st.MemClockMHz); err != nil {
			return err
		}
		s.applied.MemClockMHz = st.MemClockMHz
		s.applied.CoreClockMHz = 0 // application clocks may have moved it
	}
	if st.CoreClockMHz != 0 && st.CoreClockMHz != s.applied.CoreClockMHz {
		if err := s.ctl.SetCoreClock(st.CoreClockMHz); err != nil {
			return err
		}
		s.applied.CoreClockMHz = st.CoreClockMHz
	}
	if st.PowerLimitW != 0 && st.PowerLimitW != s.applied.PowerLimitW {
		if err := s.ctl.SetPowerLimit(st.PowerLimitW); err != nil {
			return err
		}
		s.applied.PowerLimitW = st.PowerLimitW
	}
	return nil
}

// Close restores the original settings when the session changed any and
// then removes the journal. When restoring fails the journal stays, and
// the error says how to retry. Later calls do nothing.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if !s.begun {
		return nil
	}
	if err := s.ctl.Restore(s.orig); err != nil {
		if s.journal != "" {
			return fmt.Errorf("%w; the original settings are in %s: retry with `gtune restore --journal %s`", err, s.journal, s.journal)
		}
		return err
	}
	if s.journal != "" {
		if err := os.Remove(s.journal); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("settings restored, but removing the journal: %w", err)
		}
	}
	return nil
}

// Restore puts back the settings recorded in a journal through ctl and
// removes the journal. Errors: the journal names another device (nothing
// is changed), or restoring failed (the journal stays).
func Restore(path string, j *Journal, ctl Controller) error {
	if ctl.DeviceUUID() != j.DeviceUUID {
		return &JournalError{path, fmt.Sprintf("is for device %s (%s), but the device found is %s; nothing was changed", j.DeviceUUID, j.DeviceName, ctl.DeviceUUID())}
	}
	if err := sane(j.Original, ctl.Tables()); err != nil {
		return &JournalError{path, err.Error() + "; nothing was changed"}
	}
	if err := ctl.Restore(j.Original); err != nil {
		return err
	}
	return os.Remove(path)
}

// sane refuses recorded settings the device does not support (a journal
// edited by hand, or from a device with other tables).
func sane(st State, t Tables) error {
	if st.PowerLimitW != 0 {
		if err := t.checkPower(st.PowerLimitW); err != nil {
			return fmt.Errorf("recorded power limit: %v", err)
		}
	}
	if st.AppMemMHz != 0 {
		if err := t.checkMem(st.AppMemMHz); err != nil {
			return fmt.Errorf("recorded application clocks: %v", err)
		}
	}
	if st.AppCoreMHz != 0 && st.AppMemMHz != 0 {
		if err := t.checkCore(st.AppCoreMHz, st.AppMemMHz); err != nil {
			return fmt.Errorf("recorded application clocks: %v", err)
		}
	}
	return nil
}

// Wrap returns be with GPU settings handled before each Run: the fields
// of Plan.Settings named in drop are cleared (parameters kept at one value
// because the user may not change them), the rest are applied through s
// (nil s: a plan that still has Settings fails as launch_failed, changing
// nothing). A setting that fails makes that configuration launch_failed
// with the reason; the run goes on.
func Wrap(be backend.Backend, s *Session, drop map[string]bool) backend.Backend {
	return &wrapped{Backend: be, s: s, drop: drop}
}

type wrapped struct {
	backend.Backend
	s    *Session
	drop map[string]bool
}

// Unwrap is the wrapped backend.
func (w *wrapped) Unwrap() backend.Backend { return w.Backend }

func (w *wrapped) Run(ctx context.Context, p *backend.Plan) (*backend.Result, error) {
	if p == nil || p.Settings == nil {
		return w.Backend.Run(ctx, p)
	}
	jj, st := *p, *p.Settings
	if w.drop[backend.ParamCoreClock] {
		st.CoreClockMHz = 0
	}
	if w.drop[backend.ParamMemClock] {
		st.MemClockMHz = 0
	}
	if w.drop[backend.ParamPowerLimit] {
		st.PowerLimitW = 0
	}
	if st == (backend.Settings{}) {
		jj.Settings = nil
		return w.Backend.Run(ctx, &jj)
	}
	jj.Settings = &st
	fail := func(reason string) (*backend.Result, error) {
		return &backend.Result{Status: backend.StatusLaunchFailed, Reason: reason}, nil
	}
	if w.s == nil {
		return fail("GPU settings are not allowed (gtune tune --allow-gpu-settings)")
	}
	if err := w.s.Apply(st); err != nil {
		return fail("GPU settings: " + err.Error())
	}
	return w.Backend.Run(ctx, &jj)
}

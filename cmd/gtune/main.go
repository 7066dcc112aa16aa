// Command gtune tunes CUDA kernels for time and energy, on a real GPU or on
// the simulated one. It only wires the packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gtune/gtune/backend/compileproc"
	"github.com/gtune/gtune/backend/cuda"
	"github.com/gtune/gtune/backend/remote"
	"github.com/gtune/gtune/gpuctl"
	"github.com/gtune/gtune/internal/badinput"
	"github.com/gtune/gtune/internal/progress"
	"github.com/gtune/gtune/spec"
	"github.com/gtune/gtune/tuner"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit statuses: 0 success, 1 runtime failure, 2 bad input.
const (
	exitRuntime  = 1
	exitBadInput = 2
)

// inputError marks errors caused by the user's input (exit status 2).
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

func badInput(format string, a ...any) error { return inputError{fmt.Errorf(format, a...)} }

func main() {
	if len(os.Args) > 1 && os.Args[1] == cuda.WorkerArg {
		cuda.WorkerMain()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == compileproc.WorkerArg {
		compileproc.WorkerMain()
		return
	}
	if len(os.Args) > 1 && os.Args[1] == remote.WorkerArg {
		os.Exit(remoteWorkerMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "gtune:", err)
	if strings.HasPrefix(err.Error(), "unknown command ") {
		return exitBadInput // a usage error, as an unknown flag is
	}
	return exitCode(err)
}

func exitCode(err error) int {
	var ie inputError
	var se *spec.Error
	var ce *tuner.ConfigError
	var ge *gpuctl.InputError
	if errors.As(err, &ie) || errors.As(err, &se) || errors.As(err, &ce) || errors.As(err, &ge) || badinput.Is(err) {
		return exitBadInput
	}
	return exitRuntime
}

// subcommands are the commands of gtune; each file adds its own in an init
// function, so commands can be added without touching this file.
var subcommands = []func() *cobra.Command{newTuneCmd, newSpaceCmd, newDevicesCmd}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "gtune",
		Short:         "Energy-aware auto-tuner for GPU kernels",
		Long:          "gtune tunes a CUDA kernel's tunable parameters for time, energy, power, EDP or a user metric,\non the GPU in front of it or on a simulated GPU, and keeps every measurement in a SQLite database.",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&progress.Quiet, "quiet", false, "no progress (bars, spinners, progress lines) on stderr; results and errors are still printed")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return emptyValues(c) }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return inputError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	for _, c := range root.Commands() {
		c.Args = wrapArgs(c.Args)
	}
	return root
}

// emptyValues refuses a text flag given an empty value (--devices "",
// --results ""): each such flag's default or absence means something
// (one GPU, a folder, a policy from the spec), and an empty value,
// often an unset shell variable, silently meant that instead.
func emptyValues(c *cobra.Command) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if err == nil && f.Value.Type() == "string" && f.Value.String() == "" {
			err = badInput("--%s \"\": an empty value; give one, or leave --%s out for its default", f.Name, f.Name)
		}
	})
	return err
}

// wrapArgs makes argument-count errors input errors (exit 2).
func wrapArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	if v == nil {
		return nil
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return inputError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
		}
		return nil
	}
}

package cmdutil

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/iostreams"
)

// TestStopOnSignals: the first signal stops the run gracefully; the same
// stop sent again at once (timeout(1) signals the process and its group)
// does not end the process; a signal after RepeatedSignal does.
func TestStopOnSignals(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	clock := t0
	sigs := make(chan os.Signal)
	cancels := 0
	var killed []os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		stopOnSignals(sigs, func() { cancels++ }, func() time.Time { return clock },
			func(s os.Signal) { killed = append(killed, s) })
	}()
	send := func(at time.Duration, s os.Signal) {
		clock = t0.Add(at)
		sigs <- s // unbuffered: stopOnSignals has taken the one before
	}
	send(0, syscall.SIGTERM)
	send(time.Millisecond, syscall.SIGTERM)
	send(RepeatedSignal/2, os.Interrupt)
	send(RepeatedSignal+time.Millisecond, os.Interrupt)
	<-done
	if cancels != 1 {
		t.Errorf("cancelled %d times, want once", cancels)
	}
	if len(killed) != 1 || killed[0] != os.Interrupt {
		t.Errorf("killed by %v, want the SIGINT sent after %s", killed, RepeatedSignal)
	}
}

// TestInterruptedLine: a command stopped by a signal ends with one line
// that says so and exit 130, not the error of the request the stop cut
// short, also when that error does not say it was cancelled; a command's
// own InterruptedError says what it left.
func TestInterruptedLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"cancelled request", fmt.Errorf("commit to iot.t: put m1.avro: %w", context.Canceled),
			"Error: interrupted: nothing was left half done: run the command again to finish\n"},
		{"other error after the stop", errors.New("read v3.metadata.json: connection reset"),
			"Error: interrupted: nothing was left half done: run the command again to finish\n"},
		{"the command's own", &InterruptedError{Left: "2 files loaded", Err: context.Canceled},
			"Error: interrupted: 2 files loaded\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			ios, out, errOut := iostreams.Test()
			code := Execute(ctx, &Factory{IO: ios, Getenv: func(string) (string, bool) { return "", false }, Environ: func() []string { return nil }},
				[]string{"run"}, func(f *Factory) *cobra.Command {
					root := &cobra.Command{Use: "timelake"}
					PrepareRoot(root, f)
					root.AddCommand(&cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return tc.err }})
					return root
				})
			if code != ExitCancelled || errOut.String() != tc.want || out.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, ExitCancelled, tc.want)
			}
		})
	}
}

// TestSignalAfterTheStopIsTheSameStop: a stop signal sent twice (timeout(1)
// signals the process and its group) whose second copy arrives after the
// run has stopped, while the process is exiting, is still the same stop:
// the process exits with the run's code instead of being killed by the
// signal's default action. The process is this test binary run again as
// a helper, because a signal's default action would end the test run.
func TestSignalAfterTheStopIsTheSameStop(t *testing.T) {
	if os.Getenv("CMDUTIL_SIGNAL_HELPER") == "1" {
		code := Main([]string{"run"}, iostreams.System(), func(string) (string, bool) { return "", false },
			func(f *Factory) *cobra.Command {
				root := &cobra.Command{Use: "timelake"}
				PrepareRoot(root, f)
				root.AddCommand(&cobra.Command{Use: "run", RunE: func(cmd *cobra.Command, _ []string) error {
					fmt.Fprintln(f.IO.Out, "ready")
					<-cmd.Context().Done()
					return nil
				}})
				return root
			})
		// The second copy of the stop, after the run returned.
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		time.Sleep(200 * time.Millisecond)
		os.Exit(int(code))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalAfterTheStopIsTheSameStop$")
	cmd.Env = append(os.Environ(), "CMDUTIL_SIGNAL_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper's first line %q, %v\n%s", line, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d (%v) after a stop signal twice, the second after the stop; want 0\n%s", code, err, stderr.String())
	}
}

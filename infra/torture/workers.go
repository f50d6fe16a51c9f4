//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
	"github.com/webhook-inbox/webhook-inbox/internal/app"
	"github.com/webhook-inbox/webhook-inbox/internal/app/processorfn"
)

// workerEnv, set in a process's environment, makes it a worker: the
// processor function, wired as its Lambda main wires it, fed by the local
// event source mapping. Its value is the pollerSpec in JSON.
const workerEnv = "TORTURE_WORKER"

// pollerSpec is the event source mapping a worker runs.
type pollerSpec struct {
	QueueURL, QueueARN, Region string
	BatchSize                  int
	BatchingWindow, Timeout    time.Duration
	MaxConcurrency             int
}

// runWorker is a worker process's main: the processor's configuration and
// AWS settings come from the environment, exactly as in Lambda. It polls
// until SIGTERM or SIGINT, or until it is killed.
func runWorker(spec string) error {
	var ps pollerSpec
	if err := json.Unmarshal([]byte(spec), &ps); err != nil {
		return fmt.Errorf("%s: %w", workerEnv, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, awsCfg, log, err := app.Load(ctx, os.Getenv, app.ProcessorNeeds)
	if err != nil {
		return err
	}
	p, err := processorfn.New(cfg, awsCfg, log)
	if err != nil {
		return err
	}
	poller := &local.Poller{
		SQS: local.PollerClient(awsCfg), QueueURL: ps.QueueURL, QueueARN: ps.QueueARN, Region: ps.Region,
		BatchSize: ps.BatchSize, BatchingWindow: ps.BatchingWindow, MaxConcurrency: ps.MaxConcurrency,
		Timeout: ps.Timeout, Handler: p.Handle, Logger: log.With("component", "poller"),
	}
	return poller.Run(ctx)
}

// workers keeps n worker processes running, each restarted at once when
// it is killed, and kills a random one every so often.
type workers struct {
	bin  string   // the executable, this program itself
	env  []string // the processes' environment
	dir  string   // their logs
	rand *rand.Rand

	mu    sync.Mutex
	procs []*exec.Cmd
	kills int
	fails int // workers that exited by themselves
	done  bool
	wg    sync.WaitGroup
}

func startWorkers(n int, env []string, dir string, seed uint64) (*workers, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	w := &workers{bin: bin, env: env, dir: dir, rand: rand.New(rand.NewPCG(seed, 0x6b696c6c)), procs: make([]*exec.Cmd, n)}
	for i := range n {
		if err := w.start(i); err != nil {
			w.stop()
			return nil, err
		}
	}
	return w, nil
}

// start launches worker i, and restarts it whenever it exits until stop.
func (w *workers) start(i int) error {
	f, err := os.OpenFile(filepath.Join(w.dir, fmt.Sprintf("worker-%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(w.bin) // a worker by its environment, see main and TestMain
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so a kill reaches all of it; and killed
	// with this process, so no worker outlives a run that died.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start worker %d: %w", i, err)
	}
	w.mu.Lock()
	w.procs[i] = cmd
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		err := cmd.Wait()
		f.Close()
		w.mu.Lock()
		done := w.done
		if !done && !killed(err) {
			w.fails++
		}
		w.mu.Unlock()
		if !done {
			if err := w.start(i); err != nil {
				fmt.Fprintln(os.Stderr, "torture:", err)
			}
		}
	}()
	return nil
}

func killed(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// killEvery SIGKILLs a random worker every period (±50 %) until ctx ends.
func (w *workers) killEvery(ctx context.Context, period time.Duration) {
	for {
		w.mu.Lock()
		d := period/2 + time.Duration(w.rand.Int64N(int64(period)))
		w.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		w.mu.Lock()
		if !w.done {
			if p := w.procs[w.rand.IntN(len(w.procs))]; p != nil && p.Process != nil {
				if syscall.Kill(-p.Process.Pid, syscall.SIGKILL) == nil {
					w.kills++
				}
			}
		}
		w.mu.Unlock()
	}
}

// stop kills every worker for good and waits for them.
func (w *workers) stop() {
	w.mu.Lock()
	w.done = true
	for _, p := range w.procs {
		if p != nil && p.Process != nil {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		}
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *workers) counts() (kills, fails int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kills, w.fails
}

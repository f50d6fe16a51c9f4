package emulators

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// KumoVersion is the kumo the Makefile installs into the project's bin/
// (go install github.com/sivchari/kumo/cmd/kumo@KumoVersion).
const KumoVersion = "v0.33.1"

// The emulators that can serve SQS, S3, Secrets Manager and EventBridge.
// LOCAL_AWS chooses one; kumo is the default. moto is the fallback a user
// asks for by name (LOCAL_AWS=moto): it is complete but O(queue) per SQS
// call, so nothing falls back to it silently.
const (
	Kumo = "kumo"
	Moto = "moto"
)

// AWSEmulator is the emulator LOCAL_AWS names: kumo when it is unset.
func AWSEmulator() (string, error) {
	switch v := os.Getenv("LOCAL_AWS"); v {
	case "", Kumo:
		return Kumo, nil
	case Moto:
		return Moto, nil
	default:
		return "", fmt.Errorf("LOCAL_AWS=%q: want %q (the default) or %q", v, Kumo, Moto)
	}
}

// KumoBinary finds kumo: $KUMO, then the project's bin/ (where `make
// kumo` installs it), then PATH.
func KumoBinary() (string, error) {
	return findBinary("KUMO", "kumo", "kumo not found: run `make kumo` (it installs kumo "+KumoVersion+" into bin/), set KUMO, or choose moto with LOCAL_AWS=moto", "bin", "kumo")
}

// findBinary finds an emulator's binary: the file $env names, then the
// one at the path (elements) under the module root, then name on PATH;
// notFound is the error's text when there is none.
func findBinary(env, name, notFound string, path ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return p, nil
	}
	if root, err := ModuleRoot(); err == nil {
		p := filepath.Join(append([]string{root}, path...)...)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", errors.New(notFound)
	}
	return p, nil
}

// LaunchKumo starts kumo on 127.0.0.1:port and waits until it answers.
// kumo takes its address from KUMO_HOST and KUMO_PORT: its EventBridge
// delivers to SQS targets by calling that address, so the flags alone
// would leave rules posting to localhost:4566. Request logging is off
// (KUMO_LOG_LEVEL=warn): a line per call costs more than the call. Its
// state is in memory and goes with the process. stdout and stderr go to
// out when it is non-nil.
func LaunchKumo(ctx context.Context, bin string, port int, out *os.File) (*Server, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"KUMO_HOST=127.0.0.1",
		"KUMO_PORT="+strconv.Itoa(port),
		"KUMO_LOG_LEVEL=warn",
		"KUMO_DATA_DIR=",
	)
	return launch(ctx, cmd, Kumo, port, out, "/health", 15*time.Second)
}

// getOK makes a GET of path and reports whether it was answered 2xx.
func (s *Server) getOK(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// LaunchAWS starts the emulator LOCAL_AWS names (kumo by default) on
// 127.0.0.1:port, for SQS, S3, Secrets Manager and EventBridge.
func LaunchAWS(ctx context.Context, port int, out *os.File) (*Server, error) {
	kind, err := AWSEmulator()
	if err != nil {
		return nil, err
	}
	if kind == Moto {
		bin, err := MotoBinary()
		if err != nil {
			return nil, err
		}
		return Launch(ctx, bin, port, out)
	}
	bin, err := KumoBinary()
	if err != nil {
		return nil, err
	}
	return LaunchKumo(ctx, bin, port, out)
}

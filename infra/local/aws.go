package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/emulators"
)

// AWS is the local AWS behind one router on one loopback port: kumo (or
// moto, when LOCAL_AWS=moto) for SQS, S3, Secrets Manager and EventBridge,
// and dynoxide for DynamoDB. Where dynoxide is missing, moto serves
// DynamoDB (kumo's own DynamoDB is not used: it fails the replay suite).
type AWS struct {
	// Endpoint is the router's URL: the only one clients need.
	Endpoint string
	// Services is the emulator of everything but DynamoDB (kumo or moto);
	// Dynamo serves DynamoDB, and is Services when both are moto.
	Services, Dynamo *emulators.Server
	// Note says what was left out, if anything ("" when dynoxide runs).
	Note string

	srv *http.Server
}

// StartAWS starts the emulators and the router on 127.0.0.1:port (0: a
// free one). Emulator output goes to files in logDir. Each wrap, if any,
// wraps the router in turn (the torture run's Faults.Wrap), so every call
// through the endpoint passes it; the emulators' own endpoints do not.
func StartAWS(ctx context.Context, port int, logDir string, wrap ...func(http.Handler) http.Handler) (*AWS, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("port %d is taken (is another `make run` running?): %w", port, err)
	}
	a := &AWS{Endpoint: "http://" + ln.Addr().String()}
	fail := func(err error) (*AWS, error) {
		ln.Close()
		a.Stop()
		return nil, err
	}
	kind, err := emulators.AWSEmulator()
	if err != nil {
		return fail(err)
	}
	logFile, err := os.Create(filepath.Join(logDir, kind+".log"))
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	servicesPort, err := emulators.FreePort()
	if err != nil {
		return fail(err)
	}
	if a.Services, err = emulators.LaunchAWS(ctx, servicesPort, logFile); err != nil {
		return fail(err)
	}
	if bin, err := emulators.DynoxideBinary(); err == nil {
		if a.Dynamo, err = emulators.LaunchDynoxide(bin); err != nil {
			return fail(err)
		}
	} else if kind == emulators.Moto {
		a.Dynamo = a.Services
		a.Note = fmt.Sprintf("DynamoDB is moto's (%v): slower as the table fills", err)
	} else {
		mbin, merr := emulators.MotoBinary()
		if merr != nil {
			return fail(fmt.Errorf("no DynamoDB emulator: %v; %v", err, merr))
		}
		motoPort, perr := emulators.FreePort()
		if perr != nil {
			return fail(perr)
		}
		if a.Dynamo, err = emulators.Launch(ctx, mbin, motoPort, logFile); err != nil {
			return fail(err)
		}
		a.Note = "DynamoDB is moto's (dynoxide not found: `make dynoxide` installs it): slower as the table fills"
	}
	dyn, _ := url.Parse(a.Dynamo.Endpoint)
	rest, _ := url.Parse(a.Services.Endpoint)
	h := NewRouter(dyn, rest)
	for _, w := range wrap {
		h = w(h)
	}
	a.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "local aws router:", err)
		}
	}()
	return a, nil
}

// Stop stops the router and the emulators.
func (a *AWS) Stop() {
	if a.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = a.srv.Shutdown(ctx)
		cancel()
	}
	if a.Dynamo != nil && a.Dynamo != a.Services {
		a.Dynamo.Stop()
	}
	if a.Services != nil {
		a.Services.Stop()
	}
}

// Emulators says which emulator serves what behind the router.
func (a *AWS) Emulators() string {
	if a.Dynamo == a.Services {
		return a.Services.Kind + " for all"
	}
	return "DynamoDB: " + a.Dynamo.Kind + "; SQS, S3, Secrets Manager, EventBridge: " + a.Services.Kind
}

// Atomic says DynamoDB's conditional writes are atomic here (dynoxide);
// with moto's, clients must send one request at a time
// (emulators.Server.SerialConfig).
func (a *AWS) Atomic() bool { return a.Dynamo.Atomic }

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

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
)

// AWS is the local AWS: moto (SQS, Secrets Manager) and dynoxide
// (DynamoDB) behind one router on one loopback port. Where dynoxide is
// missing, moto serves DynamoDB too.
type AWS struct {
	// Endpoint is the router's URL: the only one clients need.
	Endpoint string
	// Moto and Dynamo are the emulators behind it; Dynamo is Moto when
	// dynoxide is missing.
	Moto, Dynamo *awstest.Server
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
	motoLog, err := os.Create(filepath.Join(logDir, "moto.log"))
	if err != nil {
		return fail(err)
	}
	defer motoLog.Close()
	bin, err := awstest.MotoBinary()
	if err != nil {
		return fail(err)
	}
	motoPort, err := awstest.FreePort()
	if err != nil {
		return fail(err)
	}
	if a.Moto, err = awstest.Launch(ctx, bin, motoPort, motoLog); err != nil {
		return fail(err)
	}
	a.Dynamo = a.Moto
	if bin, err := awstest.DynoxideBinary(); err != nil {
		a.Note = fmt.Sprintf("DynamoDB is moto's (%v): slower as the table fills", err)
	} else if a.Dynamo, err = awstest.LaunchDynoxide(bin); err != nil {
		return fail(err)
	}
	dyn, _ := url.Parse(a.Dynamo.Endpoint)
	rest, _ := url.Parse(a.Moto.Endpoint)
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
	if a.Dynamo != nil && a.Dynamo != a.Moto {
		a.Dynamo.Stop()
	}
	if a.Moto != nil {
		a.Moto.Stop()
	}
}

// Atomic says DynamoDB's conditional writes are atomic here (dynoxide);
// with moto's, clients must send one request at a time
// (awstest.Server.SerialConfig).
func (a *AWS) Atomic() bool { return a.Dynamo.Atomic }

package outbox

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
)

// countingConn counts the bytes written to a connection: a call that
// failed with none written since it got its connection cannot have
// reached the receiver, whatever the transport's trace said (HTTP/1's
// WroteRequest fires when the request is in the write buffer, before the
// flush that may fail).
type countingConn struct {
	net.Conn
	written atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// counting returns a transport like t whose connections count their
// writes. A transport that is not an *http.Transport is returned as it
// is: its calls are judged by the trace alone.
func counting(t http.RoundTripper) http.RoundTripper {
	if t == nil {
		t = http.DefaultTransport
	}
	ht, ok := t.(*http.Transport)
	if !ok {
		return t
	}
	ht = ht.Clone()
	dial := ht.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	ht.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c}, nil
	}
	return ht
}

// counterOf is the write count of a connection the transport handed out,
// if it counts.
func counterOf(c net.Conn) *atomic.Int64 {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*countingConn); ok {
		return &cc.written
	}
	return nil
}

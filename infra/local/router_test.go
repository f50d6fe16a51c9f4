package local_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/infra/local"
)

// TestRouter: DynamoDB calls go to the DynamoDB emulator, every other
// call to moto, with the Host header as the client sent it.
func TestRouter(t *testing.T) {
	backend := func(name string) (*httptest.Server, *string) {
		var host string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host = r.Host
			io.WriteString(w, name+" "+r.Header.Get("X-Amz-Target")+" "+r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		return srv, &host
	}
	dyn, dynHost := backend("dynamo")
	moto, motoHost := backend("moto")
	du, _ := url.Parse(dyn.URL)
	mu, _ := url.Parse(moto.URL)
	router := httptest.NewServer(local.NewRouter(du, mu))
	defer router.Close()
	for _, tt := range []struct {
		name, target, path, want string
		host                     *string
	}{
		{"DynamoDB", "DynamoDB_20120810.TransactWriteItems", "/", "dynamo DynamoDB_20120810.TransactWriteItems /", dynHost},
		{"SQS (JSON protocol)", "AmazonSQS.ReceiveMessage", "/", "moto AmazonSQS.ReceiveMessage /", motoHost},
		{"SQS (query protocol)", "", "/123456789012/main", "moto  /123456789012/main", motoHost},
		{"Secrets Manager", "secretsmanager.GetSecretValue", "/", "moto secretsmanager.GetSecretValue /", motoHost},
		{"DynamoDB Streams is not DynamoDB", "DynamoDBStreams_20120810.ListStreams", "/", "moto DynamoDBStreams_20120810.ListStreams /", motoHost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, router.URL+tt.path, strings.NewReader("{}"))
			if tt.target != "" {
				req.Header.Set("X-Amz-Target", tt.target)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != tt.want {
				t.Errorf("got %q, want %q", b, tt.want)
			}
			if want := strings.TrimPrefix(router.URL, "http://"); *tt.host != want {
				t.Errorf("Host: got %q, want the router's %q", *tt.host, want)
			}
		})
	}
}

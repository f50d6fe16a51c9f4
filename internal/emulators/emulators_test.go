package emulators

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// flakyServer answers DynamoDB ListTables, failing the first fail requests
// the way named by how: "close" drops the connection without an answer (a
// kept-alive connection moto closed), "500" answers an internal error.
func flakyServer(tb testing.TB, how string, fail int64) (*Server, *atomic.Int64) {
	tb.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= fail {
			switch how {
			case "close":
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					tb.Errorf("hijack: %v", err)
					return
				}
				conn.Close()
			case "500":
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}`))
			}
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"TableNames":[]}`))
	}))
	tb.Cleanup(srv.Close)
	return &Server{Endpoint: srv.URL}, &calls
}

func TestConfigRetries(t *testing.T) {
	tests := []struct {
		name      string
		how       string
		fail      int64
		config    func(*Server) aws.Config
		wantErr   bool
		wantCalls int64
	}{
		{"Config absorbs a dropped connection", "close", 1, (*Server).Config, false, 2},
		{"Config absorbs a 500", "500", 1, (*Server).Config, false, 2},
		{"Config gives up after 3 attempts", "close", 5, (*Server).Config, true, 3},
		{"SerialConfig retries as Config does", "close", 1, (*Server).SerialConfig, false, 2},
		{"NoRetryConfig makes one attempt", "close", 1, (*Server).NoRetryConfig, true, 1},
		{"NoRetryConfig does not retry a 500", "500", 1, (*Server).NoRetryConfig, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, calls := flakyServer(t, tt.how, tt.fail)
			_, err := dynamodb.NewFromConfig(tt.config(s)).ListTables(context.Background(), &dynamodb.ListTablesInput{})
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Errorf("got error %v, want error %t", err, tt.wantErr)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("got %d requests, want %d", got, tt.wantCalls)
			}
		})
	}
}

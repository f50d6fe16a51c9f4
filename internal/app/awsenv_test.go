package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestAWSFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	lambda := []string{"AWS_REGION", "eu-west-1", "AWS_ACCESS_KEY_ID", "ASIAEXAMPLE", "AWS_SECRET_ACCESS_KEY", "secret", "AWS_SESSION_TOKEN", "token"}
	cfg, err := AWSFromEnv(env(lambda...))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || cfg.Region != "eu-west-1" || creds.AccessKeyID != "ASIAEXAMPLE" || creds.SessionToken != "token" || cfg.BaseEndpoint != nil {
		t.Errorf("got %+v, %+v, %v", cfg, creds, err)
	}
	cfg, err = AWSFromEnv(env(append(lambda, "AWS_ENDPOINT_URL", "http://127.0.0.1:4566")...))
	if err != nil || aws.ToString(cfg.BaseEndpoint) != "http://127.0.0.1:4566" {
		t.Errorf("endpoint: %v, %v", cfg.BaseEndpoint, err)
	}
	// Credentials from the runtime's endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "tok" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, `{"AccessKeyId":"ASIAENDPOINT","SecretAccessKey":"s","Token":"t","Expiration":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer srv.Close()
	cfg, err = AWSFromEnv(env("AWS_REGION", "us-east-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL, "AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok"))
	if err != nil {
		t.Fatal(err)
	}
	if creds, err := cfg.Credentials.Retrieve(context.Background()); err != nil || creds.AccessKeyID != "ASIAENDPOINT" || !creds.CanExpire {
		t.Errorf("endpoint credentials: %+v, %v", creds, err)
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "AWS_REGION is not set"},
		{[]string{"AWS_DEFAULT_REGION", "us-east-1"}, "no credentials"},
		{append(lambda, "AWS_ENDPOINT_URL", "localhost:4566"), "want an absolute http or https URL"},
	} {
		if _, err := AWSFromEnv(env(c.env...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.env, err, c.want)
		}
	}
}

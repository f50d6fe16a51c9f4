package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// AWSFromEnv is the SDK configuration a Lambda function needs, from the
// environment Lambda gives it: AWS_REGION, the execution role's
// credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, or the local endpoint AWS_CONTAINER_CREDENTIALS_FULL_URI
// serves them from), and AWS_ENDPOINT_URL where an emulator stands in for
// AWS (the local stack, the Runtime Interface Emulator tests). The SDK's
// defaults do the rest: standard retries, its HTTP client, regional
// endpoints. Settings only the default loader reads (AWS_RETRY_MODE,
// AWS_MAX_ATTEMPTS, AWS_ENDPOINT_URL_<SERVICE>, FIPS and dual-stack
// endpoints, AWS_CA_BUNDLE) are not read; the template sets none.
//
// It replaces the SDK's config.LoadDefaultConfig, which also brings the
// shared config files, SSO, STS web identity, IMDS and process
// credentials: none of them is used in Lambda, and together they were
// over a megabyte of every bootstrap (see docs/performance.md, "Cold start"). It reads
// no file and makes no network call.
func AWSFromEnv(getenv func(string) string) (aws.Config, error) {
	region := strings.TrimSpace(getenv("AWS_REGION"))
	if region == "" {
		region = strings.TrimSpace(getenv("AWS_DEFAULT_REGION"))
	}
	var errs []error
	if region == "" {
		errs = append(errs, errors.New("AWS_REGION is not set"))
	}
	cfg := aws.Config{Region: region}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	uri := strings.TrimSpace(getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"))
	switch {
	case id != "" && secret != "":
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN")))
	case uri != "":
		// Where the runtime serves the role's credentials from a local
		// endpoint instead (SnapStart, container runtimes): fetched, and
		// refreshed before they expire.
		token, tokenFile := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN"), getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
		cfg.Credentials = aws.NewCredentialsCache(endpointcreds.New(uri, func(o *endpointcreds.Options) {
			o.AuthorizationToken = token
			if tokenFile != "" {
				o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
					b, err := os.ReadFile(tokenFile)
					return strings.TrimSpace(string(b)), err
				})
			}
		}))
	default:
		errs = append(errs, errors.New("no credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_CONTAINER_CREDENTIALS_FULL_URI, are not set (Lambda sets them from the function's role)"))
	}
	if e := strings.TrimSpace(getenv("AWS_ENDPOINT_URL")); e != "" {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("AWS_ENDPOINT_URL %q: want an absolute http or https URL", e))
		}
		cfg.BaseEndpoint = aws.String(e)
	}
	if err := errors.Join(errs...); err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	return cfg, nil
}

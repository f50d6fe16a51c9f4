package app

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// AWSFromEnv is the SDK configuration a Lambda function needs, from the
// environment Lambda gives it: AWS_REGION, the execution role's
// credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), and AWS_ENDPOINT_URL where an emulator stands in for
// AWS (the local stack, the Runtime Interface Emulator tests).
//
// It replaces the SDK's config.LoadDefaultConfig, which also brings the
// shared config files, SSO, STS web identity, IMDS and process
// credentials: none of them is used in Lambda, and together they were
// over a megabyte of every bootstrap (see README, "Cold start"). It reads
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
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		errs = append(errs, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the function's role)"))
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))),
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

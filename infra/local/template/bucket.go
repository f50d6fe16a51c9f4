package template

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// BucketSpec is an AWS::S3::Bucket as the local stack needs it: its
// lifecycle's expiration rules.
type BucketSpec struct {
	LogicalID string
	Rules     []ExpirationRule
}

// ExpirationRule is one enabled lifecycle rule expiring the objects under
// Prefix Days after they were written.
type ExpirationRule struct {
	ID     string
	Prefix string
	Days   int
}

// Bucket returns the bucket resource's spec, its parameters and
// conditions resolved.
func (t *Template) Bucket(logicalID string) (BucketSpec, error) {
	r, err := t.resource(logicalID, "AWS::S3::Bucket")
	if err != nil {
		return BucketSpec{}, fmt.Errorf("bucket: %w", err)
	}
	spec := BucketSpec{LogicalID: logicalID}
	v, ok, err := props{t: t, r: r}.optional("LifecycleConfiguration")
	if err != nil || !ok {
		return spec, err
	}
	lc, _ := v.(map[string]any)
	rules, _ := lc["Rules"].([]any)
	for i, x := range rules {
		m, _ := x.(map[string]any)
		if m == nil {
			return spec, fmt.Errorf("bucket %s: rule %d is not a map", logicalID, i)
		}
		if st, _ := m["Status"].(string); st != "Enabled" {
			continue
		}
		days, ok := m["ExpirationInDays"]
		if !ok {
			continue
		}
		n, err := toInt(days)
		if err != nil {
			return spec, fmt.Errorf("bucket %s: rule %d: ExpirationInDays: %w", logicalID, i, err)
		}
		id, _ := m["Id"].(string)
		prefix, _ := m["Prefix"].(string)
		spec.Rules = append(spec.Rules, ExpirationRule{ID: id, Prefix: prefix, Days: n})
	}
	return spec, nil
}

// S3API is the part of *s3.Client that ProvisionBucket uses.
type S3API interface {
	CreateBucket(ctx context.Context, params *s3.CreateBucketInput, optFns ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
	PutBucketLifecycleConfiguration(ctx context.Context, params *s3.PutBucketLifecycleConfigurationInput, optFns ...func(*s3.Options)) (*s3.PutBucketLifecycleConfigurationOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// ProvisionBucket creates the bucket named name (reusing it if it exists)
// with the spec's lifecycle rules. The emulator stores the rules but does
// not run them: tests read them back to check an object's expiry.
func ProvisionBucket(ctx context.Context, api S3API, spec BucketSpec, name string) error {
	_, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
	var apiErr smithy.APIError
	if err != nil && !(errors.As(err, &apiErr) && apiErr.ErrorCode() == "BucketAlreadyOwnedByYou") {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	if len(spec.Rules) == 0 {
		return nil
	}
	rules := make([]s3types.LifecycleRule, len(spec.Rules))
	for i, r := range spec.Rules {
		rules[i] = s3types.LifecycleRule{
			ID:         aws.String(r.ID),
			Status:     s3types.ExpirationStatusEnabled,
			Filter:     &s3types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)},
			Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(int32(r.Days))},
		}
	}
	if _, err := api.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket:                 &name,
		LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: rules},
	}); err != nil {
		return fmt.Errorf("lifecycle of bucket %s: %w", name, err)
	}
	return nil
}

// Command hello is the cold-start baseline: the smallest Go function on
// aws-lambda-go, answering every event at once (BenchmarkColdStart).
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (string, error) { return "hello", nil })
}

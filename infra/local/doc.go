// Package local runs the project's Lambda handlers in-process for development
// with no Docker and no AWS account.
//
// NewAPI turns net/http requests into the events.APIGatewayV2HTTPRequest an
// API Gateway HTTP API (payload format 2.0) would send the ingest function, and
// writes its response back the way API Gateway would. Poller stands in for
// Lambda's SQS event source mapping with ReportBatchItemFailures: it receives
// batches from a queue (moto's, locally), hands them to the processor handler
// and deletes only the messages the handler did not report as failed.
//
// Both call the very handler values the Lambda entry points pass to
// lambda.Start, so what runs locally is the code that runs in AWS.
package local

// Package dynamotest gives tests a DynamoDB table for the dynamostore
// adapter: by default an in-process minidyn server (github.com/truora/minidyn)
// on 127.0.0.1 behind a small compatibility shim, or, when
// AWS_ENDPOINT_URL_DYNAMODB is set, a uniquely named table on that endpoint
// (DynamoDB Local, LocalStack, AWS), deleted when the test ends.
//
// The shim corrects the minidyn v0.8.2 behaviours that differ from
// DynamoDB and that the store relies on (compat.go lists them). It never
// changes what a request means; it exists so the adapter can stay written
// for real DynamoDB.
//
// Moto starts a moto server (python3 -m moto.server) on loopback, and
// NewMoto makes a table on it: a second DynamoDB implementation for the
// contract suite's sequential part (moto is not safe under concurrent
// requests), and EventBridge, S3 and SQS for the AWS-mode test. Without
// moto they skip, or fail when LIFECYCLE_AWS_MODE_REQUIRED=1.
//
// This package is for tests only and must never be imported by production
// code.
package dynamotest

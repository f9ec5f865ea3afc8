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
// This package is for tests only and must never be imported by production
// code.
package dynamotest

// Package awscost prices one action of the lifecycle on AWS: Step
// Functions state transitions, Lambda requests and duration, DynamoDB
// request units, HTTP API requests and EventBridge events, at the list
// prices of one documented table (prices.go, us-east-1, each price with its
// source page and the date it was written down).
//
// It computes; it measures nothing. The end-to-end benchmark
// (shared/embedded, BenchmarkLifecycle) counts what an action uses on the
// embedded stack (the same ASL file, handlers and store access pattern as
// AWS) and hands the counts to PerMillion, which prints the dollar cost of a
// million such actions, component by component.
//
// Lambda memory is what the CDK stack deploys: FunctionMemory reads the
// memoryMB of every function from infra/stack/functions.go (a separate Go
// module, which this module does not import), so the two cannot disagree.
// Duration is billed per invocation, rounded up to 1 ms, on arm64.
//
// It must never call AWS or read credentials: prices are constants here.
package awscost

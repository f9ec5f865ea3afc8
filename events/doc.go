// Package events holds one realistic sample payload per trigger of the
// lifecycle's functions (API Gateway HTTP API requests, the EventBridge
// schedule tick, the Step Functions status-change event, and the Task and
// waitForTaskToken invocations the state machine makes), and tests that
// each one round-trips through the handler input type it feeds.
package events

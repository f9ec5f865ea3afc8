// Package eventbus carries projection events to subscribers: Bus is the
// in-process fan-out used by the embedded stack (the UI's event stream
// subscribes to it), and package ebpublisher publishes the same events to an
// EventBridge bus in AWS.
//
// Delivery is at least once and best effort: the durable record of every
// event is the session's event log in the store, from which a subscriber
// resumes by position. A slow subscriber drops notifications, never blocks
// the lifecycle.
package eventbus

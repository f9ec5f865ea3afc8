// Package ebpublisher publishes projection events to an Amazon EventBridge
// bus (source "openprogram.lifecycle", detail-type = the event type).
package ebpublisher

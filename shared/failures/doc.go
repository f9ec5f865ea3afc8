// Package failures owns the bounded recent-failure map used for repeat
// suppression: a fixed capacity of 16 entries shared by the loop and the
// checkpoint serializer, keyed by repeat identity (tool + canonical argument
// digest, see package identity).
//
// Eviction bounds storage only. It never resets a permission decision or a
// refusal counter (those are durable scalar counters in the store), and no
// failure count ever declares a task complete. Full diagnostic history stays
// in the execution's event log.
//
// Serialization never fails because of the number of distinct failures, and
// the documented legacy shape (unnormalized "<Tool>:<args>" keys) still loads.
package failures

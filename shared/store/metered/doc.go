// Package metered wraps a store.Store and counts what each operation would
// be billed as by the DynamoDB adapter: write capacity units (1 per started
// KB of the item written; transactional writes count double), read capacity
// units (1 per started 4 KB read with strong consistency, half for
// eventually consistent index queries), the number of operations, and the
// bytes written. The benchmarks use it to report per-action cost on any
// adapter; it changes nothing about the wrapped store's behaviour.
//
// The estimates follow the dynamostore adapter's access pattern: Get and
// Query are strongly consistent, QueryIndex eventually consistent, Append
// reads the stream's last entry (one 4 KB unit) then puts, counters and
// leases are single-item updates of small items.
package metered

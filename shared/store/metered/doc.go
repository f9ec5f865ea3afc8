// Package metered wraps a store.Store and counts what each operation would
// be billed as by the DynamoDB adapter: write capacity units (1 per started
// KB of the item written; transactional writes count double), the write
// units of the table's two global secondary indexes (IndexWCU: both project
// all attributes, so an item carrying an index's keys is written there
// too), read capacity units (1 per started 4 KB read with strong
// consistency, half for eventually consistent index queries), the number of
// operations, and the bytes written. The benchmarks use it to report
// per-action cost on any adapter; it changes nothing about the wrapped
// store's behaviour.
//
// ByKind breaks the counts down by record (Kind: "ACTION/META",
// "SESSION/EVT", "SFNEXEC/META"...), so a benchmark can tell which record
// costs what, and leave out the embedded engine's own records (SFNEXEC,
// SFNHIST), which on AWS are Step Functions' state, not the table's.
//
// The estimates follow the dynamostore adapter's access pattern: Get and
// Query are strongly consistent, QueryIndex eventually consistent, Append
// reads the stream's last entry (one 4 KB unit) then puts, counters and
// leases are single-item updates of small items. Removing an item from an
// index costs DynamoDB one more index write, which is not counted (the
// wrapper does not see the old item).
package metered

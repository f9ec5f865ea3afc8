// Package audit verifies the tamper-evident decision log: the hash chain
// every session's event log is (package store computes each entry's link
// in the write that appends it; see store/chain.go for the formulas).
//
// Every decision that carries authority is an event of its session's log,
// appended in the same conditional write or transaction as the state
// change it records (action.decided with reason, policy version and args
// digest; approval.* and question.* with who decided and from which
// origin; revalidations; action.reconciled; command.*; policy.updated;
// audit.denied for refusals), so it is an entry of the chain or does not
// exist. This package owns the wire form of an entry (Entry: what
// GET /v1/sessions/{id}/audit pages and `lifecycle audit export` writes as
// JSON Lines) and Verify, which recomputes a chain and names the first
// entry that was changed, removed, reordered or inserted, and checks heads
// anchored elsewhere (an S3 Object Lock bucket), which catch what the chain
// alone cannot: a truncated or wholly rewritten tail.
//
// Anchorer (anchor.go) records chain heads outside the table: at each run
// it reads the sessions with an open execution and those of the previous
// manifest, and when a head moved puts a Manifest to a Sink (package
// s3anchor: an S3 bucket with Object Lock), adding no write to the
// lifecycle. The recover function runs it when the stack enables it.
//
// It is domain code: it imports package store for the chain formulas and
// no transport or AWS package (s3anchor is the adapter). Verify never
// writes; Anchorer writes only to its Sink.
package audit

// Package dynamostore is the DynamoDB store.Store: one table (../SCHEMA.md)
// accessed with the aws-sdk-go-v2 client. It owns the table's definition
// (TableInput, TTLInput, CreateTable) and the translation of every store
// operation into one conditional request. It must never build an
// expression string by hand (conditions, updates, key conditions and
// projections come from feature/dynamodb/expression, items from
// attributevalue), and never interpret Item.Body.
//
// Requests:
//   - Get, GetLease, GetCounter: GetItem, strongly consistent.
//   - PutOnce: PutItem on attribute_not_exists(pk).
//   - CompareAndSwap: PutItem on version = expected (attribute_not_exists for
//     0), and fence <= fence for an owner write.
//   - PutOnceIfVersion: TransactWriteItems, a Put on attribute_not_exists(pk)
//     with a ConditionCheck of the guard's version.
//   - Transact: TransactWriteItems of one conditional Put per part (a log
//     part after reading its stream's last entry, retried with fresh
//     numbers when only log parts lost), and a ConditionCheck on
//     version = expected per Check part (nothing written); the SDK's
//     ClientRequestToken makes its own retry of a lost response idempotent.
//   - AcquireLease, RenewLease, ReleaseLease: one UpdateItem each on the
//     <resource>/LEASE item (fence = if_not_exists(fence, 0) + 1 on acquire).
//   - ApplyCounter: one UpdateItem, NOT contains(counted, :member) with
//     ADD counted :member_set, no transaction.
//   - Append: Query (descending, limit 1, projecting sk, at, digest, prev)
//     for the last entry, then PutItem of EVT#<seq+1> chained after it
//     (digest, prev: store/chain.go) on attribute_not_exists(pk), retried
//     (re-read, re-chained) when another appender took the number. The
//     chain adds no request; a lost race cannot fork it, because the put
//     that wins a number is the one whose prev is that number's predecessor.
//   - Query, ReadLog: Query, strongly consistent; QueryIndex: Query of GSI1 or
//     GSI2, eventually consistent.
//
// Failed conditions ask for the old item (ReturnValuesOnConditionCheckFailure
// ALL_OLD, also on the transaction's entries) to fill the typed errors, and
// re-read the item when a backend returns none. Throttling, server errors
// and transport failures are *store.UnavailableError; a request DynamoDB
// refuses as invalid is a plain error.
//
// Ambiguous failures: a write whose response is lost may have been applied.
// The SDK retries it, and because every write is conditional the retry then
// fails against the caller's own write: PutOnce returns a *ConflictError
// whose Existing is what the caller wrote (callers compare, as they must for
// any repeat), CompareAndSwap a *VersionConflictError whose Actual is the
// caller's new version, ApplyCounter applied == false. Append tags each
// entry with a random append_id and recognises its own entry, so it never
// appends twice. A *store.UnavailableError therefore means "may or may not
// have happened; retrying is safe", not "certainly not written".
//
// QueryOptions.After is a key condition (sk > After, or < when descending),
// not an ExclusiveStartKey: a GSI start key needs the table key of the last
// item, which an After does not carry, and minidyn only resumes from a start
// key naming an existing item. LastEvaluatedKey/ExclusiveStartKey carry a
// listing across DynamoDB's 1 MB response pages; each page reads one item
// more than it returns, so Page.Next is empty exactly when nothing follows.
// Index sort keys are therefore expected to be unique within an index
// partition (the domain ends them with an id): After skips every item whose
// index sort key equals it.
//
// Tests use the real client over HTTP against github.com/truora/minidyn's
// server, started in-process on 127.0.0.1 by package dynamotest. Set
// AWS_ENDPOINT_URL_DYNAMODB (and AWS_REGION, and credentials unless the
// endpoint ignores them, as DynamoDB Local and LocalStack do) to run the
// same tests unchanged against another endpoint; each test then creates a
// uniquely named table and deletes it afterwards:
//
//	AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 go test ./shared/store/dynamostore/...
//
// The failure-injection tests need minidyn (server.EmulateFailure) and are
// skipped against an outside endpoint.
//
// minidyn v0.8.2 differs from DynamoDB where this package relies on it. The
// adapter is written for DynamoDB; package dynamotest's shim corrects the
// first four in front of minidyn, and the last three are met by choices that
// are right for DynamoDB as well:
//   - contains() on a missing attribute fails the request instead of being
//     false (every counter's first change).
//   - An item rewritten without its GSI keys stays in the index as a stale
//     entry, and a sort-key condition on that index then fails.
//   - DescribeTable reports no TableStatus, so the SDK's TableExists waiter
//     never finishes.
//   - UpdateTimeToLive is not implemented (nor is expiry).
//   - An ExclusiveStartKey must name an existing item (see After above).
//   - Numbers are compared as float64: nanosecond timestamps (~2^61) lose
//     precision, so lease and log times are epoch microseconds
//     (store.UnixMicro), exact in any float64 reader.
//   - GSIs are strongly consistent and Query has no 1 MB page limit, so
//     the contract suite's index reads retry for a while (storetest
//     IndexSettle) and the 1 MB page loop is exercised only against
//     DynamoDB itself. Transactions and Query are also table-wide in
//     minidyn (it copies and scans the whole table), which is why its
//     speed says nothing about DynamoDB's.
package dynamostore

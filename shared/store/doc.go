// Package store defines the one persistence interface of the lifecycle: a
// single logical table (pk/sk) with put-once, compare-and-swap, fenced owner
// writes, attempt leases, counted-once refusal counters and append-only
// sequence logs, and Transact, which makes several of those writes one.
// Every operation either happens completely or changes nothing; losing a condition is a typed error
// (ErrNotFound, *ConflictError, *VersionConflictError, *FenceError,
// *LeaseHeldError, *LeaseLostError), never nil, nil. A request refused
// before it reaches the backend is ErrInvalid; a backend failure is
// *UnavailableError.
//
// The table's layout (key patterns of every record kind, indexes, TTL,
// conditions, transactions) is in SCHEMA.md. records.go holds what
// both adapters must agree on beyond the interface: the store's own sort
// keys (LEASE, COUNTER#, EVT#<seq>), limits, validation and time encoding.
//
// The store does not interpret domain records: they live in Item.Body as
// JSON. Adapters: sqlitestore (embedded, the default behind `make run`) and
// dynamostore (AWS). The contract suite in storetest runs against both.
// Each and EachInIndex read every page of a query, so a listing is one
// call with a function per item rather than its own paging loop.
//
// This package imports no AWS package.
package store

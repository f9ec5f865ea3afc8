// Package storetest is the contract suite of store.Store: one set of tests
// that every adapter runs unchanged (sqlitestore against a file, dynamostore
// against minidyn or a real DynamoDB endpoint), so the two cannot drift.
//
// It covers every method and every typed error of package store, the
// guarantee that a failed write changes nothing, and the races the
// lifecycle depends on (one lease winner, counted-once counters, one
// receipt winner, gap-free parallel appends).
//
// Every test works in its own key namespace (a random prefix on every
// partition key), so an adapter may hand the same store to all of them;
// that keeps a run against a real DynamoDB table to one table.
//
// This package must never depend on an adapter: it sees only store.Store.
package storetest

// Package asl reads Amazon States Language (ASL) definitions and evaluates
// their data processing: paths, payload templates, intrinsic functions,
// Choice rules, and the Retry/Catch error matching of Task states.
//
// It owns the meaning of the definition file: Parse refuses every state type,
// field, resource, intrinsic function, path syntax or error name it does not
// implement, naming the JSON path of the offending field (for example
// "States.Authorize.ResultSelectorX: unknown field"), so that a definition
// accepted here can never mean something different on AWS Step Functions.
// Refused, among others: Parallel and Map states, JSONata, variables
// (Assign), TimeoutSecondsPath/HeartbeatSecondsPath, Credentials, JSONPath
// wildcards, filters and slices, duplicate JSON keys, unreachable states.
//
// Data model: JSON values are decoded with numbers kept as json.Number (so
// 1.50 stays 1.50 and big integers survive), objects as map[string]any and
// arrays as []any. Evaluation never mutates a value it was given: ResultPath
// copies the objects along its path, so inputs may be shared freely.
//
// Runtime failures of data processing (a path that selects nothing, an
// intrinsic function given the wrong type, a ResultPath that cannot be
// applied) are *RuntimeError with Name "States.Runtime": as on AWS, they are
// terminal and are never matched by a Retrier or Catcher, not even States.ALL.
//
// This package never performs I/O, never starts goroutines, and imports no
// AWS or Lambda package: running executions is the job of shared/sfnlocal.
package asl

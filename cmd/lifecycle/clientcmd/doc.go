// Package clientcmd holds the `lifecycle` CLI's client commands — token,
// submit, show, approvals, approve, decline, command, activity, tail,
// policy and host — each a thin shell over package apiclient (or, for
// token, package auth with the key under the state directory). The
// root command adds them with AddTo.
//
// Output is for people by default and JSON with --json. The API address
// and token come from --api/--token or LIFECYCLE_API/LIFECYCLE_TOKEN; the
// session defaults to the one the token is scoped to.
//
// What it must never do: decide anything itself (authorization is the
// API's), or send an approval without the exact digest of the arguments
// it showed.
package clientcmd

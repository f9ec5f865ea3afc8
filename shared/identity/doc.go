// Package identity owns tool contracts and the canonical identity of an
// operation: tool name plus the SHA-256 of the RFC 8785 (JCS) canonical JSON
// of the execution-relevant argument fields.
//
// A contract lists presentation-only fields (Bash's description) that are
// excluded; everything else stays. A tool without a contract keeps every field:
// this package never strips a field just because of its name. It never infers
// that two different shell programs are equivalent.
//
// A contract also says what arguments the tool takes (CheckArguments): the
// required fields, their types, whether other fields are refused, one name
// per field, and which fields are workspace paths (a relative path that
// climbs out with ".." is refused here; absolute paths and symbolic links
// are resolved by the caller, which knows the workspace). It never reads
// the filesystem.
//
// It also knows the other spellings of the built-in tools (CanonicalTool,
// ToolNames): bash, read_file, write_file and edit_file are Bash, Read,
// Write and Edit to every component that judges, routes or runs a tool by
// name.
package identity

package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gowebpki/jcs"
)

// Contract declares, for one tool, which argument fields are presentation
// only and therefore excluded from the operation's identity (everything not
// listed is execution-relevant and stays), and the shape its arguments
// must have (CheckArguments), checked when the call is prepared, before any
// permission decision.
type Contract struct {
	Tool string
	// PresentationFields are top-level argument fields that never change what
	// the tool does (e.g. Bash's "description").
	PresentationFields []string
	// Fields are the tool's argument fields (none: arguments unchecked).
	Fields []Field
	// Closed refuses fields the contract does not name.
	Closed bool
	// Renamed maps a spelling the contract refuses to the name it uses
	// ("path" → "file_path"), for a precise error.
	Renamed map[string]string
	// Check, when set, checks what Fields cannot express (a nested schema,
	// e.g. AskUserQuestion's questions); its problems join the field ones.
	Check func(args json.RawMessage) []Problem
}

// Contracts is a registry of known tool contracts, keyed by tool name.
type Contracts map[string]Contract

// Builtin are the contracts the lifecycle knows: the host tools (Bash,
// Read, Write, Edit and bash, read_file, write_file, edit_file; their
// argument fields are set in arguments.go). Only Bash has a
// presentation-only field; its command, working directory, timeout and
// permission fields stay. (The lower-case bash keeps description in its
// identity, as before, so digests of stored calls do not change.)
var Builtin = Contracts{
	"Bash": {Tool: "Bash", PresentationFields: []string{"description"}},
}

// Lookup returns the contract of a tool and whether it is known.
func (c Contracts) Lookup(tool string) (Contract, bool) {
	ct, ok := c[tool]
	return ct, ok
}

// Identity is the canonical identity of one operation.
type Identity struct {
	Tool string `json:"tool"`
	// Digest is "sha256:<hex>" of the RFC 8785 canonical JSON of the
	// execution-relevant argument fields.
	Digest string `json:"digest"`
}

// RepeatKey is the repeat identity: tool name + digest.
func (id Identity) RepeatKey() string { return id.Tool + "|" + id.Digest }

// ArgumentsError: the arguments are not a JSON object.
type ArgumentsError struct {
	Tool string
	Err  error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("arguments of %s: %v", e.Tool, e.Err)
}
func (e *ArgumentsError) Unwrap() error { return e.Err }

// Of computes the identity of a call to tool with the given JSON arguments.
// Arguments must be a JSON object. A tool without a contract keeps every
// field, including one named "description".
func (c Contracts) Of(tool string, args json.RawMessage) (Identity, error) {
	canon, err := c.Canonical(tool, args)
	if err != nil {
		return Identity{}, err
	}
	sum := sha256.Sum256(canon)
	return Identity{Tool: tool, Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Canonical returns the RFC 8785 canonical JSON of the execution-relevant
// fields of args.
func (c Contracts) Canonical(tool string, args json.RawMessage) ([]byte, error) {
	if tool == "" {
		return nil, &ArgumentsError{Tool: tool, Err: fmt.Errorf("tool name is empty")}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		if err == nil {
			err = fmt.Errorf("arguments are null, want a JSON object")
		}
		return nil, &ArgumentsError{Tool: tool, Err: err}
	}
	if dec.More() {
		return nil, &ArgumentsError{Tool: tool, Err: fmt.Errorf("trailing data after the arguments object")}
	}
	if ct, ok := c.Lookup(tool); ok {
		for _, f := range ct.PresentationFields {
			delete(fields, f)
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(fields[k])
	}
	buf.WriteByte('}')
	canon, err := jcs.Transform(buf.Bytes())
	if err != nil {
		return nil, &ArgumentsError{Tool: tool, Err: fmt.Errorf("canonicalize: %w", err)}
	}
	return canon, nil
}

// Of computes an identity with the builtin contracts.
func Of(tool string, args json.RawMessage) (Identity, error) { return Builtin.Of(tool, args) }

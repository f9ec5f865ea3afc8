package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openprogram/lifecycle/shared/store"
)

// Entry is one entry of a session's chain as the API returns it and an
// export holds it (one JSON object a line). The event is the log entry's
// body as stored; the chain fields are lowercase hex (empty on an entry
// appended before the chain existed).
type Entry struct {
	Stream string    `json:"stream"`
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	// Event is the entry's body when it is JSON (every session event is).
	Event json.RawMessage `json:"event,omitempty"`
	// Raw is a body that is not JSON (base64 in JSON).
	Raw    []byte `json:"raw,omitempty"`
	Digest string `json:"digest,omitempty"`
	Prev   string `json:"prev_hash,omitempty"`
	// Hash is the entry's hash as its stored fields give it: what the next
	// entry's prev_hash must be, and what an anchor records for the head.
	Hash string `json:"hash,omitempty"`
}

// FromLog is the wire form of a stored log entry.
func FromLog(e store.LogEntry) Entry {
	out := Entry{Stream: e.Stream, Seq: e.Seq, At: e.At}
	if json.Valid(e.Body) {
		out.Event = json.RawMessage(e.Body)
	} else {
		out.Raw = e.Body
	}
	if e.Chained() {
		out.Digest, out.Prev, out.Hash = hex.EncodeToString(e.Digest), hex.EncodeToString(e.Prev), hex.EncodeToString(e.Hash())
	}
	return out
}

// body is the entry's content as it was stored (the digest is of its
// canonical form, so a re-encoded event digests the same).
func (e Entry) body() []byte {
	if e.Event != nil {
		return e.Event
	}
	return e.Raw
}

// link decodes the chain fields; chained is false for an entry without
// them, and err names a field that is present but not a SHA-256 in hex.
func (e Entry) link() (digest, prev []byte, chained bool, err error) {
	if e.Digest == "" && e.Prev == "" {
		return nil, nil, false, nil
	}
	if digest, err = decodeHash(e.Digest); err != nil {
		return nil, nil, false, fmt.Errorf("entry %d: digest: %w", e.Seq, err)
	}
	if prev, err = decodeHash(e.Prev); err != nil {
		return nil, nil, false, fmt.Errorf("entry %d: prev_hash: %w", e.Seq, err)
	}
	return digest, prev, true, nil
}

func decodeHash(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != store.ChainHashSize {
		return nil, fmt.Errorf("%q is not a %d-byte hash in hex", s, store.ChainHashSize)
	}
	return b, nil
}

// hashAt is the hash the entry would have at position seq.
func (e Entry) hashAt(digest, prev []byte, seq int64) []byte {
	return store.ChainHash(prev, digest, seq, store.UnixMicro(e.At))
}

// Kinds of tampering Verify names.
const (
	Changed   = "changed"
	Removed   = "removed"
	Reordered = "reordered"
	Inserted  = "inserted"
)

// Problem is the first place where the chain does not hold.
type Problem struct {
	// Seq is the entry named: the one changed, inserted or out of place,
	// or the first one missing.
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string {
	return fmt.Sprintf("entry %d %s: %s", p.Seq, p.Kind, p.Detail)
}

// Anchor is a chain head recorded elsewhere (an Object Lock bucket): the
// chain must still contain entry Seq with this hash.
type Anchor struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// Result is what Verify found.
type Result struct {
	Stream  string `json:"stream"`
	Entries int    `json:"entries"`
	// Unchained counts the leading entries appended before the chain
	// existed: they are listed, not covered.
	Unchained int    `json:"unchained,omitempty"`
	HeadSeq   int64  `json:"head_seq"`
	Head      string `json:"head,omitempty"`
	OK        bool   `json:"ok"`
	// Problem is the first entry that was changed, removed, reordered or
	// inserted (nil when OK).
	Problem *Problem `json:"problem,omitempty"`
}

// Verify recomputes the chain of one stream from its entries, in the order
// given (an export's line order, or the store's), and names the first
// entry that was changed, removed, reordered or inserted. It checks, in
// order: numbering (1, 2, 3, …), each entry's digest against its content,
// and each entry's prev_hash against the hash of the entry before it (the
// stream's genesis for the first chained one). When a link breaks it looks
// at the neighbours to say why: an entry that belongs one place later
// (reordered), an entry the next one skips over (inserted), or an entry
// whose recorded hash no longer matches it (changed). Anchors add the
// checks that the chain alone cannot make: that the recorded heads are
// still there (a truncated or rewritten tail).
//
// An error is returned for input that is not a chain at all (no entries,
// two streams, malformed hashes); a broken chain is a Result with a
// Problem.
func Verify(entries []Entry, anchors ...Anchor) (Result, error) {
	if len(entries) == 0 {
		return Result{}, fmt.Errorf("verify: no entries")
	}
	stream := entries[0].Stream
	res := Result{Stream: stream, Entries: len(entries)}
	links := make([]struct {
		digest, prev []byte
		chained      bool
	}, len(entries))
	for i, e := range entries {
		if e.Stream != stream {
			return Result{}, fmt.Errorf("verify: entry %d is of stream %q, not %q", e.Seq, e.Stream, stream)
		}
		if e.Seq < 1 {
			return Result{}, fmt.Errorf("verify: line %d: entry %d: sequence numbers start at 1", i+1, e.Seq)
		}
		d, p, ok, err := e.link()
		if err != nil {
			return Result{}, fmt.Errorf("verify: %w", err)
		}
		links[i].digest, links[i].prev, links[i].chained = d, p, ok
	}
	hashOf := func(i int) []byte {
		if i < 0 || !links[i].chained {
			return nil
		}
		return entries[i].hashAt(links[i].digest, links[i].prev, entries[i].Seq)
	}
	fail := func(seq int64, kind, format string, args ...any) (Result, error) {
		res.Problem = &Problem{Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)}
		return res, nil
	}
	genesis := store.ChainGenesis(stream)
	started := false
	for i, e := range entries {
		want := int64(i) + 1
		if i > 0 {
			want = entries[i-1].Seq + 1
		}
		switch {
		case e.Seq == want:
		case e.Seq < want:
			for j := range i {
				if entries[j].Seq == e.Seq {
					return fail(e.Seq, Inserted, "a second entry numbered %d (line %d) follows entry %d", e.Seq, i+1, want-1)
				}
			}
			return fail(e.Seq, Reordered, "entry %d comes after entry %d", e.Seq, want-1)
		default:
			for j := i + 1; j < len(entries); j++ {
				if entries[j].Seq == want {
					return fail(want, Reordered, "entry %d comes after entry %d", want, e.Seq)
				}
			}
			if want == e.Seq-1 {
				return fail(want, Removed, "entry %d is missing (entry %d follows entry %d)", want, e.Seq, want-1)
			}
			return fail(want, Removed, "entries %d to %d are missing (entry %d follows entry %d)", want, e.Seq-1, e.Seq, want-1)
		}
		l := links[i]
		if !l.chained {
			if started && i+1 < len(entries) && links[i+1].chained && bytes.Equal(links[i+1].prev, hashOf(i-1)) {
				return fail(e.Seq, Inserted, "it has no chain link, and entry %d follows entry %d directly", entries[i+1].Seq, entries[i-1].Seq)
			}
			if started {
				return fail(e.Seq, Changed, "its chain link (digest, prev_hash) was removed")
			}
			res.Unchained++
			continue
		}
		if d := store.ChainDigest(e.body()); !bytes.Equal(d, l.digest) {
			if i+1 < len(entries) && bytes.Equal(d, links[i+1].digest) && bytes.Equal(store.ChainDigest(entries[i+1].body()), l.digest) {
				return fail(e.Seq, Reordered, "the events of entries %d and %d were exchanged", e.Seq, entries[i+1].Seq)
			}
			return fail(e.Seq, Changed, "its content does not match its digest")
		}
		expect := genesis
		if started {
			expect = hashOf(i - 1)
		}
		started = true
		if bytes.Equal(l.prev, expect) {
			continue
		}
		// The link breaks between entries i-1 and i: say why.
		if i+1 < len(entries) && links[i+1].chained && bytes.Equal(links[i+1].prev, expect) {
			next := entries[i+1]
			if bytes.Equal(next.hashAt(links[i+1].digest, links[i+1].prev, e.Seq), l.prev) {
				return fail(e.Seq, Reordered, "entry %d holds what was written as entry %d, and entry %d what was entry %d", e.Seq, next.Seq, next.Seq, e.Seq)
			}
			return fail(e.Seq, Inserted, "entry %d does not follow entry %d, and entry %d does: entry %d was put in between", e.Seq, e.Seq-1, next.Seq, e.Seq)
		}
		if i >= 2 && links[i-1].chained && bytes.Equal(l.prev, hashOf(i-2)) {
			return fail(entries[i-1].Seq, Inserted, "entry %d follows entry %d directly: entry %d was put in between", e.Seq, entries[i-2].Seq, entries[i-1].Seq)
		}
		if i == 0 {
			return fail(e.Seq, Changed, "it does not start the chain (its prev_hash is not the stream's genesis)")
		}
		return fail(entries[i-1].Seq, Changed, "entry %d no longer matches the hash entry %d recorded for it", entries[i-1].Seq, e.Seq)
	}
	last := len(entries) - 1
	res.HeadSeq = entries[last].Seq
	if h := hashOf(last); h != nil {
		res.Head = hex.EncodeToString(h)
	}
	for _, a := range anchors {
		if a.Seq < 1 {
			return Result{}, fmt.Errorf("verify: anchor of entry %d: sequence numbers start at 1", a.Seq)
		}
		if a.Seq > res.HeadSeq {
			return fail(res.HeadSeq+1, Removed, "the anchor records entry %d, the chain ends at entry %d", a.Seq, res.HeadSeq)
		}
		i := int(a.Seq - entries[0].Seq)
		if i < 0 {
			continue // before this page of the chain
		}
		if got := hex.EncodeToString(hashOf(i)); got != a.Hash {
			return fail(a.Seq, Changed, "its hash %s is not the anchored %s", short(got), short(a.Hash))
		}
	}
	res.OK = true
	return res, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	if h == "" {
		return "(none)"
	}
	return h
}

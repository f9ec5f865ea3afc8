package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/gowebpki/jcs"
)

// Every log stream is a hash chain. An adapter computes, in the same
// conditional write that takes an entry's sequence number, the entry's
// content digest and the hash of the entry before it, and stores both on
// the entry. So an entry exists chained or not at all, at no extra write:
// the stream's head hash is the hash of its last entry, which the append
// already reads to find the next number.
//
//	digest(e) = SHA-256(JCS(body))            (RFC 8785; SHA-256(body) when body is not JSON)
//	hash(e)   = SHA-256(prev || digest || seq || at)   (seq and at as 8-byte big-endian; at in µs)
//	prev(1)   = ChainGenesis(stream); prev(n) = hash(n-1)
//
// The genesis binds a chain to its stream, so the entries of one session
// cannot pass for another's. Entries written before the chain existed carry
// neither digest nor prev; the first chained entry after them starts again
// from the genesis (see package audit for what verification makes of that).

// ChainHashSize is the size of a digest, a prev and a hash.
const ChainHashSize = sha256.Size

// ChainAttrBytes is what the chain adds to each stored log entry in
// DynamoDB's item size: the names "digest" and "prev" and 32 bytes each.
const ChainAttrBytes = len("digest") + ChainHashSize + len("prev") + ChainHashSize

// chainDomain separates the genesis from every other SHA-256 of the system.
const chainDomain = "openprogram/lifecycle log chain v1\x00"

// ChainGenesis is the prev of a stream's first chained entry.
func ChainGenesis(stream string) []byte {
	h := sha256.Sum256([]byte(chainDomain + stream))
	return h[:]
}

// ChainDigest is an entry body's content digest: SHA-256 of its RFC 8785
// canonical form, so a body re-encoded with other key order or spacing
// (an export passed through another JSON tool) keeps its digest. A body that
// is not JSON (the store does not require it) is digested as it is.
func ChainDigest(body []byte) []byte {
	if canon, err := jcs.Transform(body); err == nil {
		h := sha256.Sum256(canon)
		return h[:]
	}
	h := sha256.Sum256(body)
	return h[:]
}

// ChainHash is the hash of entry seq: its prev, its digest, its number and
// its append time (microseconds since the epoch, as stored).
func ChainHash(prev, digest []byte, seq, atMicro int64) []byte {
	var buf [2*ChainHashSize + 16]byte
	copy(buf[:], prev)
	copy(buf[ChainHashSize:], digest)
	binary.BigEndian.PutUint64(buf[2*ChainHashSize:], uint64(seq))
	binary.BigEndian.PutUint64(buf[2*ChainHashSize+8:], uint64(atMicro))
	h := sha256.Sum256(buf[:])
	return h[:]
}

// Chained reports whether the entry carries its chain fields (entries
// appended before the chain existed do not).
func (e LogEntry) Chained() bool {
	return len(e.Digest) == ChainHashSize && len(e.Prev) == ChainHashSize
}

// Hash is the entry's chain hash as its stored fields give it (nil when the
// entry is not chained). It does not check the digest against the body:
// that is verification's job.
func (e LogEntry) Hash() []byte {
	if !e.Chained() {
		return nil
	}
	return ChainHash(e.Prev, e.Digest, e.Seq, UnixMicro(e.At))
}

// ChainLink is what an adapter stores on a new entry: its digest and prev,
// and the hash that becomes the stream's head.
type ChainLink struct {
	Digest, Prev, Hash []byte
}

// NextLink chains a new entry seq (appended at atMicro) after a head hash
// (nil or empty: the stream has no chained entry before it, so it starts
// from the genesis).
func NextLink(stream string, head []byte, seq, atMicro int64, body []byte) ChainLink {
	prev := head
	if len(prev) != ChainHashSize {
		prev = ChainGenesis(stream)
	}
	d := ChainDigest(body)
	return ChainLink{Digest: d, Prev: bytes.Clone(prev), Hash: ChainHash(prev, d, seq, atMicro)}
}

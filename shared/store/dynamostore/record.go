package dynamostore

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// itemRecord is a domain item as written. Empty index keys and a zero
// expiry are omitted: an absent gsi2pk is what takes the item out of the
// sparse index, and DynamoDB refuses empty strings as index keys.
type itemRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Version   int64  `dynamodbav:"version"`
	Fence     int64  `dynamodbav:"fence"`
	GSI1PK    string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK    string `dynamodbav:"gsi1sk,omitempty"`
	GSI2PK    string `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK    string `dynamodbav:"gsi2sk,omitempty"`
	ExpiresAt int64  `dynamodbav:"expires_at,omitempty"`
	Body      []byte `dynamodbav:"body,omitempty"`
}

// logRecord is one log entry. append_id identifies the Append call that
// wrote it, so a retried put that finds its own entry knows it succeeded.
type logRecord struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	Version  int64  `dynamodbav:"version"`
	Fence    int64  `dynamodbav:"fence"`
	At       int64  `dynamodbav:"at"`
	Body     []byte `dynamodbav:"body,omitempty"`
	AppendID string `dynamodbav:"append_id"`
	// Digest and Prev are the entry's hash-chain link (store/chain.go).
	Digest []byte `dynamodbav:"digest,omitempty"`
	Prev   []byte `dynamodbav:"prev,omitempty"`
}

// storedRecord reads any item of the table: the union of all record kinds.
type storedRecord struct {
	PK          string   `dynamodbav:"pk"`
	SK          string   `dynamodbav:"sk"`
	Version     int64    `dynamodbav:"version"`
	Fence       int64    `dynamodbav:"fence"`
	GSI1PK      string   `dynamodbav:"gsi1pk"`
	GSI1SK      string   `dynamodbav:"gsi1sk"`
	GSI2PK      string   `dynamodbav:"gsi2pk"`
	GSI2SK      string   `dynamodbav:"gsi2sk"`
	ExpiresAt   int64    `dynamodbav:"expires_at"`
	Body        []byte   `dynamodbav:"body"`
	AttemptID   string   `dynamodbav:"attempt_id"`
	LeaseUntil  int64    `dynamodbav:"lease_until"`
	At          int64    `dynamodbav:"at"`
	AppendID    string   `dynamodbav:"append_id"`
	Digest      []byte   `dynamodbav:"digest"`
	Prev        []byte   `dynamodbav:"prev"`
	Consecutive int64    `dynamodbav:"consecutive"`
	Total       int64    `dynamodbav:"total"`
	Counted     []string `dynamodbav:"counted,stringset"`
}

func decode(av map[string]types.AttributeValue) (storedRecord, error) {
	var r storedRecord
	if err := attributevalue.UnmarshalMap(av, &r); err != nil {
		return storedRecord{}, fmt.Errorf("decode item: %w", err)
	}
	return r, nil
}

func (r storedRecord) item() store.Item {
	it := store.Item{
		PK: r.PK, SK: r.SK, Version: r.Version, Fence: r.Fence,
		GSI1PK: r.GSI1PK, GSI1SK: r.GSI1SK, GSI2PK: r.GSI2PK, GSI2SK: r.GSI2SK,
		ExpiresAt: store.ExpiresAtTime(r.ExpiresAt),
	}
	if len(r.Body) > 0 {
		it.Body = r.Body
	}
	return it
}

// logEntry is the record as an entry of stream (seq from its sort key).
func (r storedRecord) logEntry(stream string, seq int64) store.LogEntry {
	e := store.LogEntry{Stream: stream, Seq: seq, At: store.FromUnixMicro(r.At)}
	if len(r.Body) > 0 {
		e.Body = r.Body
	}
	if len(r.Digest) > 0 || len(r.Prev) > 0 {
		e.Digest, e.Prev = r.Digest, r.Prev
	}
	return e
}

func (r storedRecord) lease(resource string) store.Lease {
	return store.Lease{Resource: resource, AttemptID: r.AttemptID, Fence: r.Fence, ExpiresAt: store.FromUnixMicro(r.LeaseUntil)}
}

func (r storedRecord) counter() store.Counter {
	return store.Counter{Consecutive: r.Consecutive, Total: r.Total}
}

func encodeItem(it store.Item) (map[string]types.AttributeValue, error) {
	av, err := attributevalue.MarshalMap(itemRecord{
		PK: it.PK, SK: it.SK, Version: it.Version, Fence: it.Fence,
		GSI1PK: it.GSI1PK, GSI1SK: it.GSI1SK, GSI2PK: it.GSI2PK, GSI2SK: it.GSI2SK,
		ExpiresAt: store.ExpiresAtSeconds(it.ExpiresAt), Body: it.Body,
	})
	if err != nil {
		return nil, fmt.Errorf("encode item %s: %w", it.Key(), err)
	}
	return av, nil
}

func keyOf(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: k.PK},
		attrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

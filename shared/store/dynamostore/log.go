package dynamostore

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// appendAttempts bounds Append's read-then-put loop. Each lost race means
// another append succeeded, so N parallel appenders all finish within N
// rounds; the bound only stops a livelock from spinning forever.
const appendAttempts = 100

// logSKMax is above every log sort key.
var logSKMax = store.LogSKPrefix + strings.Repeat("9", 20)

// Append reads the stream's last entry (a descending Query, limit 1) and
// puts seq+1 on attribute_not_exists(pk); when another appender took that
// number first, it reads again and retries. The winner of each number is
// decided by the conditional put, so there are no duplicates, and a number
// is only taken by a put that succeeded, so there are no gaps.
//
// Each call tags its entry with a random append_id: if the SDK retried a
// put whose first attempt was applied but whose response was lost, the
// retry fails its condition against our own entry, and append_id tells
// that apart from a lost race (which would otherwise append twice).
func (s *Store) Append(ctx context.Context, stream string, body []byte) (int64, error) {
	if stream == "" {
		return 0, fmt.Errorf("append: %w: empty stream", store.ErrInvalid)
	}
	if len(body) > store.MaxBodyBytes {
		return 0, fmt.Errorf("append to %s: %w: body of %d bytes exceeds %d", stream, store.ErrInvalid, len(body), store.MaxBodyBytes)
	}
	op := "append to " + stream
	var tag [12]byte
	cryptorand.Read(tag[:]) // never fails (crypto/rand panics instead)
	appendID := hex.EncodeToString(tag[:])
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(attrPK))).Build()
	if err != nil {
		return 0, fmt.Errorf("%s: build condition: %w", op, err)
	}
	for attempt := 1; attempt <= appendAttempts; attempt++ {
		head, err := s.lastEntry(ctx, op, stream)
		if err != nil {
			return 0, err
		}
		seq := head.Seq + 1
		av, err := attributevalue.MarshalMap(newLogRecord(stream, appendID, head, seq, body))
		if err != nil {
			return 0, fmt.Errorf("%s: encode entry: %w", op, err)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.table),
			Item:                                av,
			ConditionExpression:                 cond.Condition(),
			ExpressionAttributeNames:            cond.Names(),
			ExpressionAttributeValues:           cond.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return seq, nil
		}
		old, failed := conditionFailed(err)
		if !failed {
			return 0, backendErr(op, err)
		}
		taken, found, err := s.oldRecord(ctx, op, store.Key{PK: stream, SK: store.LogSK(seq)}, old)
		if err != nil {
			return 0, err
		}
		if found && taken.AppendID == appendID {
			return seq, nil // our own earlier attempt was applied
		}
		if err := backoff(ctx, attempt); err != nil {
			return 0, backendErr(op, err)
		}
	}
	return 0, &store.UnavailableError{Op: "dynamostore: " + op,
		Err: fmt.Errorf("lost the race for the next sequence number %d times", appendAttempts)}
}

// newLogRecord is entry seq of stream, chained after head (the stream's
// last entry; zero when it has none).
func newLogRecord(stream, appendID string, head store.LogEntry, seq int64, body []byte) logRecord {
	at := time.Now().UnixMicro()
	link := store.NextLink(stream, head.Hash(), seq, at, body)
	return logRecord{PK: stream, SK: store.LogSK(seq), Version: 1, At: at, Body: body, AppendID: appendID,
		Digest: link.Digest, Prev: link.Prev}
}

// lastEntry reads the stream's last entry without its body (a descending
// Query, limit 1, consistent): its number and the fields of its chain
// hash. A stream without entries is the zero entry (seq 0, no hash).
func (s *Store) lastEntry(ctx context.Context, op, stream string) (store.LogEntry, error) {
	kc := expression.Key(attrPK).Equal(expression.Value(stream)).And(expression.Key(attrSK).BeginsWith(store.LogSKPrefix))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).
		WithProjection(expression.NamesList(expression.Name(attrSK), expression.Name("at"),
			expression.Name("digest"), expression.Name("prev"))).Build()
	if err != nil {
		return store.LogEntry{}, fmt.Errorf("%s: build query: %w", op, err)
	}
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return store.LogEntry{}, backendErr(op, err)
	}
	if len(out.Items) == 0 {
		return store.LogEntry{Stream: stream}, nil
	}
	r, err := decode(out.Items[0])
	if err != nil {
		return store.LogEntry{}, fmt.Errorf("%s: %w", op, err)
	}
	seq, err := store.ParseLogSK(r.SK)
	if err != nil {
		return store.LogEntry{}, fmt.Errorf("%s: last entry: %w", op, err)
	}
	return r.logEntry(stream, seq), nil
}

// ReadLog queries sk BETWEEN EVT#<after+1> AND the last possible log key.
func (s *Store) ReadLog(ctx context.Context, stream string, after int64, limit int) ([]store.LogEntry, error) {
	if stream == "" || after < 0 {
		return nil, fmt.Errorf("read log: %w: needs a stream and a non-negative position", store.ErrInvalid)
	}
	op := "read log " + stream
	kc := expression.Key(attrPK).Equal(expression.Value(stream)).
		And(expression.Key(attrSK).Between(expression.Value(store.LogSK(after+1)), expression.Value(logSKMax)))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("%s: build query: %w", op, err)
	}
	n := store.PageLimit(limit)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	var entries []store.LogEntry
	for {
		in.Limit = aws.Int32(int32(n - len(entries)))
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, backendErr(op, err)
		}
		for _, av := range out.Items {
			r, err := decode(av)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			seq, err := store.ParseLogSK(r.SK)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			entries = append(entries, r.logEntry(stream, seq))
		}
		if len(entries) >= n || len(out.LastEvaluatedKey) == 0 {
			return entries, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// backoff waits a jittered, growing delay before retry attempt+1, or
// returns the context's error.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(1<<min(attempt, 6)) * time.Millisecond
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

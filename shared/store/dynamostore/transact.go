package dynamostore

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// Transact is one TransactWriteItems: a Put per part, each on its own
// condition (attribute_not_exists for put-once, an expected-0 CAS and a log
// entry; version = expected, and fence <= the writer's for an owner write,
// for a CAS). An Append part reads its stream's last sequence number first
// (as Append does); when only Append parts fail their condition, another
// appender took the number, and the transaction is tried again with fresh
// numbers. The SDK gives every call a ClientRequestToken, so its own retry
// of a call whose response was lost is not applied twice.
func (s *Store) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	if err := store.ValidateTransact(writes); err != nil {
		return nil, fmt.Errorf("transact: %w", err)
	}
	op := fmt.Sprintf("transact %d parts", len(writes))
	notExists := expression.AttributeNotExists(expression.Name(attrPK))
	var tag [12]byte
	cryptorand.Read(tag[:]) // never fails (crypto/rand panics instead)
	appendID := hex.EncodeToString(tag[:])

	// The non-append parts do not change between attempts.
	puts := make([]*types.Put, len(writes))
	checks := make([]*types.ConditionCheck, len(writes))
	keys := make([]store.Key, len(writes))
	for i, w := range writes {
		if c := w.Check; c != nil {
			expr, err := expression.NewBuilder().WithCondition(expression.Name(attrVersion).Equal(expression.Value(c.Expected))).Build()
			if err != nil {
				return nil, fmt.Errorf("%s: build condition: %w", op, err)
			}
			checks[i] = &types.ConditionCheck{TableName: aws.String(s.table), Key: keyOf(c.Key),
				ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
			keys[i] = c.Key
			continue
		}
		var (
			item store.Item
			cond expression.ConditionBuilder
		)
		switch {
		case w.PutOnce != nil:
			item, cond = *w.PutOnce, notExists
		case w.CAS != nil:
			item = w.CAS.Stored()
			cond = casCondition(w.CAS.Expected, w.CAS.Fence)
		default:
			continue
		}
		put, err := s.conditionalPut(op, item, cond)
		if err != nil {
			return nil, err
		}
		puts[i], keys[i] = put, item.Key()
	}
	seqs := make([]int64, len(writes))
	for attempt := 1; attempt <= appendAttempts; attempt++ {
		for i, w := range writes {
			if w.Append == nil {
				continue
			}
			head, err := s.lastEntry(ctx, op, w.Append.Stream)
			if err != nil {
				return nil, err
			}
			seqs[i] = head.Seq + 1
			keys[i] = store.Key{PK: w.Append.Stream, SK: store.LogSK(seqs[i])}
			av, err := attributevalue.MarshalMap(newLogRecord(w.Append.Stream, appendID, head, seqs[i], w.Append.Body))
			if err != nil {
				return nil, fmt.Errorf("%s: encode entry: %w", op, err)
			}
			if puts[i], err = s.conditionalPutAV(op, av, notExists); err != nil {
				return nil, err
			}
		}
		in := &dynamodb.TransactWriteItemsInput{TransactItems: make([]types.TransactWriteItem, len(writes))}
		for i := range writes {
			if checks[i] != nil {
				in.TransactItems[i] = types.TransactWriteItem{ConditionCheck: checks[i]}
				continue
			}
			in.TransactItems[i] = types.TransactWriteItem{Put: puts[i]}
		}
		_, err := s.db.TransactWriteItems(ctx, in)
		if err == nil {
			return seqs, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return nil, backendErr(op, err)
		}
		retry := false
		for i, w := range writes {
			var code string
			var old map[string]types.AttributeValue
			if i < len(tce.CancellationReasons) {
				code, old = aws.ToString(tce.CancellationReasons[i].Code), tce.CancellationReasons[i].Item
			}
			switch code {
			case "TransactionConflict":
				retry = true
			case "ConditionalCheckFailed":
				if w.Append != nil {
					retry = true // another appender took this number
					continue
				}
				return nil, &store.TransactError{Index: i, Err: s.partFailure(ctx, op, w, keys[i], old)}
			}
		}
		if !retry {
			return nil, backendErr(op, err)
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, backendErr(op, err)
		}
	}
	return nil, &store.UnavailableError{Op: "dynamostore: " + op,
		Err: fmt.Errorf("lost the race for the next sequence numbers %d times", appendAttempts)}
}

// casCondition is CompareAndSwap's condition.
func casCondition(expected, fence int64) expression.ConditionBuilder {
	if expected == 0 {
		return expression.AttributeNotExists(expression.Name(attrPK))
	}
	cond := expression.Name(attrVersion).Equal(expression.Value(expected))
	if fence > 0 {
		cond = cond.And(expression.Name(attrFence).LessThanEqual(expression.Value(fence)))
	}
	return cond
}

func (s *Store) conditionalPut(op string, item store.Item, cond expression.ConditionBuilder) (*types.Put, error) {
	av, err := encodeItem(item)
	if err != nil {
		return nil, err
	}
	return s.conditionalPutAV(op, av, cond)
}

func (s *Store) conditionalPutAV(op string, av map[string]types.AttributeValue, cond expression.ConditionBuilder) (*types.Put, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("%s: build condition: %w", op, err)
	}
	return &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                av,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// partFailure is the error a failed put-once or CAS part would have
// returned on its own.
func (s *Store) partFailure(ctx context.Context, op string, w store.Write, key store.Key, old map[string]types.AttributeValue) error {
	stored, found, err := s.oldRecord(ctx, op, key, old)
	if err != nil {
		return err
	}
	if c := w.Check; c != nil {
		actual := int64(0)
		if found {
			actual = stored.Version
		}
		return &store.VersionConflictError{Key: key, Expected: c.Expected, Actual: actual}
	}
	if w.PutOnce != nil {
		if !found {
			return &store.ConflictError{Key: key}
		}
		return &store.ConflictError{Key: key, Existing: stored.item()}
	}
	c := w.CAS
	if found && c.Fence > 0 && stored.Fence > c.Fence {
		return &store.FenceError{Key: key, Fence: c.Fence, Stored: stored.Fence}
	}
	actual := int64(0)
	if found {
		actual = stored.Version
	}
	return &store.VersionConflictError{Key: key, Expected: c.Expected, Actual: actual}
}

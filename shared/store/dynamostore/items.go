package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// Get reads one item with a strongly consistent read.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Item, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.Item{}, fmt.Errorf("get %s: %w", key, err)
	}
	r, found, err := s.getRecord(ctx, "get "+key.String(), key)
	if err != nil {
		return store.Item{}, err
	}
	if !found {
		return store.Item{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return r.item(), nil
}

func (s *Store) getRecord(ctx context.Context, op string, key store.Key) (storedRecord, bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return storedRecord{}, false, backendErr(op, err)
	}
	if len(out.Item) == 0 {
		return storedRecord{}, false, nil
	}
	r, err := decode(out.Item)
	if err != nil {
		return storedRecord{}, false, fmt.Errorf("%s: %w", op, err)
	}
	return r, true, nil
}

// oldRecord is the item a failed condition was checked against: the one
// DynamoDB returned with the failure (ALL_OLD), or, when the response
// carries none, a consistent re-read. The re-read can see a later state
// than the one that failed the condition; it only fills the error.
func (s *Store) oldRecord(ctx context.Context, op string, key store.Key, old map[string]types.AttributeValue) (storedRecord, bool, error) {
	if len(old) > 0 {
		r, err := decode(old)
		if err != nil {
			return storedRecord{}, false, fmt.Errorf("%s: %w", op, err)
		}
		return r, true, nil
	}
	return s.getRecord(ctx, op, key)
}

// PutOnce puts the item on condition attribute_not_exists(pk).
func (s *Store) PutOnce(ctx context.Context, item store.Item) error {
	if err := store.ValidateItem(item); err != nil {
		return fmt.Errorf("put-once: %w", err)
	}
	op := "put-once " + item.Key().String()
	cond := expression.AttributeNotExists(expression.Name(attrPK))
	err := s.put(ctx, op, item, cond)
	old, failed := conditionFailed(err)
	if !failed {
		return err
	}
	existing, found, err := s.oldRecord(ctx, op, item.Key(), old)
	if err != nil {
		return err
	}
	if !found {
		// Deleted between the failed put and the re-read: nothing the store
		// does deletes items, so this is a TTL expiry; report it as lost.
		return &store.ConflictError{Key: item.Key()}
	}
	return &store.ConflictError{Key: item.Key(), Existing: existing.item()}
}

// put writes item on cond, asking for the old item on a failed condition.
// A failed condition is returned unwrapped for the caller to classify.
func (s *Store) put(ctx context.Context, op string, item store.Item, cond expression.ConditionBuilder) error {
	p, err := s.conditionalPut(op, item, cond)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
		ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if _, failed := conditionFailed(err); err == nil || failed {
		return err
	}
	return backendErr(op, err)
}

// CompareAndSwap puts the item on its version (attribute_not_exists for
// expected 0) and, for an owner write, on fence <= the writer's fence.
func (s *Store) CompareAndSwap(ctx context.Context, item store.Item, expected, fence int64) error {
	if fence > 0 {
		item.Fence = fence
	}
	if err := store.ValidateItem(item); err != nil {
		return fmt.Errorf("compare-and-swap: %w", err)
	}
	if expected < 0 || fence < 0 || item.Version <= expected {
		return fmt.Errorf("compare-and-swap: %w: item %s: version %d must be greater than expected %d (fence %d)",
			store.ErrInvalid, item.Key(), item.Version, expected, fence)
	}
	op := "compare-and-swap " + item.Key().String()
	err := s.put(ctx, op, item, casCondition(expected, fence))
	old, failed := conditionFailed(err)
	if !failed {
		return err
	}
	stored, found, err := s.oldRecord(ctx, op, item.Key(), old)
	if err != nil {
		return err
	}
	if found && fence > 0 && stored.Fence > fence {
		return &store.FenceError{Key: item.Key(), Fence: fence, Stored: stored.Fence}
	}
	actual := int64(0)
	if found {
		actual = stored.Version
	}
	return &store.VersionConflictError{Key: item.Key(), Expected: expected, Actual: actual}
}

// transactRetries bounds the retries of a transaction cancelled by a
// conflicting concurrent write (TransactionConflict): that is contention,
// not a lost condition, and the next attempt usually goes through.
const transactRetries = 5

// PutOnceIfVersion is the store's one transaction: the put of item on
// attribute_not_exists(pk) and a ConditionCheck of guard's version.
func (s *Store) PutOnceIfVersion(ctx context.Context, item store.Item, guard store.Key, expected int64) error {
	if err := store.ValidateItem(item); err != nil {
		return fmt.Errorf("put-once-if-version: %w", err)
	}
	if err := store.ValidateKey(guard); err != nil {
		return fmt.Errorf("put-once-if-version: %w", err)
	}
	if guard == item.Key() {
		return fmt.Errorf("put-once-if-version: %w: item %s cannot guard itself", store.ErrInvalid, guard)
	}
	op := "put-once " + item.Key().String() + " if " + guard.String()
	av, err := encodeItem(item)
	if err != nil {
		return err
	}
	putExpr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(attrPK))).Build()
	if err != nil {
		return fmt.Errorf("%s: build condition: %w", op, err)
	}
	guardExpr, err := expression.NewBuilder().WithCondition(expression.Name(attrVersion).Equal(expression.Value(expected))).Build()
	if err != nil {
		return fmt.Errorf("%s: build condition: %w", op, err)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:                           aws.String(s.table),
			Item:                                av,
			ConditionExpression:                 putExpr.Condition(),
			ExpressionAttributeNames:            putExpr.Names(),
			ExpressionAttributeValues:           putExpr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName:                           aws.String(s.table),
			Key:                                 keyOf(guard),
			ConditionExpression:                 guardExpr.Condition(),
			ExpressionAttributeNames:            guardExpr.Names(),
			ExpressionAttributeValues:           guardExpr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
	}}
	for attempt := 1; ; attempt++ {
		_, err := s.db.TransactWriteItems(ctx, in)
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return backendErr(op, err)
		}
		reasons := tce.CancellationReasons
		code := func(i int) string {
			if i < len(reasons) {
				return aws.ToString(reasons[i].Code)
			}
			return ""
		}
		oldItem := func(i int) map[string]types.AttributeValue {
			if i < len(reasons) {
				return reasons[i].Item
			}
			return nil
		}
		// The item first: a repeated command whose item exists is a
		// *ConflictError even if the guard moved since (see sqlitestore).
		if code(0) == "ConditionalCheckFailed" {
			existing, found, err := s.oldRecord(ctx, op, item.Key(), oldItem(0))
			if err != nil {
				return err
			}
			if found {
				return &store.ConflictError{Key: item.Key(), Existing: existing.item()}
			}
			return &store.ConflictError{Key: item.Key()}
		}
		if code(1) == "ConditionalCheckFailed" {
			// With ALL_OLD, no item here means the guard does not exist.
			// Without one (a backend that ignores ALL_OLD) re-read to tell.
			g, found, err := s.oldRecord(ctx, op, guard, oldItem(1))
			if err != nil {
				return err
			}
			if !found {
				return store.GuardMissing(guard, expected)
			}
			return &store.VersionConflictError{Key: guard, Expected: expected, Actual: g.Version}
		}
		if (code(0) == "TransactionConflict" || code(1) == "TransactionConflict") && attempt < transactRetries {
			if err := backoff(ctx, attempt); err != nil {
				return backendErr(op, err)
			}
			continue
		}
		return backendErr(op, err)
	}
}

package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// A lease is the item <resource>/LEASE (e.g. EXEC#<id>/LEASE) with attempt_id, fence and
// lease_until (store.UnixMicro, 0 once released; always present, so the
// "expired" condition can compare it). Its version is its fence. The item
// is never deleted and carries no TTL: the fence must continue from the
// last one for as long as the execution exists.

// update runs one conditional UpdateItem returning the new item, or the
// failed condition unwrapped (with ALL_OLD) for the caller to classify.
func (s *Store) update(ctx context.Context, op string, key store.Key, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (storedRecord, error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return storedRecord{}, fmt.Errorf("%s: build update: %w", op, err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 keyOf(key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		if _, failed := conditionFailed(err); failed {
			return storedRecord{}, err
		}
		return storedRecord{}, backendErr(op, err)
	}
	r, err := decode(out.Attributes)
	if err != nil {
		return storedRecord{}, fmt.Errorf("%s: %w", op, err)
	}
	return r, nil
}

// AcquireLease is one UpdateItem: fence = fence + 1 (from 0 when new) on
// condition that the lease is absent, ours, or expired at req.Now.
func (s *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := store.ValidateLeaseRequest(req); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease: %w", err)
	}
	key := store.LeaseKey(req.Resource)
	op := "acquire lease " + key.PK
	nextFence := expression.Plus(expression.IfNotExists(expression.Name(attrFence), expression.Value(0)), expression.Value(1))
	upd := expression.Set(expression.Name(attrFence), nextFence).
		Set(expression.Name(attrVersion), nextFence).
		Set(expression.Name(attrAttemptID), expression.Value(req.AttemptID)).
		Set(expression.Name(attrLeaseUntil), expression.Value(req.Now.Add(req.TTL).UnixMicro()))
	cond := expression.Or(
		expression.AttributeNotExists(expression.Name(attrPK)),
		expression.Name(attrAttemptID).Equal(expression.Value(req.AttemptID)),
		expression.Name(attrLeaseUntil).LessThanEqual(expression.Value(req.Now.UnixMicro())),
	)
	r, err := s.update(ctx, op, key, upd, cond)
	old, failed := conditionFailed(err)
	if !failed {
		if err != nil {
			return store.Lease{}, err
		}
		return r.lease(req.Resource), nil
	}
	held, found, err := s.oldRecord(ctx, op, key, old)
	if err != nil {
		return store.Lease{}, err
	}
	if !found {
		// Cannot happen: an absent lease passes the condition.
		return store.Lease{}, fmt.Errorf("%s: condition failed on a missing lease", op)
	}
	return store.Lease{}, &store.LeaseHeldError{Resource: req.Resource, Holder: held.AttemptID, ExpiresAt: store.FromUnixMicro(held.LeaseUntil)}
}

// ownedBy is the condition that the lease is still lease's.
func ownedBy(lease store.Lease) expression.ConditionBuilder {
	return expression.And(
		expression.Name(attrAttemptID).Equal(expression.Value(lease.AttemptID)),
		expression.Name(attrFence).Equal(expression.Value(lease.Fence)),
	)
}

func lost(lease store.Lease) error {
	return &store.LeaseLostError{Resource: lease.Resource, AttemptID: lease.AttemptID, Fence: lease.Fence}
}

// RenewLease moves lease_until on condition that the lease is still ours
// and not expired at now.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration, now time.Time) (store.Lease, error) {
	if lease.Resource == "" || lease.AttemptID == "" || ttl <= 0 || now.IsZero() {
		return store.Lease{}, fmt.Errorf("renew lease: %w: needs a resource, an attempt, a positive TTL and a time", store.ErrInvalid)
	}
	key := store.LeaseKey(lease.Resource)
	upd := expression.Set(expression.Name(attrLeaseUntil), expression.Value(now.Add(ttl).UnixMicro()))
	cond := ownedBy(lease).And(expression.Name(attrLeaseUntil).GreaterThan(expression.Value(now.UnixMicro())))
	r, err := s.update(ctx, "renew lease "+key.PK, key, upd, cond)
	if _, failed := conditionFailed(err); failed {
		return store.Lease{}, lost(lease)
	}
	if err != nil {
		return store.Lease{}, err
	}
	return r.lease(lease.Resource), nil
}

// ReleaseLease sets lease_until to 0 on condition that the lease is still
// ours; the fence stays.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	if lease.Resource == "" || lease.AttemptID == "" {
		return fmt.Errorf("release lease: %w: needs a resource and an attempt", store.ErrInvalid)
	}
	key := store.LeaseKey(lease.Resource)
	upd := expression.Set(expression.Name(attrLeaseUntil), expression.Value(0))
	_, err := s.update(ctx, "release lease "+key.PK, key, upd, ownedBy(lease))
	if _, failed := conditionFailed(err); failed {
		return lost(lease)
	}
	return err
}

// GetLease reads the lease item (consistent read).
func (s *Store) GetLease(ctx context.Context, resource string) (store.Lease, error) {
	if resource == "" {
		return store.Lease{}, fmt.Errorf("get lease: %w: empty resource", store.ErrInvalid)
	}
	key := store.LeaseKey(resource)
	r, found, err := s.getRecord(ctx, "get lease "+key.PK, key)
	if err != nil {
		return store.Lease{}, err
	}
	if !found {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", key.PK, store.ErrNotFound)
	}
	return r.lease(resource), nil
}

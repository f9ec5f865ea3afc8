package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/openprogram/lifecycle/shared/store"
)

// ApplyCounter is one UpdateItem on the counter item, conditioned on the
// member ("<op>:<action_id>") not being in the item's "counted" string set
// and adding it to the set in the same write: no transaction, and a
// repeated or concurrent change for the same member fails its condition.
//
// The set grows by one member per counted change for the life of the
// epoch; at about 30 bytes a member the 400 KB item limit allows roughly
// ten thousand changes per session and epoch (see ../SCHEMA.md).
func (s *Store) ApplyCounter(ctx context.Context, key store.CounterKey, member string, op store.CounterOp) (store.Counter, bool, error) {
	if err := store.ValidateCounter(key, member, op); err != nil {
		return store.Counter{}, false, fmt.Errorf("apply counter: %w", err)
	}
	k := store.CounterItemKey(key)
	m := store.CounterMember(op, member)
	desc := fmt.Sprintf("apply counter %s %s", k, m)
	one := expression.Value(1)
	zero := expression.Value(0)
	upd := expression.Add(expression.Name(attrCounted), expression.Value(&types.AttributeValueMemberSS{Value: []string{m}})).
		Add(expression.Name(attrVersion), one).
		Set(expression.Name(attrFence), zero)
	switch op {
	case store.CounterBlock:
		upd = upd.Add(expression.Name(attrConsecutive), one).Add(expression.Name(attrTotal), one)
	case store.CounterAllow:
		upd = upd.Set(expression.Name(attrConsecutive), zero)
	case store.CounterResetTotal:
		upd = upd.Set(expression.Name(attrConsecutive), zero).Set(expression.Name(attrTotal), zero)
	}
	// contains() on a missing attribute is false, so NOT contains() alone
	// would do; attribute_not_exists states the first change explicitly.
	cond := expression.Or(
		expression.AttributeNotExists(expression.Name(attrCounted)),
		expression.Not(expression.Contains(expression.Name(attrCounted), m)),
	)
	r, err := s.update(ctx, desc, k, upd, cond)
	old, failed := conditionFailed(err)
	if !failed {
		if err != nil {
			return store.Counter{}, false, err
		}
		return r.counter(), true, nil
	}
	cur, _, err := s.oldRecord(ctx, desc, k, old)
	if err != nil {
		return store.Counter{}, false, err
	}
	return cur.counter(), false, nil
}

// GetCounter reads a counter; one never written reads as zero.
func (s *Store) GetCounter(ctx context.Context, key store.CounterKey) (store.Counter, error) {
	if key.SessionID == "" || key.Epoch == "" {
		return store.Counter{}, fmt.Errorf("get counter: %w: needs a session and an epoch", store.ErrInvalid)
	}
	k := store.CounterItemKey(key)
	r, _, err := s.getRecord(ctx, "get counter "+k.String(), k)
	if err != nil {
		return store.Counter{}, err
	}
	return r.counter(), nil
}

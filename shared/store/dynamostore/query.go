package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/openprogram/lifecycle/shared/store"
)

// Query lists one partition of the table (strongly consistent).
func (s *Store) Query(ctx context.Context, pk string, opts store.QueryOptions) (store.Page, error) {
	op := "query " + pk
	if pk == "" {
		return store.Page{}, fmt.Errorf("%s: %w: empty partition key", op, store.ErrInvalid)
	}
	return s.queryRange(ctx, op, "", attrPK, attrSK, pk, opts, func(it store.Item) string { return it.SK })
}

// QueryIndex lists one partition of GSI1 or GSI2 (eventually consistent,
// as every GSI read is).
func (s *Store) QueryIndex(ctx context.Context, index store.Index, pk string, opts store.QueryOptions) (store.Page, error) {
	op := fmt.Sprintf("query %s %s", index, pk)
	if pk == "" {
		return store.Page{}, fmt.Errorf("%s: %w: empty partition key", op, store.ErrInvalid)
	}
	switch index {
	case store.IndexSession:
		return s.queryRange(ctx, op, indexGSI1, attrGSI1PK, attrGSI1SK, pk, opts, func(it store.Item) string { return it.GSI1SK })
	case store.IndexOpen:
		return s.queryRange(ctx, op, indexGSI2, attrGSI2PK, attrGSI2SK, pk, opts, func(it store.Item) string { return it.GSI2SK })
	}
	return store.Page{}, fmt.Errorf("query index %q: %w: unknown index", index, store.ErrInvalid)
}

// queryRange turns SKPrefix and After into one key condition.
//
// After is a sort-key comparison (sk > After, or < when descending) rather
// than an ExclusiveStartKey: a GSI's start key needs the last item's table
// key as well as its index key, which a sort key alone does not carry, and
// a start key must name an item that exists in minidyn (DynamoDB accepts
// any position). DynamoDB allows one condition on the sort key, so with
// both a prefix and an After inside it the prefix is enforced by stopping
// at the first item outside it: items come in sort-key order, so every
// later one is outside too. An After on the far side of the prefix range
// excludes nothing; one past the range leaves nothing to list.
//
// LastEvaluatedKey/ExclusiveStartKey still carry the listing across
// DynamoDB's 1 MB response pages (see query).
func (s *Store) queryRange(ctx context.Context, op, index, pkAttr, skAttr, pk string, opts store.QueryOptions,
	skOf func(store.Item) string) (store.Page, error) {
	kc := expression.Key(pkAttr).Equal(expression.Value(pk))
	sk := expression.Key(skAttr)
	prefix, stopAt := opts.SKPrefix, ""
	switch pos := store.PrefixPosition(opts.After, prefix); {
	case opts.After == "" || (pos < 0 && !opts.Descending) || (pos > 0 && opts.Descending):
		if prefix != "" {
			kc = kc.And(sk.BeginsWith(prefix))
		}
	case pos == 0:
		if opts.Descending {
			kc = kc.And(sk.LessThan(expression.Value(opts.After)))
		} else {
			kc = kc.And(sk.GreaterThan(expression.Value(opts.After)))
		}
		stopAt = prefix
	default:
		return store.Page{}, nil
	}
	return s.query(ctx, op, index, kc, opts, skOf, stopAt)
}

// query collects up to limit items, following LastEvaluatedKey across
// DynamoDB's 1 MB pages, and reads one item more than the page so that
// Next is empty exactly when nothing follows. A non-empty stopAt ends the
// listing at the first item whose sort key (skOf) lacks that prefix.
func (s *Store) query(ctx context.Context, op, index string, kc expression.KeyConditionBuilder,
	opts store.QueryOptions, skOf func(store.Item) string, stopAt string) (store.Page, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return store.Page{}, fmt.Errorf("%s: build key condition: %w", op, err)
	}
	limit := store.PageLimit(opts.Limit)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(!opts.Descending),
	}
	if index == "" {
		in.ConsistentRead = aws.Bool(true)
	} else {
		in.IndexName = aws.String(index)
	}
	var page store.Page
	for {
		in.Limit = aws.Int32(int32(limit + 1 - len(page.Items)))
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return store.Page{}, backendErr(op, err)
		}
		for _, av := range out.Items {
			r, err := decode(av)
			if err != nil {
				return store.Page{}, fmt.Errorf("%s: %w", op, err)
			}
			it := r.item()
			if stopAt != "" && !strings.HasPrefix(skOf(it), stopAt) {
				return page, nil // past the prefix: the listing is complete
			}
			page.Items = append(page.Items, it)
		}
		if len(page.Items) > limit {
			page.Items = page.Items[:limit]
			page.Next = skOf(page.Items[limit-1])
			return page, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

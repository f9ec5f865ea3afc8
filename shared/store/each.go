package store

import "context"

// Each calls fn for every item of partition pk that opts selects, page
// after page in sort-key order (opts.After is where it starts; a page holds
// opts.Limit items, MaxLimit when 0). It stops at the first error of the
// query or of fn and returns it.
func Each(ctx context.Context, s Store, pk string, opts QueryOptions, fn func(Item) error) error {
	return each(opts, func(o QueryOptions) (Page, error) { return s.Query(ctx, pk, o) }, fn)
}

// EachInIndex is Each over index's partition pk.
func EachInIndex(ctx context.Context, s Store, index Index, pk string, opts QueryOptions, fn func(Item) error) error {
	return each(opts, func(o QueryOptions) (Page, error) { return s.QueryIndex(ctx, index, pk, o) }, fn)
}

func each(opts QueryOptions, query func(QueryOptions) (Page, error), fn func(Item) error) error {
	if opts.Limit == 0 {
		opts.Limit = MaxLimit
	}
	for {
		page, err := query(opts)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		opts.After = page.Next
	}
}

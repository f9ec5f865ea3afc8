package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/openprogram/lifecycle/shared/store"
)

type rowScanner interface{ Scan(dest ...any) error }

func scanItem(row rowScanner) (store.Item, error) {
	var (
		it         store.Item
		g1pk, g1sk sql.NullString
		g2pk, g2sk sql.NullString
		expiresAt  sql.NullInt64
		body       []byte
	)
	if err := row.Scan(&it.PK, &it.SK, &it.Version, &it.Fence, &g1pk, &g1sk, &g2pk, &g2sk, &expiresAt, &body); err != nil {
		return store.Item{}, err
	}
	it.GSI1PK, it.GSI1SK = g1pk.String, g1sk.String
	it.GSI2PK, it.GSI2SK = g2pk.String, g2sk.String
	it.ExpiresAt = store.ExpiresAtTime(expiresAt.Int64)
	if len(body) > 0 {
		it.Body = body
	}
	return it, nil
}

// nullable stores "" as NULL, so partial indexes leave the item out and
// the row reads back the same way DynamoDB's absent attribute does.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullableInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// itemArgs are the item's columns in wInsertItem order.
func itemArgs(it store.Item) []any {
	return []any{it.PK, it.SK, it.Version, it.Fence,
		nullable(it.GSI1PK), nullable(it.GSI1SK), nullable(it.GSI2PK), nullable(it.GSI2SK),
		nullableInt(store.ExpiresAtSeconds(it.ExpiresAt)), it.Body}
}

// Get reads one item from the read pool.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Item, error) {
	if err := store.ValidateKey(key); err != nil {
		return store.Item{}, fmt.Errorf("get %s: %w", key, err)
	}
	var seq uint64
	cached := s.cache != nil && !store.ReservedSK(key.SK)
	if cached {
		var hit bool
		var it store.Item
		if it, hit, seq = s.cache.get(key); hit {
			return it, nil
		}
	}
	it, err := scanItem(s.stmts.rGetItem.QueryRowContext(ctx, key.PK, key.SK))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Item{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Item{}, unavailable("get "+key.String(), err)
	}
	if cached {
		s.cache.fill(it, seq)
	}
	return it, nil
}

// getTx reads an item inside a write transaction; found is false when absent.
func (s *Store) getTx(ctx context.Context, tx *sql.Tx, key store.Key) (it store.Item, found bool, err error) {
	it, err = scanItem(tx.StmtContext(ctx, s.stmts.wGetItem).QueryRowContext(ctx, key.PK, key.SK))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Item{}, false, nil
	}
	if err != nil {
		return store.Item{}, false, err
	}
	return it, true, nil
}

// insertTx inserts an item unless its key exists; inserted is false then.
func (s *Store) insertTx(ctx context.Context, tx *sql.Tx, it store.Item) (inserted bool, err error) {
	res, err := tx.StmtContext(ctx, s.stmts.wInsertItem).ExecContext(ctx, itemArgs(it)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PutOnce inserts the item unless its key exists (*store.ConflictError
// carrying the stored item).
func (s *Store) PutOnce(ctx context.Context, item store.Item) error {
	if err := store.ValidateItem(item); err != nil {
		return fmt.Errorf("put-once: %w", err)
	}
	op := "put-once " + item.Key().String()
	return s.writeItems(ctx, op, []store.Item{asStored(item)}, func(tx *sql.Tx) error {
		return s.putOnceTx(ctx, tx, op, item)
	})
}

func (s *Store) putOnceTx(ctx context.Context, tx *sql.Tx, op string, item store.Item) error {
	inserted, err := s.insertTx(ctx, tx, item)
	if err != nil {
		return unavailable(op, err)
	}
	if inserted {
		return nil
	}
	existing, _, err := s.getTx(ctx, tx, item.Key())
	if err != nil {
		return unavailable(op, err)
	}
	return &store.ConflictError{Key: item.Key(), Existing: existing}
}

// CompareAndSwap replaces the item if its version is expected (0: absent)
// and, for an owner write (fence > 0), its fence is not newer than fence.
func (s *Store) CompareAndSwap(ctx context.Context, item store.Item, expected, fence int64) error {
	if fence > 0 {
		item.Fence = fence
	}
	if err := validateCAS(item, expected, fence); err != nil {
		return fmt.Errorf("compare-and-swap: %w", err)
	}
	op := "compare-and-swap " + item.Key().String()
	return s.writeItems(ctx, op, []store.Item{asStored(item)}, func(tx *sql.Tx) error {
		return s.casTx(ctx, tx, op, item, expected, fence)
	})
}

// casTx is CompareAndSwap inside a write transaction; item.Fence is set.
func (s *Store) casTx(ctx context.Context, tx *sql.Tx, op string, item store.Item, expected, fence int64) error {
	var (
		done bool
		err  error
	)
	if expected == 0 {
		done, err = s.insertTx(ctx, tx, item)
	} else {
		// fence 0 is not an owner write: "fence <= MaxInt64" always holds.
		maxFence := fence
		if fence == 0 {
			maxFence = 1<<63 - 1
		}
		done, err = s.updateTx(ctx, tx, item, expected, maxFence)
	}
	if err != nil {
		return unavailable(op, err)
	}
	if done {
		return nil
	}
	stored, found, err := s.getTx(ctx, tx, item.Key())
	if err != nil {
		return unavailable(op, err)
	}
	return casFailure(item.Key(), expected, fence, stored, found)
}

// Transact runs every part in one write transaction (a savepoint of its
// batch): the first failed condition undoes the parts before it.
func (s *Store) Transact(ctx context.Context, writes []store.Write) ([]int64, error) {
	if err := store.ValidateTransact(writes); err != nil {
		return nil, fmt.Errorf("transact: %w", err)
	}
	seqs := make([]int64, len(writes))
	var items []store.Item
	for _, w := range writes {
		switch {
		case w.PutOnce != nil:
			items = append(items, asStored(*w.PutOnce))
		case w.CAS != nil:
			items = append(items, asStored(w.CAS.Stored()))
		}
	}
	op := fmt.Sprintf("transact %d parts", len(writes))
	err := s.enqueue(&writeReq{ctx: ctx, op: op, items: items, fn: func(tx *sql.Tx) error {
		for i, w := range writes {
			var err error
			switch {
			case w.PutOnce != nil:
				err = s.putOnceTx(ctx, tx, op, *w.PutOnce)
			case w.CAS != nil:
				err = s.casTx(ctx, tx, op, w.CAS.Stored(), w.CAS.Expected, w.CAS.Fence)
			case w.Check != nil:
				err = s.checkTx(ctx, tx, op, *w.Check)
			default:
				seqs[i], err = s.appendTx(ctx, tx, op, w.Append.Stream, w.Append.Body)
			}
			if err != nil {
				var ue *store.UnavailableError
				if !errors.As(err, &ue) {
					err = &store.TransactError{Index: i, Err: err}
				}
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return seqs, nil
}

// checkTx holds when the item's version is the expected one.
func (s *Store) checkTx(ctx context.Context, tx *sql.Tx, op string, c store.CheckWrite) error {
	var actual int64
	err := tx.StmtContext(ctx, s.stmts.wGetVersion).QueryRowContext(ctx, c.Key.PK, c.Key.SK).Scan(&actual)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return unavailable(op, err)
	}
	if actual != c.Expected {
		return &store.VersionConflictError{Key: c.Key, Expected: c.Expected, Actual: actual}
	}
	return nil
}

// updateTx replaces the item if its version is expected and its fence at
// most maxFence; done is false when the condition does not hold.
func (s *Store) updateTx(ctx context.Context, tx *sql.Tx, item store.Item, expected, maxFence int64) (done bool, err error) {
	expires := nullableInt(store.ExpiresAtSeconds(item.ExpiresAt))
	sameKeys := func(g1pk, g1sk, g2pk, g2sk string) bool {
		return g1pk == item.GSI1PK && g1sk == item.GSI1SK && g2pk == item.GSI2PK && g2sk == item.GSI2SK
	}
	updateBody := func() (bool, error) {
		res, err := tx.StmtContext(ctx, s.stmts.wUpdateBody).ExecContext(ctx, item.Version, item.Fence, expires, item.Body,
			item.PK, item.SK, expected, maxFence)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return err == nil && n == 1, err
	}
	if s.cache != nil {
		// The cached item at the expected version has the index keys the
		// row has (a version is written once), so no read is needed to
		// choose the statement. The UPDATE still checks the condition: the
		// row may have moved on in this very batch.
		if c, ok := s.cache.peek(item.Key()); ok && c.Version == expected {
			if sameKeys(c.GSI1PK, c.GSI1SK, c.GSI2PK, c.GSI2SK) {
				return updateBody()
			}
			return s.updateAllTx(ctx, tx, item, expires, expected, maxFence)
		}
	}
	var g1pk, g1sk, g2pk, g2sk sql.NullString
	err = tx.StmtContext(ctx, s.stmts.wCASKeys).QueryRowContext(ctx, item.PK, item.SK, expected, maxFence).Scan(&g1pk, &g1sk, &g2pk, &g2sk)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if sameKeys(g1pk.String, g1sk.String, g2pk.String, g2sk.String) {
		return updateBody()
	}
	return s.updateAllTx(ctx, tx, item, expires, expected, maxFence)
}

// updateAllTx replaces every column of the item if the condition holds.
func (s *Store) updateAllTx(ctx context.Context, tx *sql.Tx, item store.Item, expires any, expected, maxFence int64) (bool, error) {
	res, err := tx.StmtContext(ctx, s.stmts.wUpdateItem).ExecContext(ctx,
		item.Version, item.Fence, nullable(item.GSI1PK), nullable(item.GSI1SK),
		nullable(item.GSI2PK), nullable(item.GSI2SK), expires, item.Body,
		item.PK, item.SK, expected, maxFence)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, err
}

func validateCAS(item store.Item, expected, fence int64) error {
	if err := store.ValidateItem(item); err != nil {
		return err
	}
	if expected < 0 || fence < 0 || item.Version <= expected {
		return fmt.Errorf("%w: item %s: version %d must be greater than expected %d (fence %d)",
			store.ErrInvalid, item.Key(), item.Version, expected, fence)
	}
	return nil
}

// casFailure names why a compare-and-swap lost. A stale fence wins over a
// version mismatch: it tells the writer it is no longer the owner, which a
// retry with a fresh version would not fix.
func casFailure(key store.Key, expected, fence int64, stored store.Item, found bool) error {
	if found && fence > 0 && stored.Fence > fence {
		return &store.FenceError{Key: key, Fence: fence, Stored: stored.Fence}
	}
	actual := int64(0)
	if found {
		actual = stored.Version
	}
	return &store.VersionConflictError{Key: key, Expected: expected, Actual: actual}
}

// PutOnceIfVersion inserts item only if guard's version is expected, both
// checked and written in one transaction.
func (s *Store) PutOnceIfVersion(ctx context.Context, item store.Item, guard store.Key, expected int64) error {
	if err := validateGuarded(item, guard); err != nil {
		return fmt.Errorf("put-once-if-version: %w", err)
	}
	op := "put-once " + item.Key().String() + " if " + guard.String()
	return s.writeItems(ctx, op, []store.Item{asStored(item)}, func(tx *sql.Tx) error {
		// The item is checked first: a repeated command whose item exists is
		// reported as *ConflictError (with the stored command) even when the
		// guard's version has moved on since, so the caller can recognise
		// its own earlier write.
		existing, found, err := s.getTx(ctx, tx, item.Key())
		if err != nil {
			return unavailable(op, err)
		}
		if found {
			return &store.ConflictError{Key: item.Key(), Existing: existing}
		}
		var actual int64
		err = tx.StmtContext(ctx, s.stmts.wGetVersion).QueryRowContext(ctx, guard.PK, guard.SK).Scan(&actual)
		if errors.Is(err, sql.ErrNoRows) {
			return store.GuardMissing(guard, expected)
		}
		if err != nil {
			return unavailable(op, err)
		}
		if actual != expected {
			return &store.VersionConflictError{Key: guard, Expected: expected, Actual: actual}
		}
		if _, err := s.insertTx(ctx, tx, item); err != nil {
			return unavailable(op, err)
		}
		return nil
	})
}

func validateGuarded(item store.Item, guard store.Key) error {
	if err := store.ValidateItem(item); err != nil {
		return err
	}
	if err := store.ValidateKey(guard); err != nil {
		return err
	}
	if guard == item.Key() {
		return fmt.Errorf("%w: item %s cannot guard itself", store.ErrInvalid, guard)
	}
	return nil
}

// Query lists one partition in sort-key order.
func (s *Store) Query(ctx context.Context, pk string, opts store.QueryOptions) (store.Page, error) {
	return s.query(ctx, "", pk, opts)
}

// QueryIndex lists one partition of a secondary index in index sort-key order.
func (s *Store) QueryIndex(ctx context.Context, index store.Index, pk string, opts store.QueryOptions) (store.Page, error) {
	if index != store.IndexSession && index != store.IndexOpen {
		return store.Page{}, fmt.Errorf("query index %q: %w: unknown index", index, store.ErrInvalid)
	}
	return s.query(ctx, index, pk, opts)
}

// queryShape names one prepared query: which key columns, which bounds,
// which direction. The handful of shapes are prepared on first use.
type queryShape struct {
	index      store.Index // "" = the table
	lo, loExcl bool
	hi         bool
	desc       bool
}

func (q queryShape) sql() string {
	pkCol, skCol := "pk", "sk"
	switch q.index {
	case store.IndexSession:
		pkCol, skCol = "gsi1pk", "gsi1sk"
	case store.IndexOpen:
		pkCol, skCol = "gsi2pk", "gsi2sk"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM items WHERE %s = ?", itemCols, pkCol)
	if q.lo {
		op := ">="
		if q.loExcl {
			op = ">"
		}
		fmt.Fprintf(&b, " AND %s %s ?", skCol, op)
	}
	if q.hi {
		fmt.Fprintf(&b, " AND %s < ?", skCol)
	}
	dir := "ASC"
	if q.desc {
		dir = "DESC"
	}
	fmt.Fprintf(&b, " ORDER BY %s %s LIMIT ?", skCol, dir)
	return b.String()
}

func (s *Store) queryStmt(q queryShape) (*sql.Stmt, error) {
	if st, ok := s.queries.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.r.Prepare(q.sql())
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.queries.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *Store) query(ctx context.Context, index store.Index, pk string, opts store.QueryOptions) (store.Page, error) {
	op := fmt.Sprintf("query %s%s", indexLabel(index), pk)
	if pk == "" {
		return store.Page{}, fmt.Errorf("%s: %w: empty partition key", op, store.ErrInvalid)
	}
	limit := store.PageLimit(opts.Limit)
	// The sort-key range [lo, hi): the prefix bounds it, and After moves the
	// start (ascending) or the end (descending). Each bound is a single
	// comparison so SQLite seeks straight to the page's first row however
	// deep into the partition it is.
	shape := queryShape{index: index, desc: opts.Descending}
	args := []any{pk}
	var lo, hi string
	if opts.SKPrefix != "" {
		lo, shape.lo = opts.SKPrefix, true
		hi, shape.hi = store.PrefixEnd(opts.SKPrefix)
	}
	if opts.After != "" {
		if !opts.Descending && (!shape.lo || opts.After >= lo) {
			lo, shape.lo, shape.loExcl = opts.After, true, true
		}
		if opts.Descending && (!shape.hi || opts.After < hi) {
			hi, shape.hi = opts.After, true
		}
	}
	if shape.lo {
		args = append(args, lo)
	}
	if shape.hi {
		args = append(args, hi)
	}
	// One row more than the page tells whether another page exists, so Next
	// is empty exactly when the listing is complete.
	args = append(args, limit+1)
	st, err := s.queryStmt(shape)
	if err != nil {
		return store.Page{}, unavailable(op, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return store.Page{}, unavailable(op, err)
	}
	defer rows.Close()
	var page store.Page
	more := false
	for rows.Next() {
		if len(page.Items) == limit {
			more = true
			break
		}
		it, err := scanItem(rows)
		if err != nil {
			return store.Page{}, unavailable(op, err)
		}
		page.Items = append(page.Items, it)
	}
	if err := rows.Err(); err != nil {
		return store.Page{}, unavailable(op, err)
	}
	if more {
		last := page.Items[len(page.Items)-1]
		switch index {
		case store.IndexSession:
			page.Next = last.GSI1SK
		case store.IndexOpen:
			page.Next = last.GSI2SK
		default:
			page.Next = last.SK
		}
	}
	return page, nil
}

func indexLabel(index store.Index) string {
	if index == "" {
		return ""
	}
	return string(index) + " "
}

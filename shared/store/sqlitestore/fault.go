package sqlitestore

import (
	"context"
	"database/sql/driver"
	"errors"
)

// The fault wrapper sits between database/sql and the SQLite driver, so an
// injected failure travels the same path as a real I/O error: the driver
// call fails, database/sql reports it, the store rolls back. Only the
// interfaces the store uses are wrapped; anything else is not reachable.

type faultConnector struct {
	inner driver.Connector
	fault Fault
}

func (c *faultConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &faultConn{inner: conn, fault: c.fault}, nil
}

func (c *faultConnector) Driver() driver.Driver { return c.inner.Driver() }

type faultConn struct {
	inner driver.Conn
	fault Fault
}

var (
	_ driver.ConnBeginTx        = (*faultConn)(nil)
	_ driver.ConnPrepareContext = (*faultConn)(nil)
	_ driver.ExecerContext      = (*faultConn)(nil)
	_ driver.QueryerContext     = (*faultConn)(nil)
	_ driver.Pinger             = (*faultConn)(nil)
	_ driver.SessionResetter    = (*faultConn)(nil)
	_ driver.Validator          = (*faultConn)(nil)
	_ driver.StmtExecContext    = (*faultStmt)(nil)
	_ driver.StmtQueryContext   = (*faultStmt)(nil)
	_ driver.Tx                 = (*faultTx)(nil)
)

var errNotSupportedByFaultDriver = errors.New("sqlitestore: driver interface not supported under fault injection")

func (c *faultConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	p, ok := c.inner.(driver.ConnPrepareContext)
	if !ok {
		return nil, errNotSupportedByFaultDriver
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &faultStmt{inner: st, query: query, fault: c.fault}, nil
}

func (c *faultConn) Close() error { return c.inner.Close() }

func (c *faultConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.fault("BEGIN"); err != nil {
		return nil, err
	}
	b, ok := c.inner.(driver.ConnBeginTx)
	if !ok {
		return nil, errNotSupportedByFaultDriver
	}
	tx, err := b.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &faultTx{inner: tx, fault: c.fault}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.fault(query); err != nil {
		return nil, err
	}
	e, ok := c.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return e.ExecContext(ctx, query, args)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.fault(query); err != nil {
		return nil, err
	}
	q, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	return q.QueryContext(ctx, query, args)
}

func (c *faultConn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *faultConn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *faultConn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type faultStmt struct {
	inner driver.Stmt
	query string
	fault Fault
}

func (s *faultStmt) Close() error  { return s.inner.Close() }
func (s *faultStmt) NumInput() int { return s.inner.NumInput() }

func (s *faultStmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errNotSupportedByFaultDriver
}

func (s *faultStmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errNotSupportedByFaultDriver
}

func (s *faultStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.fault(s.query); err != nil {
		return nil, err
	}
	e, ok := s.inner.(driver.StmtExecContext)
	if !ok {
		return nil, errNotSupportedByFaultDriver
	}
	return e.ExecContext(ctx, args)
}

func (s *faultStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.fault(s.query); err != nil {
		return nil, err
	}
	q, ok := s.inner.(driver.StmtQueryContext)
	if !ok {
		return nil, errNotSupportedByFaultDriver
	}
	return q.QueryContext(ctx, args)
}

type faultTx struct {
	inner driver.Tx
	fault Fault
}

// Commit with an injected fault rolls the real transaction back before
// failing: a COMMIT that fails leaves nothing committed, and the connection
// must go back to the pool without an open transaction.
func (t *faultTx) Commit() error {
	if err := t.fault("COMMIT"); err != nil {
		return errors.Join(err, t.inner.Rollback())
	}
	return t.inner.Commit()
}

func (t *faultTx) Rollback() error { return t.inner.Rollback() }

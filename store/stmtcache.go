package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
)

// maxCachedStmts bounds the statements one SQLite connection keeps prepared. The store's
// fixed statements are a few dozen; statements whose text varies with their data (a
// multi-row INSERT) take the least recently used places.
const maxCachedStmts = 128

// sqliteConnector opens modernc.org/sqlite connections that keep each statement they run
// prepared, by its text (stmtCache). modernc's connection prepares, runs and finalizes a
// statement on every Exec or Query: parsing the same few statements over and over was a
// large share of a SQLite replica's CPU. database/sql's own prepared
// statements would need preparing before every transaction (the writer pool has one
// connection, and preparing on the pool inside a transaction would wait for it); a cache
// per connection needs nothing from the code that runs the statements.
type sqliteConnector struct {
	dsn string
	drv driver.Driver
}

// Connect implements driver.Connector.
func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newStmtCache(conn)
}

// Driver implements driver.Connector.
func (c sqliteConnector) Driver() driver.Driver { return c.drv }

// sqliteConn is what stmtCache needs of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtCache is a SQLite connection whose ExecContext and QueryContext run statements it
// keeps prepared, at most maxCachedStmts of them, least recently used first out. database/sql
// uses a connection from one goroutine at a time, so it needs no lock. A statement whose
// rows are still being read (a query run again before the first one's rows are closed) is
// not shared: the second run goes the uncached way.
//
// It also runs every statement, BEGIN and COMMIT included, unwatched: a context already
// done fails it, but one that ends while it runs no longer interrupts it. modernc's
// connection starts a goroutine to watch the context of each statement that has one (and
// sets SQLite's progress and busy handlers for it): four a group commit of the event log,
// 13% of a lone delta's commit at GOMAXPROCS=1 and a fifth of its allocations
// (BenchmarkCommitOneEvent). Nothing here waits on anything an interrupt would end: this
// process is the database's only user (lock_unix.go), its writer pool has one connection,
// BEGIN IMMEDIATE takes the write lock before a transaction's first statement, and in WAL
// mode readers never wait for the writer; a statement blocked in the disk cannot be
// interrupted either. Waiting for a connection of the pool still ends with ctx
// (database/sql), and so does a transaction, which database/sql rolls back once its
// context is done.
type stmtCache struct {
	sqliteConn
	byText map[string]*list.Element // of *cachedStmt
	lru    list.List                // most recently used first
}

// cachedStmt is one kept statement. reading is set while rows from it are open; dropped,
// when the cache let it go meanwhile, so its rows close it.
type cachedStmt struct {
	text             string
	stmt             driver.Stmt
	reading, dropped bool
}

func newStmtCache(conn driver.Conn) (*stmtCache, error) {
	c, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, errors.New("store: the sqlite driver's connection lacks an interface the statement cache needs")
	}
	return &stmtCache{sqliteConn: c, byText: make(map[string]*list.Element)}, nil
}

// unwatched checks ctx and returns it without its cancellation (see stmtCache).
func unwatched(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// BeginTx begins a transaction whose BEGIN and COMMIT run unwatched.
func (c *stmtCache) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	ctx, err := unwatched(ctx)
	if err != nil {
		return nil, err
	}
	return c.sqliteConn.BeginTx(ctx, opts)
}

// ExecContext runs query prepared, preparing it on first use.
func (c *stmtCache) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx, err := unwatched(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.get(ctx, query)
	if err != nil || cs == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	res, err := cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	if err != nil {
		c.drop(cs)
	}
	return res, err
}

// QueryContext runs query prepared, preparing it on first use; the statement is not shared
// until its rows are closed.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx, err := unwatched(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.get(ctx, query)
	if err != nil || cs == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.drop(cs)
		return nil, err
	}
	cs.reading = true
	return &cachedRows{Rows: rows, cs: cs}, nil
}

// get returns the kept statement for query, prepared now if it was not kept; nil when it
// is kept but busy, or cannot be prepared (the caller then runs query the uncached way, and
// meets the error there).
func (c *stmtCache) get(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.byText[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.reading {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{text: query, stmt: st}
	c.byText[query] = c.lru.PushFront(cs)
	for c.lru.Len() > maxCachedStmts {
		c.drop(c.lru.Back().Value.(*cachedStmt))
	}
	return cs, nil
}

// drop forgets cs and closes it, or leaves that to its rows if they are open.
func (c *stmtCache) drop(cs *cachedStmt) {
	if e, ok := c.byText[cs.text]; ok && e.Value == cs {
		c.lru.Remove(e)
		delete(c.byText, cs.text)
	}
	if cs.reading {
		cs.dropped = true
		return
	}
	cs.stmt.Close()
}

// Close closes the kept statements and the connection.
func (c *stmtCache) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		if cs := e.Value.(*cachedStmt); !cs.reading {
			cs.stmt.Close()
		}
	}
	clear(c.byText)
	c.lru.Init()
	return c.sqliteConn.Close()
}

// cachedRows are the rows of a kept statement; closing them frees the statement for its
// next run, or closes it if the cache let it go meanwhile.
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

// Close implements driver.Rows.
func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.cs.reading = false
	if r.cs.dropped {
		r.cs.stmt.Close()
	}
	return err
}

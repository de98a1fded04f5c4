package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/metrics"
	"testing"

	"modernc.org/sqlite"
)

// cachedDB is one in-memory SQLite connection through the statement cache, with a table t
// of the numbers 1 to 5.
func cachedDB(t *testing.T) (*sql.DB, *sql.Conn) {
	t.Helper()
	db := sql.OpenDB(sqliteConnector{dsn: "file::memory:", drv: &sqlite.Driver{}})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `CREATE TABLE t (n INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 5; n++ {
		if _, err := conn.ExecContext(ctx, `INSERT INTO t (n) VALUES (?)`, n); err != nil {
			t.Fatal(err)
		}
	}
	return db, conn
}

// cache is the statement cache under conn.
func cache(t *testing.T, conn *sql.Conn) *stmtCache {
	t.Helper()
	var c *stmtCache
	if err := conn.Raw(func(dc any) error { c = dc.(*stmtCache); return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}

func sumOf(t *testing.T, rows *sql.Rows) int {
	t.Helper()
	defer rows.Close()
	sum := 0
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestStmtCache(t *testing.T) {
	ctx := context.Background()
	const all = `SELECT n FROM t WHERE n >= ? ORDER BY n`
	cases := []struct {
		name string
		run  func(t *testing.T, conn *sql.Conn)
	}{
		{"a statement run again gives fresh answers", func(t *testing.T, conn *sql.Conn) {
			for want, from := range map[int]int{15: 1, 12: 3, 0: 6} {
				rows, err := conn.QueryContext(ctx, all, from)
				if err != nil {
					t.Fatal(err)
				}
				if got := sumOf(t, rows); got != want {
					t.Errorf("from %d: sum %d, want %d", from, got, want)
				}
			}
		}},
		{"the same query while its rows are open", func(t *testing.T, conn *sql.Conn) {
			outer, err := conn.QueryContext(ctx, all, 1)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for outer.Next() {
				var n int
				if err := outer.Scan(&n); err != nil {
					t.Fatal(err)
				}
				inner, err := conn.QueryContext(ctx, all, n)
				if err != nil {
					t.Fatal(err)
				}
				sum += sumOf(t, inner)
			}
			outer.Close()
			if want := 15 + 14 + 12 + 9 + 5; sum != want {
				t.Errorf("nested sums %d, want %d", sum, want)
			}
		}},
		{"a failed run leaves the statement usable", func(t *testing.T, conn *sql.Conn) {
			const ins = `INSERT INTO t (n) VALUES (?)`
			if _, err := conn.ExecContext(ctx, ins, 1); err == nil {
				t.Fatal("a duplicate key was inserted")
			}
			if _, err := conn.ExecContext(ctx, ins, 6); err != nil {
				t.Fatalf("the insert after a failed one: %v", err)
			}
		}},
		{"the cache stays bounded, and evicted rows still read", func(t *testing.T, conn *sql.Conn) {
			open, err := conn.QueryContext(ctx, all, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 * maxCachedStmts {
				var n int
				if err := conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d + n FROM t WHERE n = ?`, i), 1).Scan(&n); err != nil || n != i+1 {
					t.Fatalf("statement %d: %d, %v", i, n, err)
				}
			}
			if n := cache(t, conn).lru.Len(); n > maxCachedStmts {
				t.Errorf("%d statements kept, more than %d", n, maxCachedStmts)
			}
			if got := sumOf(t, open); got != 14 {
				t.Errorf("rows of an evicted statement sum to %d, want 14", got)
			}
		}},
		{"a context already done fails a statement and a transaction", func(t *testing.T, conn *sql.Conn) {
			done, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := conn.ExecContext(done, `INSERT INTO t (n) VALUES (6)`); !errors.Is(err, context.Canceled) {
				t.Errorf("insert: %v, want context.Canceled", err)
			}
			if _, err := conn.QueryContext(done, all, 1); !errors.Is(err, context.Canceled) {
				t.Errorf("query: %v, want context.Canceled", err)
			}
			if _, err := conn.BeginTx(done, nil); !errors.Is(err, context.Canceled) {
				t.Errorf("begin: %v, want context.Canceled", err)
			}
			rows, err := conn.QueryContext(ctx, all, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := sumOf(t, rows); got != 15 {
				t.Errorf("sum %d after the refused insert, want 15", got)
			}
		}},
		{"statements start no goroutine to watch their context", func(t *testing.T, conn *sql.Conn) {
			live, cancel := context.WithCancel(ctx)
			defer cancel()
			const txs = 100
			before := goroutinesCreated()
			for i := range txs {
				tx, err := conn.BeginTx(live, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(live, `INSERT INTO t (n) VALUES (?)`, 10+i); err != nil {
					t.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			// database/sql watches each transaction's context with a goroutine of its own;
			// modernc's connection would add one for each of BEGIN, the INSERT and COMMIT.
			if n := goroutinesCreated() - before; n > txs+10 {
				t.Errorf("%d goroutines started for %d transactions of three statements, want about %d", n, txs, txs)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, conn := cachedDB(t)
			tc.run(t, conn)
		})
	}
}

// goroutinesCreated is how many goroutines the process has started so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func BenchmarkStmtCacheExec(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			var db *sql.DB
			if cached {
				db = sql.OpenDB(sqliteConnector{dsn: "file::memory:", drv: &sqlite.Driver{}})
			} else {
				db = sql.OpenDB(plainConnector{dsn: "file::memory:", drv: &sqlite.Driver{}})
			}
			db.SetMaxOpenConns(1)
			defer db.Close()
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE TABLE s (id TEXT PRIMARY KEY, title TEXT, locale TEXT, phase TEXT, metadata TEXT, updated_at TEXT)`); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO s VALUES ('a', 't', 'en', 'strategy', '{}', '')`); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.ExecContext(ctx, `UPDATE s SET title = ?, locale = ?, phase = ?, metadata = ?, updated_at = ?
					WHERE id = ? AND phase IN ('strategy', 'stress_test')`, "t", "en", "strategy", `{"a":1}`, "now", "a"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// plainConnector is sqliteConnector without the cache, for the benchmark's baseline.
type plainConnector sqliteConnector

func (c plainConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c plainConnector) Driver() driver.Driver                        { return c.drv }

package store

import "database/sql"

// Pools returns the store's connection pools by name, for their statistics (package
// metrics): "main" takes every write (and, on PostgreSQL, every read); "read" is SQLite's
// separate read pool and is absent on PostgreSQL, where it would be the same pool.
func (s *Store) Pools() map[string]*sql.DB {
	pools := map[string]*sql.DB{"main": s.db.DB}
	if s.rdb != s.db {
		pools["read"] = s.rdb.DB
	}
	return pools
}

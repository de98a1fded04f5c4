package store

import "context"

// ForcePromptActive sets the active flag of prompt id without deactivating the others, so
// tests can check that the partial unique index itself refuses a second active version.
func (s *Store) ForcePromptActive(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE prompts SET active = ? WHERE id = ?`), true, id)
	return err
}

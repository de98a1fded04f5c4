-- A client_request_id names one turn per user, whatever the route it came through: a
-- mobile client that posts POST /api/v1/messages without a session twice (a retry after a
-- lost answer) must get its first message and session back, not a second session and a
-- second generation. The unique index moves from (session_id, client_request_id) to
-- (user_id, client_request_id); an id a user had reused in several sessions before stays
-- on its first turn only. Keep in step with ../sqlite/0007_client_request_per_user.sql.
UPDATE messages SET client_request_id = ''
WHERE role = 'user' AND client_request_id <> '' AND EXISTS (
    SELECT 1 FROM messages o
    WHERE o.user_id = messages.user_id AND o.role = 'user' AND o.client_request_id = messages.client_request_id
      AND (o.created_at, o.id) < (messages.created_at, messages.id));
DROP INDEX messages_client_request_id_idx;
CREATE UNIQUE INDEX messages_client_request_id_idx ON messages (user_id, client_request_id)
    WHERE role = 'user' AND client_request_id <> '';

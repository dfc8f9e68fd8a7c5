-- Version 3: every row proves its author, and every change is announced.
--
-- `author` is the PostgreSQL role that wrote the row: its default is current_user, and row-level security
-- lets a role insert only rows whose author is itself, and update or delete only its own rows, so no
-- writer can put another teammate's name on a row (user_name and machine stay: what the writer says of
-- itself, never shown as the author). The role that owns the tables bypasses these policies: it is the
-- administrator's (`live-memory team-setup`), never a teammate's login.
ALTER TABLE live_memory.facts ADD COLUMN author text;
ALTER TABLE live_memory.answers ADD COLUMN author text;
-- Rows written before: by the one role every server shared, which owns the tables.
UPDATE live_memory.facts SET author = pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'live_memory.facts'::regclass));
UPDATE live_memory.answers SET author = pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'live_memory.answers'::regclass));
ALTER TABLE live_memory.facts ALTER COLUMN author SET DEFAULT current_user, ALTER COLUMN author SET NOT NULL;
ALTER TABLE live_memory.answers ALTER COLUMN author SET DEFAULT current_user, ALTER COLUMN author SET NOT NULL;

-- One row per author: a teammate confirms (or answers again) only in rows of their own.
ALTER TABLE live_memory.facts DROP CONSTRAINT facts_one_row_per_fact;
ALTER TABLE live_memory.facts ADD CONSTRAINT facts_one_row_per_author UNIQUE (repo, author, text_sha256, sources_sha256);
ALTER TABLE live_memory.answers DROP CONSTRAINT answers_one_row_per_question;
ALTER TABLE live_memory.answers ADD CONSTRAINT answers_one_row_per_author
    UNIQUE (repo, author, question_sha256, sources_sha256);

ALTER TABLE live_memory.facts ENABLE ROW LEVEL SECURITY;
CREATE POLICY facts_read ON live_memory.facts FOR SELECT USING (true);
CREATE POLICY facts_insert_own ON live_memory.facts FOR INSERT WITH CHECK (author = current_user);
CREATE POLICY facts_update_own ON live_memory.facts FOR UPDATE
    USING (author = current_user) WITH CHECK (author = current_user);
CREATE POLICY facts_delete_own ON live_memory.facts FOR DELETE USING (author = current_user);

ALTER TABLE live_memory.answers ENABLE ROW LEVEL SECURITY;
CREATE POLICY answers_read ON live_memory.answers FOR SELECT USING (true);
CREATE POLICY answers_insert_own ON live_memory.answers FOR INSERT WITH CHECK (author = current_user);
CREATE POLICY answers_update_own ON live_memory.answers FOR UPDATE
    USING (author = current_user) WITH CHECK (author = current_user);
CREATE POLICY answers_delete_own ON live_memory.answers FOR DELETE USING (author = current_user);

-- Each row written is announced on the channel live_memory_changes once its transaction commits (the
-- table, the repository and the row's id), so a teammate's server fetches it within a second, whoever wrote
-- it and however (a server, psql). A listener that was away pulls everything when it comes back.
CREATE FUNCTION live_memory.announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(
        'live_memory_changes',
        json_build_object('table', TG_TABLE_NAME, 'repo', left(NEW.repo, 1024), 'id', NEW.id)::text
    );
    RETURN NULL;
END
$$;
CREATE TRIGGER facts_announce AFTER INSERT OR UPDATE ON live_memory.facts
    FOR EACH ROW EXECUTE FUNCTION live_memory.announce_change();
CREATE TRIGGER answers_announce AFTER INSERT OR UPDATE ON live_memory.answers
    FOR EACH ROW EXECUTE FUNCTION live_memory.announce_change();

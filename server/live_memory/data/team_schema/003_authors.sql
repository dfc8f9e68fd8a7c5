-- Version 3: every row proves its author, and every change is announced.
--
-- `author` is the PostgreSQL role that wrote the row: its default is current_user, and row-level security
-- lets a role insert only rows whose author is itself, and update or delete only its own rows, so no
-- writer can put another teammate's name on a row (user_name and machine stay: what the writer says of
-- itself, never shown as the author). The role that owns the tables bypasses these policies: it is the
-- administrator's (`live-memory team-setup`), never a teammate's login. The same steps for both tables, in a loop.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'answers'] LOOP
        EXECUTE format('ALTER TABLE live_memory.%I ADD COLUMN author text', t);
        -- Rows written before: by the one role every server shared, which owns the tables.
        EXECUTE format(
            'UPDATE live_memory.%I SET author = pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = %L::regclass))',
            t, 'live_memory.' || t
        );
        EXECUTE format(
            'ALTER TABLE live_memory.%I ALTER COLUMN author SET DEFAULT current_user, ALTER COLUMN author SET NOT NULL', t
        );
        EXECUTE format('ALTER TABLE live_memory.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY %I ON live_memory.%I FOR SELECT USING (true)', t || '_read', t);
        EXECUTE format(
            'CREATE POLICY %I ON live_memory.%I FOR INSERT WITH CHECK (author = current_user)', t || '_insert_own', t
        );
        EXECUTE format(
            'CREATE POLICY %I ON live_memory.%I FOR UPDATE USING (author = current_user) WITH CHECK (author = current_user)',
            t || '_update_own', t
        );
        EXECUTE format('CREATE POLICY %I ON live_memory.%I FOR DELETE USING (author = current_user)', t || '_delete_own', t);
    END LOOP;
END
$$;

-- One row per author: a teammate confirms (or answers again) only in rows of their own.
ALTER TABLE live_memory.facts DROP CONSTRAINT facts_one_row_per_fact;
ALTER TABLE live_memory.facts ADD CONSTRAINT facts_one_row_per_author UNIQUE (repo, author, text_sha256, sources_sha256);
ALTER TABLE live_memory.answers DROP CONSTRAINT answers_one_row_per_question;
ALTER TABLE live_memory.answers ADD CONSTRAINT answers_one_row_per_author
    UNIQUE (repo, author, question_sha256, sources_sha256);

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

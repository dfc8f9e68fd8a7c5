-- Version 1: the facts a team's servers share. One row per repository + fact text + grounds (the files it
-- rests on, each with its SHA-256 when learned): the same fact learned again on the same bytes confirms the
-- row; learned on other bytes, or worded otherwise, it is a row of its own (contradictions are kept, and
-- the newest confirmation is read first).
CREATE TABLE live_memory.facts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo text NOT NULL,                 -- the repository's identity (the same on every clone)
    text text NOT NULL,
    sources jsonb NOT NULL,             -- {path: sha256 hex}
    text_sha256 bytea NOT NULL,         -- sha256 of text as UTF-8
    sources_sha256 bytea NOT NULL,      -- sha256 of sources::text (jsonb's canonical form, keys sorted)
    machine text NOT NULL,              -- who first learned it
    user_name text NOT NULL,
    learned_at timestamptz NOT NULL,    -- first learned, by anyone
    confirmed_at timestamptz NOT NULL,  -- last learned again or confirmed, by anyone
    CONSTRAINT facts_one_row_per_fact UNIQUE (repo, text_sha256, sources_sha256)
);

-- A pull reads one repository's facts, newest confirmation first, often only those since the last pull.
CREATE INDEX facts_by_confirmation ON live_memory.facts (repo, confirmed_at DESC);

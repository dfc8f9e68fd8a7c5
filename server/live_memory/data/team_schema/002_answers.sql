-- Version 2: questions and the answers given, shared only by servers with team_share_answers on. One row per
-- repository + question (case and whitespace folded) + grounds (the files the answer rests on, each with its
-- SHA-256 then): the same question answered again on the same bytes confirms the row, and its answer is the
-- latest one given.
CREATE TABLE live_memory.answers (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo text NOT NULL,
    question text NOT NULL,
    answer text NOT NULL,
    sources jsonb NOT NULL,             -- {path: sha256 hex}
    question_sha256 bytea NOT NULL,     -- sha256 of the folded question as UTF-8
    sources_sha256 bytea NOT NULL,      -- sha256 of sources::text (jsonb's canonical form, keys sorted)
    machine text NOT NULL,              -- who gave the answer kept
    user_name text NOT NULL,
    learned_at timestamptz NOT NULL,
    confirmed_at timestamptz NOT NULL,
    CONSTRAINT answers_one_row_per_question UNIQUE (repo, question_sha256, sources_sha256)
);

CREATE INDEX answers_by_confirmation ON live_memory.answers (repo, confirmed_at DESC);

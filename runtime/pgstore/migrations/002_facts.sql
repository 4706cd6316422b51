-- Migration 2: the long-term memory store (package runtime/longterm): the
-- facts of principals, with their own retention.

-- One row per principal with facts: key is longterm.PrincipalKey (a hex
-- SHA-256 of the name), n the number of facts.
CREATE TABLE chatgen_fact_principals (
  key        text PRIMARY KEY,
  revision   bigint NOT NULL,
  written_at timestamptz NOT NULL,
  n          integer NOT NULL
);
CREATE INDEX chatgen_fact_principals_written ON chatgen_fact_principals (written_at);

CREATE TABLE chatgen_facts (
  key     text NOT NULL REFERENCES chatgen_fact_principals (key) ON DELETE CASCADE,
  id      text NOT NULL,
  text    text NOT NULL,
  created timestamptz NOT NULL,
  updated timestamptz NOT NULL,
  source  text NOT NULL DEFAULT '',
  PRIMARY KEY (key, id)
);

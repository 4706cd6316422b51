-- Migration 1: the tables and functions of pgstore.

CREATE TABLE chatgen_conversations (
  id         bytea PRIMARY KEY,
  version    bigint NOT NULL,
  state      bytea NOT NULL,                 -- the state as JSON (durable's format)
  memory_ids bytea[] NOT NULL DEFAULT '{}',   -- the memories the state lists
  expires_at timestamptz                     -- NULL: never
);
CREATE INDEX chatgen_conversations_expiry ON chatgen_conversations (expires_at)
  WHERE expires_at IS NOT NULL;

CREATE TABLE chatgen_leases (
  id         bytea PRIMARY KEY,
  owner      bytea NOT NULL,
  token      bigint NOT NULL,
  expires_at timestamptz NOT NULL
);

-- Fencing tokens: never reused, whatever is deleted.
CREATE SEQUENCE chatgen_fence;

CREATE TABLE chatgen_messages (
  memory_id bytea NOT NULL,
  seq       bigint NOT NULL,
  message   bytea NOT NULL,                  -- one message as JSON
  PRIMARY KEY (memory_id, seq)
);

-- Errors: CG001 lease lost; CG002 version conflict (DETAIL: the stored
-- version, 0 for none); CG003 a memory holds other than what an edit
-- needs (DETAIL: its length).

-- chatgen_save_begin checks the lease and the version of a save, and locks
-- the conversation for it; an expired conversation is deleted first.
CREATE FUNCTION chatgen_save_begin(p_id bytea, p_version bigint, p_owner bytea, p_token bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  l chatgen_leases%ROWTYPE;
  c chatgen_conversations%ROWTYPE;
  stored bigint := 0;
BEGIN
  SELECT * INTO l FROM chatgen_leases WHERE id = p_id FOR UPDATE;
  IF NOT FOUND OR p_token = 0 OR l.owner <> p_owner OR l.token <> p_token THEN
    RAISE EXCEPTION 'lease lost' USING ERRCODE = 'CG001';
  END IF;
  SELECT * INTO c FROM chatgen_conversations WHERE id = p_id FOR UPDATE;
  IF FOUND THEN
    IF c.expires_at <= now() THEN
      DELETE FROM chatgen_messages WHERE memory_id = ANY (c.memory_ids);
      DELETE FROM chatgen_conversations WHERE id = p_id;
    ELSE
      stored := c.version;
    END IF;
  END IF;
  IF stored <> p_version THEN
    RAISE EXCEPTION 'version conflict' USING ERRCODE = 'CG002', DETAIL = stored::text;
  END IF;
END $$;

-- chatgen_save_end deletes the memories the state no longer lists and
-- writes the state.
CREATE FUNCTION chatgen_save_end(p_id bytea, p_version bigint, p_state bytea, p_mids bytea[], p_ttl_us bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM chatgen_messages WHERE memory_id IN (
    SELECT unnest(memory_ids) FROM chatgen_conversations WHERE id = p_id
    EXCEPT SELECT unnest(p_mids));
  INSERT INTO chatgen_conversations AS c (id, version, state, memory_ids, expires_at)
  VALUES (p_id, p_version, p_state, p_mids,
          CASE WHEN p_ttl_us > 0 THEN now() + p_ttl_us * interval '1 microsecond' END)
  ON CONFLICT (id) DO UPDATE SET version = excluded.version, state = excluded.state,
    memory_ids = excluded.memory_ids, expires_at = excluded.expires_at;
END $$;

-- chatgen_mem_replace replaces the messages of a memory.
CREATE FUNCTION chatgen_mem_replace(p_id bytea, p_elems bytea[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('chatgen_messages:' || encode(p_id, 'hex'), 0));
  DELETE FROM chatgen_messages WHERE memory_id = p_id;
  INSERT INTO chatgen_messages (memory_id, seq, message)
    SELECT p_id, t.i, t.e FROM unnest(p_elems) WITH ORDINALITY AS t(e, i);
END $$;

-- chatgen_mem_edit drops p_drop messages from the front of a memory, puts
-- p_head in front and appends p_tail. It fails (CG003) unless the memory
-- holds p_base messages (p_base >= 0) or at least p_drop (p_base < 0).
CREATE FUNCTION chatgen_mem_edit(p_id bytea, p_base int, p_drop int, p_head bytea[], p_tail bytea[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  n int;
  lo bigint;
  hi bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('chatgen_messages:' || encode(p_id, 'hex'), 0));
  SELECT count(*), min(seq), max(seq) INTO n, lo, hi FROM chatgen_messages WHERE memory_id = p_id;
  IF (p_base >= 0 AND n <> p_base) OR n < p_drop THEN
    RAISE EXCEPTION 'memory changed' USING ERRCODE = 'CG003', DETAIL = n::text;
  END IF;
  IF p_drop > 0 THEN
    DELETE FROM chatgen_messages WHERE memory_id = p_id AND seq IN (
      SELECT seq FROM chatgen_messages WHERE memory_id = p_id ORDER BY seq LIMIT p_drop);
    SELECT min(seq), max(seq) INTO lo, hi FROM chatgen_messages WHERE memory_id = p_id;
  END IF;
  lo := coalesce(lo, 1);
  hi := coalesce(hi, 0);
  INSERT INTO chatgen_messages (memory_id, seq, message)
    SELECT p_id, lo - cardinality(p_head) + t.i - 1, t.e FROM unnest(p_head) WITH ORDINALITY AS t(e, i);
  INSERT INTO chatgen_messages (memory_id, seq, message)
    SELECT p_id, hi + t.i, t.e FROM unnest(p_tail) WITH ORDINALITY AS t(e, i);
END $$;

-- chatgen_acquire grants the lease on a conversation, or reports its
-- holder: o_granted false, o_holder and o_expires the current lease.
CREATE FUNCTION chatgen_acquire(p_id bytea, p_owner bytea, p_ttl_us bigint,
  OUT o_granted boolean, OUT o_token bigint, OUT o_holder bytea, OUT o_expires timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  l chatgen_leases%ROWTYPE;
BEGIN
  INSERT INTO chatgen_leases (id, owner, token, expires_at) VALUES (p_id, '\x', 0, '-infinity')
    ON CONFLICT (id) DO NOTHING;
  SELECT * INTO l FROM chatgen_leases WHERE id = p_id FOR UPDATE;
  IF l.owner = p_owner AND l.token > 0 THEN
    o_token := l.token;
  ELSIF length(l.owner) > 0 AND l.expires_at > clock_timestamp() THEN
    o_granted := false; o_token := 0; o_holder := l.owner; o_expires := l.expires_at;
    RETURN;
  ELSE
    o_token := nextval('chatgen_fence');
  END IF;
  o_granted := true;
  o_holder := p_owner;
  o_expires := clock_timestamp() + p_ttl_us * interval '1 microsecond';
  UPDATE chatgen_leases SET owner = p_owner, token = o_token, expires_at = o_expires WHERE id = p_id;
END $$;

-- chatgen_delete deletes a conversation, its memories and its lease.
CREATE FUNCTION chatgen_delete(p_id bytea)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  -- Locks in the order a save takes them (the lease, the conversation,
  -- then its messages), so that neither a save nor a sweep (which skips
  -- locked conversations) deadlocks with a delete.
  PERFORM 1 FROM chatgen_leases WHERE id = p_id FOR UPDATE;
  PERFORM 1 FROM chatgen_conversations WHERE id = p_id FOR UPDATE;
  DELETE FROM chatgen_messages WHERE memory_id IN (
    SELECT unnest(memory_ids) FROM chatgen_conversations WHERE id = p_id);
  DELETE FROM chatgen_conversations WHERE id = p_id;
  DELETE FROM chatgen_leases WHERE id = p_id;
END $$;

-- chatgen_sweep deletes up to p_limit expired conversations with their
-- memories and their expired leases, and returns how many it deleted. When
-- it deleted fewer, it also deletes the leases of conversations that do
-- not exist and that expired longer than p_grace_us ago.
CREATE FUNCTION chatgen_sweep(p_limit int, p_grace_us bigint)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  ids bytea[];
BEGIN
  SELECT coalesce(array_agg(id), '{}') INTO ids FROM (
    SELECT id FROM chatgen_conversations WHERE expires_at <= now()
    ORDER BY expires_at LIMIT p_limit FOR UPDATE SKIP LOCKED) s;
  DELETE FROM chatgen_messages WHERE memory_id IN (
    SELECT unnest(memory_ids) FROM chatgen_conversations WHERE id = ANY (ids));
  DELETE FROM chatgen_conversations WHERE id = ANY (ids);
  -- A lease a save holds is skipped, not waited for (a save locks the
  -- lease before the conversation, the sweep the other way round).
  DELETE FROM chatgen_leases WHERE id IN (
    SELECT id FROM chatgen_leases WHERE id = ANY (ids) AND expires_at <= now()
    FOR UPDATE SKIP LOCKED);
  IF cardinality(ids) < p_limit THEN
    DELETE FROM chatgen_leases WHERE id IN (
      SELECT l.id FROM chatgen_leases l WHERE l.expires_at < now() - p_grace_us * interval '1 microsecond'
        AND NOT EXISTS (SELECT 1 FROM chatgen_conversations c WHERE c.id = l.id)
      FOR UPDATE SKIP LOCKED);
  END IF;
  RETURN cardinality(ids);
END $$;

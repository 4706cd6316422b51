package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chatscopes/chatgen/runtime/longterm"
)

// This file holds the long-term memory store (package runtime/longterm),
// in the tables chatgen_fact_principals (a row per principal: its
// revision, the time of its last write, its number of facts) and
// chatgen_facts (schema version 2). A principal's facts have their own
// retention (FactsOptions.Retention), not the conversations' TTL.

// FactsOptions configures the long-term memory store of a [Store]; nil
// and the zero value mean the default caps and no retention.
type FactsOptions struct {
	// Limits are the caps of each principal's facts.
	Limits longterm.Limits
	// Retention, when positive, deletes a principal's facts that long
	// after the last write to them (reads no longer see them at once;
	// the rows go on the principal's next write, or by [Facts.Sweep]); 0
	// keeps them until they are deleted.
	Retention time.Duration
}

// Facts is a [longterm.Store] in the database of a [Store]: Revision,
// Get and List are one statement each, writes one transaction.
type Facts struct {
	pool      *pgxpool.Pool
	limits    longterm.Limits
	retention int64 // microseconds; 0 for none
}

var _ longterm.Store = (*Facts)(nil)

// Facts returns the long-term memory store next to s's conversations.
func (s *Store) Facts(opts *FactsOptions) (*Facts, error) {
	if opts == nil {
		opts = &FactsOptions{}
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("pgstore: negative fact retention %v", opts.Retention)
	}
	return &Facts{pool: s.pool, limits: opts.Limits.WithDefaults(), retention: opts.Retention.Microseconds()}, nil
}

// alive is the SQL condition that a principal row p is within retention
// ($2: the retention in microseconds).
const alive = `($2::bigint = 0 OR p.written_at > now() - $2::bigint * interval '1 microsecond')`

// Revision implements [longterm.Store.Revision]: one statement.
func (f *Facts) Revision(ctx context.Context, principal string) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	var rev int64
	err := f.pool.QueryRow(ctx, `SELECT p.revision FROM chatgen_fact_principals p WHERE p.key = $1 AND `+alive,
		longterm.PrincipalKey(principal), f.retention).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: facts: %w", err)
	}
	return longterm.Revision(rev), nil
}

// Get implements [longterm.Store.Get].
func (f *Facts) Get(ctx context.Context, principal, id string) (longterm.Fact, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return longterm.Fact{}, err
	}
	fact := longterm.Fact{ID: id}
	err := f.pool.QueryRow(ctx, `SELECT f.text, f.created, f.updated, f.source
		FROM chatgen_fact_principals p JOIN chatgen_facts f ON f.key = p.key
		WHERE p.key = $1 AND f.id = $3 AND `+alive,
		longterm.PrincipalKey(principal), f.retention, id).Scan(&fact.Text, &fact.Created, &fact.Updated, &fact.Source)
	if errors.Is(err, pgx.ErrNoRows) {
		return longterm.Fact{}, longterm.ErrNotFound
	}
	if err != nil {
		return longterm.Fact{}, fmt.Errorf("pgstore: facts: %w", err)
	}
	fact.Created, fact.Updated = fact.Created.UTC(), fact.Updated.UTC()
	return fact, nil
}

// List implements [longterm.Store.List]: one statement.
func (f *Facts) List(ctx context.Context, principal string) ([]longterm.Fact, longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return nil, 0, err
	}
	rows, err := f.pool.Query(ctx, `SELECT p.revision, f.id, f.text, f.created, f.updated, f.source
		FROM chatgen_fact_principals p JOIN chatgen_facts f ON f.key = p.key
		WHERE p.key = $1 AND `+alive+` ORDER BY f.created, f.id`,
		longterm.PrincipalKey(principal), f.retention)
	if err != nil {
		return nil, 0, fmt.Errorf("pgstore: facts: %w", err)
	}
	defer rows.Close()
	var (
		out []longterm.Fact
		rev int64
	)
	for rows.Next() {
		var fact longterm.Fact
		if err := rows.Scan(&rev, &fact.ID, &fact.Text, &fact.Created, &fact.Updated, &fact.Source); err != nil {
			return nil, 0, fmt.Errorf("pgstore: facts: %w", err)
		}
		fact.Created, fact.Updated = fact.Created.UTC(), fact.Updated.UTC()
		out = append(out, fact)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("pgstore: facts: %w", err)
	}
	longterm.SortFacts(out) // the same order, by Go's comparison of ids
	return out, longterm.Revision(rev), nil
}

// head is a principal's row, locked in a write's transaction.
type head struct {
	key string
	rev int64
	n   int
}

// write runs fn in a transaction holding principal's row (made when
// missing; emptied first when past retention). fn returns the change in
// the number of facts and whether anything changed; a changed principal
// gets the next revision, one left without facts is deleted.
func (f *Facts) write(ctx context.Context, principal string, fn func(tx pgx.Tx, h head) (int, bool, error)) (longterm.Revision, error) {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return 0, err
	}
	key := longterm.PrincipalKey(principal)
	var rev int64
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO chatgen_fact_principals (key, revision, written_at, n) VALUES ($1, 0, now(), 0)
			ON CONFLICT (key) DO NOTHING`, key); err != nil {
			return err
		}
		h := head{key: key}
		var fresh bool
		if err := tx.QueryRow(ctx, `SELECT p.revision, p.n, `+alive+` FROM chatgen_fact_principals p WHERE p.key = $1 FOR UPDATE`,
			key, f.retention).Scan(&h.rev, &h.n, &fresh); err != nil {
			return err
		}
		if !fresh {
			if _, err := tx.Exec(ctx, `DELETE FROM chatgen_facts WHERE key = $1`, key); err != nil {
				return err
			}
			h.rev, h.n = 0, 0
		}
		delta, changed, err := fn(tx, h)
		if err != nil {
			return err
		}
		switch {
		case !changed && h.rev == 0:
			rev = 0
			_, err = tx.Exec(ctx, `DELETE FROM chatgen_fact_principals WHERE key = $1`, key)
		case !changed:
			rev = h.rev
		case h.n+delta == 0:
			rev = 0
			_, err = tx.Exec(ctx, `DELETE FROM chatgen_fact_principals WHERE key = $1`, key)
		default:
			rev = int64(longterm.Revision(h.rev).Next())
			_, err = tx.Exec(ctx, `UPDATE chatgen_fact_principals SET revision = $2, n = $3, written_at = now() WHERE key = $1`,
				key, rev, h.n+delta)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, longterm.ErrExists) || errors.Is(err, longterm.ErrTooManyFacts) || errors.Is(err, longterm.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("pgstore: facts: %w", err)
	}
	return longterm.Revision(rev), nil
}

// Put implements [longterm.Store.Put]: one transaction.
func (f *Facts) Put(ctx context.Context, principal string, facts ...longterm.Fact) (longterm.Revision, error) {
	stamped, err := f.limits.Stamp(time.Now(), facts)
	if err != nil {
		return 0, err
	}
	return f.write(ctx, principal, func(tx pgx.Tx, h head) (int, bool, error) {
		if len(stamped) == 0 {
			return 0, false, nil
		}
		if h.n+len(stamped) > f.limits.MaxFacts {
			return 0, false, longterm.ErrTooManyFacts
		}
		ids := make([]string, len(stamped))
		texts := make([]string, len(stamped))
		created := make([]time.Time, len(stamped))
		updated := make([]time.Time, len(stamped))
		sources := make([]string, len(stamped))
		for i, fact := range stamped {
			ids[i], texts[i], created[i], updated[i], sources[i] = fact.ID, fact.Text, fact.Created, fact.Updated, fact.Source
		}
		tag, err := tx.Exec(ctx, `INSERT INTO chatgen_facts (key, id, text, created, updated, source)
			SELECT $1, * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[])
			ON CONFLICT (key, id) DO NOTHING`, h.key, ids, texts, created, updated, sources)
		if err != nil {
			return 0, false, err
		}
		if int(tag.RowsAffected()) != len(stamped) {
			return 0, false, longterm.ErrExists
		}
		return len(stamped), true, nil
	})
}

// Update implements [longterm.Store.Update]: one transaction.
func (f *Facts) Update(ctx context.Context, principal string, fact longterm.Fact) (longterm.Revision, error) {
	if err := f.limits.CheckFact(fact); err != nil {
		return 0, err
	}
	updated := fact.Updated
	if updated.IsZero() {
		updated = time.Now()
	}
	updated = longterm.Time(updated)
	return f.write(ctx, principal, func(tx pgx.Tx, h head) (int, bool, error) {
		tag, err := tx.Exec(ctx, `UPDATE chatgen_facts SET text = $3, source = $4, updated = $5 WHERE key = $1 AND id = $2`,
			h.key, fact.ID, fact.Text, fact.Source, updated)
		if err != nil {
			return 0, false, err
		}
		if tag.RowsAffected() == 0 {
			return 0, false, longterm.ErrNotFound
		}
		return 0, true, nil
	})
}

// Delete implements [longterm.Store.Delete]: one transaction.
func (f *Facts) Delete(ctx context.Context, principal string, ids ...string) (longterm.Revision, error) {
	return f.write(ctx, principal, func(tx pgx.Tx, h head) (int, bool, error) {
		if len(ids) == 0 || h.n == 0 {
			return 0, false, nil
		}
		tag, err := tx.Exec(ctx, `DELETE FROM chatgen_facts WHERE key = $1 AND id = ANY ($2::text[])`, h.key, ids)
		if err != nil {
			return 0, false, err
		}
		n := int(tag.RowsAffected())
		return -n, n > 0, nil
	})
}

// DeleteAll implements [longterm.Store.DeleteAll]: one statement (the
// facts go with their principal's row).
func (f *Facts) DeleteAll(ctx context.Context, principal string) error {
	if err := longterm.CheckPrincipal(principal); err != nil {
		return err
	}
	if _, err := f.pool.Exec(ctx, `DELETE FROM chatgen_fact_principals WHERE key = $1`, longterm.PrincipalKey(principal)); err != nil {
		return fmt.Errorf("pgstore: facts: %w", err)
	}
	return nil
}

// Sweep deletes the facts of every principal past its retention and
// returns how many principals it deleted (0 without a retention).
func (f *Facts) Sweep(ctx context.Context) (int, error) {
	if f.retention == 0 {
		return 0, nil
	}
	tag, err := f.pool.Exec(ctx, `DELETE FROM chatgen_fact_principals WHERE written_at <= now() - $1::bigint * interval '1 microsecond'`, f.retention)
	if err != nil {
		return 0, fmt.Errorf("pgstore: facts: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

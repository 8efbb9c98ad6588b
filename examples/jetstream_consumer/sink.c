/*
 * sink.c: the sink transactions, one per page.
 *
 * With the guard (the normal mode), one transaction holds:
 *
 *   BEGIN;
 *   WITH a AS (SELECT sog.apply_run_page(checkpoint, generation, first sequence,
 *                                        the page's digests back to back,
 *                                        next page's last sequence, its buffer
 *                                        hash, its count,   -- pipelined form only
 *                                        old_consumer, our_consumer) AS skip),
 *        ins AS (INSERT INTO sink ... SELECT ... FROM a, unnest(bodies)
 *                WITH ORDINALITY u(body, i)
 *                WHERE u.i > a.skip     -- the leading a.skip were applied before
 *                RETURNING 1)
 *   SELECT written, skip;
 *   COMMIT;
 *
 * so the receipts, the applied position, the provider token (the JetStream
 * consumer's name), the sink rows and the next page's read boundary commit
 * or roll back together; sog.apply_run_page is sog.apply_run, the next
 * page's sog.note_read and sog.commit_page in one call.  JetStream stream
 * sequences are dense, so it takes the page as its first sequence and one
 * bytea of digests (no positions array, no boolean[] answer).  The sink table is
 * (stream text, seq bigint, gen bigint, body bytea); gen is the writer's
 * generation, kept so an outside checker can prove fencing.
 *
 * The next page's note_read comes after the apply, so that it records the
 * boundary (end of this page, end of the next page]: a crash after this
 * COMMIT leaves it durable (the successor re-fetches and verifies the next
 * page), and a crash before it rolls the note back with this page, leaving
 * this page's boundary (noted by the previous page's transaction, or alone)
 * in force.
 *
 * A page re-read by a recovery runs sog.recovery_event per event instead,
 * and writes the rows it answers 'apply' (sink_recovery_page); it is never
 * pipelined.
 *
 * --offsets-only replaces the guard by what most consumers do: the same
 * INSERT and a plain UPDATE of an offsets table, in one transaction.  It is
 * the baseline of the throughput comparison, not a safe consumer: it has no
 * receipts, no fencing and no gap detection.
 */
#include "consumer.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable string, for the array parameters. */
typedef struct Str
{
	char	   *s;
	size_t		len;
	size_t		cap;
} Str;

static void
str_add(Str *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		b->cap = (b->len + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		if (b->s == NULL)
		{
			perror("realloc");
			exit(2);
		}
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* Append a bytea array element: "\\x<hex>" inside an array literal. */
static void
str_add_bytea(Str *b, const uint8_t *p, size_t n)
{
	char		small[2 * 64 + 1];
	char	   *hex = n <= 64 ? small : malloc(2 * n + 1);

	to_hex(p, n, hex);
	str_add(b, "\"\\\\x", 4);
	str_add(b, hex, 2 * n);
	str_add(b, "\"", 1);
	if (hex != small)
		free(hex);
}

/*
 * The page as literals: bigint[] sequences, bytea[] bodies, and the
 * digests back to back in one bytea (apply_run's argument).
 */
typedef struct PageArrays
{
	Str			seqs;
	Str			bodies;
	Str			digests;
} PageArrays;

/* Build them from the records for which keep[i] (NULL: all). */
static void
page_arrays(const Page *p, const bool *keep, PageArrays *a)
{
	int			i;
	bool		first = true;

	memset(a, 0, sizeof(*a));
	str_add(&a->seqs, "{", 1);
	str_add(&a->bodies, "{", 1);
	str_add(&a->digests, "\\x", 2);
	for (i = 0; i < p->n; i++)
	{
		char		num[24];
		char		hex[2 * 32 + 1];

		if (keep && !keep[i])
			continue;
		if (!first)
		{
			str_add(&a->seqs, ",", 1);
			str_add(&a->bodies, ",", 1);
		}
		first = false;
		snprintf(num, sizeof(num), "%llu", (unsigned long long) p->rec[i].seq);
		str_add(&a->seqs, num, strlen(num));
		str_add_bytea(&a->bodies, (const uint8_t *) p->rec[i].data, p->rec[i].len);
		to_hex(p->rec[i].digest, 32, hex);
		str_add(&a->digests, hex, 64);
	}
	str_add(&a->seqs, "}", 1);
	str_add(&a->bodies, "}", 1);
}

static void
page_arrays_free(PageArrays *a)
{
	free(a->seqs.s);
	free(a->bodies.s);
	free(a->digests.s);
}

/* ROLLBACK after a failed statement, unless the connection is gone. */
static bool
fail_txn(Worker *w)
{
	if (PQstatus(w->pg) == CONNECTION_OK)
		PQclear(PQexec(w->pg, "ROLLBACK"));
	return false;
}

/*
 * The page call and INSERT of the guard mode, for a sink table name: $8-$10
 * the next page's note (NULL: none), $11 and $12 the tokens.
 */
static char *
apply_sql(Worker *w)
{
	static char sql[2048];
	char	   *t = PQescapeIdentifier(w->pg, w->cfg.sink_table,
									   strlen(w->cfg.sink_table));

	snprintf(sql, sizeof(sql),
			 "WITH a AS ("
			 "  SELECT sog.apply_run_page($1, $2, $3, $4::bytea, $8::sog.position, $9, $10::bigint, $11, $12) AS skip"
			 "), ins AS ("
			 "  INSERT INTO %s (stream, seq, gen, body)"
			 "  SELECT $6::text, $3::bigint + u.i - 1, $2, u.body"
			 "    FROM a, unnest($5::bytea[]) WITH ORDINALITY AS u(body, i)"
			 "   WHERE u.i > a.skip OR $7::boolean"	/* $7: --ignore-apply-answer */
			 "  RETURNING 1"
			 ") SELECT (SELECT count(*) FROM ins), (SELECT skip FROM a)", t);
	PQfreemem(t);
	return sql;
}

/*
 * One sink transaction for a page read from our consumer (contiguous, from
 * the applied position + 1 on).  next: the page fetched after it, whose
 * read boundary this transaction notes (pipelined form), or NULL.
 *
 * apply_run raises 55000 only for a run in which a new event precedes one
 * a recovery attempt applied; this consumer's recovery pages start at the
 * applied position, so its receipts above it are contiguous and every page
 * meets them first.  Should it happen, the worker stops (a bug) rather than
 * resynchronizing in a loop.
 */
bool
sink_apply_page(Worker *w, const Page *p, const Page *next)
{
	char		cp[24], gen[24], first[24];
	PageArrays	a;
	PGresult   *r;
	bool		ok;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	snprintf(first, sizeof(first), "%llu", (unsigned long long) p->rec[0].seq);
	page_arrays(p, NULL, &a);
	{
		char		cur[24], cnt[24], hash[65];
		bool		carry = next != NULL && next->n > 0;
		const char *ap[12] = {cp, gen, first, a.digests.s, a.bodies.s,
			w->cfg.stream, w->cfg.ignore_apply_answer ? "true" : "false",
			carry ? cur : NULL, carry ? hash : NULL, carry ? cnt : NULL,
		w->has_token ? w->token : NULL, w->cons};

		if (carry)				/* the next page: (end of this page, its end] */
		{
			snprintf(cur, sizeof(cur), "%llu", (unsigned long long) page_last(next));
			snprintf(cnt, sizeof(cnt), "%d", page_hash(next, page_last(p), hash));
		}
		ok = pg_exec(w, "begin", NULL, "BEGIN", 0, NULL) &&
			pg_exec(w, "apply_run_page", &r, apply_sql(w), 12, ap);
		if (ok)
		{
			w->n_applied += strtoull(PQgetvalue(r, 0, 0), NULL, 10);
			w->n_duplicate += strtoull(PQgetvalue(r, 0, 1), NULL, 10);
			PQclear(r);
		}
		else if (strcmp(w->err.sqlstate, "55000") == 0)
			w->err.action = ACT_BUG;
		if (ok)
		{
			phase(w, "in_sink_txn");
			ok = pg_exec(w, "commit", NULL, "COMMIT", 0, NULL);
		}
	}
	page_arrays_free(&a);
	if (!ok)
		return fail_txn(w);
	w->applied = page_last(p);
	snprintf(w->token, sizeof(w->token), "%s", w->cons);
	w->has_token = true;
	return true;
}

/* recovery_event for each record; keep[i] says "write its effect". */
static bool
recovery_events(Worker *w, int64_t attempt, const Page *p, bool *keep,
				char *stopped, size_t stopped_len)
{
	char		id[24], pos[24], dig[2 * 32 + 3];
	const char *ep[3] = {id, pos, dig};
	int			i;

	snprintf(id, sizeof(id), "%lld", (long long) attempt);
	for (i = 0; i < p->n && stopped[0] == '\0'; i++)
	{
		PGresult   *r;
		const char *v;

		snprintf(pos, sizeof(pos), "%llu", (unsigned long long) p->rec[i].seq);
		dig[0] = '\\';
		dig[1] = 'x';
		to_hex(p->rec[i].digest, 32, dig + 2);
		if (!pg_exec(w, "recovery_event", &r,
					 "SELECT sog.recovery_event($1, $2, $3)", 3, ep))
			return false;
		v = PQgetvalue(r, 0, 0);
		keep[i] = strcmp(v, "apply") == 0 || w->cfg.ignore_apply_answer;
		if (strcmp(v, "verified") != 0 && strcmp(v, "apply") != 0 &&
			strcmp(v, "duplicate") != 0)
			snprintf(stopped, stopped_len, "%s", v);	/* attempt stopped */
		if (strcmp(v, "apply") == 0)
			w->n_applied++;
		else
			w->n_duplicate++;
		PQclear(r);
	}
	return true;
}

/*
 * The sink transaction of a recovery page.  A stop (mismatch, unverifiable,
 * coverage_gap) is committed too: its gap row must persist.
 */
bool
sink_recovery_page(Worker *w, int64_t attempt, const Page *p,
				   char *stopped, size_t stopped_len)
{
	bool	   *keep = calloc(p->n ? p->n : 1, sizeof(bool));
	char		gen[24];
	bool		ok;

	stopped[0] = '\0';
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	ok = pg_exec(w, "begin", NULL, "BEGIN", 0, NULL) &&
		recovery_events(w, attempt, p, keep, stopped, stopped_len);
	if (ok && stopped[0] == '\0')
	{
		PageArrays	a;
		char		sql[512];
		char	   *t = PQescapeIdentifier(w->pg, w->cfg.sink_table,
										   strlen(w->cfg.sink_table));
		const char *ip[4] = {w->cfg.stream, gen, NULL, NULL};

		page_arrays(p, keep, &a);
		ip[2] = a.seqs.s;
		ip[3] = a.bodies.s;
		snprintf(sql, sizeof(sql),
				 "INSERT INTO %s (stream, seq, gen, body) "
				 "SELECT $1::text, s, $2::bigint, b FROM unnest($3::bigint[], $4::bytea[]) AS u(s, b)", t);
		PQfreemem(t);
		ok = pg_exec(w, "recovery_insert", NULL, sql, 4, ip);
		page_arrays_free(&a);
	}
	if (ok)
		phase(w, "in_recovery_txn");
	ok = ok && pg_exec(w, "commit", NULL, "COMMIT", 0, NULL);
	free(keep);
	return ok ? true : fail_txn(w);
}

/* --offsets-only: read our row of the offsets table (created if missing). */
bool
offsets_load(Worker *w)
{
	char		sql[512];
	char	   *t = PQescapeIdentifier(w->pg, w->cfg.offsets_table,
									   strlen(w->cfg.offsets_table));
	const char *p[3] = {w->cfg.consumer, w->cfg.stream, w->cfg.partition};
	PGresult   *r;
	bool		ok;

	snprintf(sql, sizeof(sql),
			 "WITH ins AS (INSERT INTO %s (consumer, stream, \"partition\", last_seq) "
			 "  VALUES ($1, $2, $3, 0) ON CONFLICT DO NOTHING) "
			 "SELECT coalesce((SELECT last_seq FROM %s WHERE consumer = $1 "
			 "  AND stream = $2 AND \"partition\" = $3), 0)", t, t);
	PQfreemem(t);
	ok = pg_exec(w, "offsets_load", &r, sql, 3, p);
	if (ok)
	{
		w->applied = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	return ok;
}

/* --offsets-only: the same INSERT and an UPDATE of the offset. */
bool
offsets_apply_page(Worker *w, const Page *p)
{
	char		ins[512], upd[512], last[24];
	char	   *t = PQescapeIdentifier(w->pg, w->cfg.sink_table,
									   strlen(w->cfg.sink_table));
	char	   *o = PQescapeIdentifier(w->pg, w->cfg.offsets_table,
									   strlen(w->cfg.offsets_table));
	PageArrays	a;
	bool		ok;

	snprintf(ins, sizeof(ins),
			 "INSERT INTO %s (stream, seq, gen, body) "
			 "SELECT $1::text, s, 0, b FROM unnest($2::bigint[], $3::bytea[]) AS u(s, b)", t);
	snprintf(upd, sizeof(upd),
			 "UPDATE %s SET last_seq = $4::bigint WHERE consumer = $1 AND stream = $2 "
			 "AND \"partition\" = $3", o);
	PQfreemem(t);
	PQfreemem(o);
	snprintf(last, sizeof(last), "%llu", (unsigned long long) page_last(p));
	page_arrays(p, NULL, &a);
	{
		const char *ip[3] = {w->cfg.stream, a.seqs.s, a.bodies.s};
		const char *up[4] = {w->cfg.consumer, w->cfg.stream, w->cfg.partition, last};

		ok = pg_exec(w, "begin", NULL, "BEGIN", 0, NULL) &&
			pg_exec(w, "insert", NULL, ins, 3, ip) &&
			pg_exec(w, "offsets_update", NULL, upd, 4, up) &&
			pg_exec(w, "commit", NULL, "COMMIT", 0, NULL);
	}
	page_arrays_free(&a);
	if (!ok)
		return fail_txn(w);
	w->applied = page_last(p);
	w->n_applied += p->n;
	return true;
}

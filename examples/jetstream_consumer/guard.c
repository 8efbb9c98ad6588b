/*
 * guard.c: every SQL call the consumer makes to stream_offset_guard, and the
 * one place where an error's SQLSTATE becomes an action (sqlstate_action).
 *
 * Each function runs one statement in autocommit mode (the sink
 * transactions are in sink.c), returns true on success and, on failure,
 * leaves the SQLSTATE, the message and the action in w->err for the state
 * machine (consumer.c, on_sql_error) to act on.  Positions travel as their
 * canonical text (decimal stream sequences); "nothing applied yet" is SQL
 * NULL and 0 here.
 */
#include "consumer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The error catalogue: every SQLSTATE the extension raises (docs/consumer.md, "What
 * each SQLSTATE tells the consumer"), and the server's own that a consumer
 * meets, with what this worker does about each.  on_sql_error() in
 * consumer.c carries it out:
 *
 *   RETRY      back off (50 ms doubling to 2 s) and redo the same step; a
 *              transaction that failed was rolled back, so redoing it is safe
 *   RECONNECT  the connection is gone, and with it the outcome of an
 *              in-flight COMMIT: reconnect and ask sog.owner_check.  Still
 *              the owner: read the checkpoint back (the page committed if
 *              and only if the applied position reached its end) and go on,
 *              without claiming again.  Not the owner: stop, because
 *              claiming would fence the worker that took over
 *   RESYNC     the same questions without a reconnect (a recovery attempt
 *              that is no longer open)
 *   RECLAIM    our position or token is stale: claim again for a fresh plan
 *   FENCED     another worker claimed: never write again; exit (whoever
 *              supervises workers starts a new one, which claims)
 *   STOP_GAP   a gap needs an operator (sog.unresolved_gaps); exit
 *   BUG        a bad argument, a missing grant or function: fix the code,
 *              the grants or the installed version; exit
 */
static const struct
{
	const char *sqlstate;
	Action		action;
	const char *meaning;
}			catalogue[] = {
	/* the extension's own */
	{"SG001", ACT_FENCED, "fenced: the generation is not current, another worker claimed"},
	{"SG002", ACT_STOP_GAP, "fail closed: a gap without a buffer hash (evaluate_halt only)"},
	{"SG003", ACT_STOP_GAP, "receipt conflict: the stream gave other bytes for a position already applied"},
	{"SG004", ACT_STOP_GAP, "gap pending: nothing is applied above an unverified or unresolved gap"},
	{"SG005", ACT_RECLAIM, "regression: out of order, or a cursor behind the applied position"},
	{"SG006", ACT_RECLAIM, "token mismatch: the checkpoint holds another consumer name"},
	{"SG007", ACT_BUG, "refused: skipping a gap of a critical checkpoint (this worker never skips)"},
	{"22023", ACT_BUG, "bad argument"},
	{"22P02", ACT_BUG, "invalid text: a bad position or a malformed literal"},
	{"22003", ACT_BUG, "a number out of range"},
	{"42501", ACT_BUG, "not granted: sog.grant_consumer for this role and consumer name"},
	{"42883", ACT_BUG, "no such function: the installed extension is older than this consumer"},
	{"55000", ACT_RESYNC, "not in the required state: the recovery attempt is no longer open"},
	{"55P03", ACT_RETRY, "sog.claim_timeout: the previous owner's sink transaction is still open"},
	/* the server's, that any transaction may meet */
	{"40001", ACT_RETRY, "serialization failure"},
	{"40P01", ACT_RETRY, "deadlock detected"},
	{"57014", ACT_RETRY, "statement canceled (statement_timeout)"},
	{"25006", ACT_RECONNECT, "read-only transaction: a standby; reconnect to the primary"},
	{"57P01", ACT_RECONNECT, "the server is shutting down"},
	{"57P02", ACT_RECONNECT, "the server crashed"},
	{"57P03", ACT_RECONNECT, "the server is starting up"},
};

Action
sqlstate_action(const char *sqlstate)
{
	size_t		i;

	if (sqlstate[0] == '\0' || strncmp(sqlstate, "08", 2) == 0)
		return ACT_RECONNECT;	/* connection exceptions: outcome unknown */
	for (i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (strcmp(catalogue[i].sqlstate, sqlstate) == 0)
			return catalogue[i].action;
	if (strncmp(sqlstate, "53", 2) == 0)
		return ACT_RETRY;		/* insufficient resources */
	return ACT_RETRY;			/* anything else: retried, then reported */
}

static const char *
sqlstate_meaning(const char *sqlstate)
{
	size_t		i;

	for (i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (strcmp(catalogue[i].sqlstate, sqlstate) == 0)
			return catalogue[i].meaning;
	return sqlstate[0] == '\0' ? "connection lost" : "not in the catalogue";
}

/*
 * Run one statement.  On failure fill w->err (an empty SQLSTATE when the
 * connection is gone) and log it.
 */
bool
pg_exec(Worker *w, const char *what, PGresult **res, const char *sql,
		int n, const char *const *params)
{
	PGresult   *r = PQexecParams(w->pg, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	const char *state;
	char	   *nl;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
	{
		if (res)
			*res = r;
		else
			PQclear(r);
		return true;
	}
	state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	if (PQstatus(w->pg) == CONNECTION_BAD)
		state = NULL;			/* whatever it said, the session is gone */
	snprintf(w->err.sqlstate, sizeof(w->err.sqlstate), "%s", state ? state : "");
	snprintf(w->err.message, sizeof(w->err.message), "%s",
			 r ? PQresultErrorMessage(r) : PQerrorMessage(w->pg));
	if ((nl = strchr(w->err.message, '\n')) != NULL)
		*nl = '\0';
	w->err.action = sqlstate_action(w->err.sqlstate);
	logf_event(w, "SQL_ERROR", "step=%s sqlstate=%s meaning=\"%s\" message=\"%s\"",
			   what, w->err.sqlstate[0] ? w->err.sqlstate : "-",
			   sqlstate_meaning(w->err.sqlstate), w->err.message);
	PQclear(r);
	if (res)
		*res = NULL;
	return false;
}

/* Connect, and say how long a claim may wait for the previous owner. */
static bool
pg_connect_quietly(Worker *w, bool quiet)
{
	const char *keys[] = {"dbname", "application_name", NULL};
	const char *vals[] = {w->cfg.pg, w->cfg.owner, NULL};
	char		ms[32];
	const char *p[1] = {ms};

	if (w->pg)
		PQfinish(w->pg);
	w->pg = PQconnectdbParams(keys, vals, 1);
	if (PQstatus(w->pg) != CONNECTION_OK)
	{
		char		msg[256];
		char	   *nl;

		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(w->pg));
		while ((nl = strchr(msg, '\n')) != NULL)
			*nl = ' ';
		if (!quiet)
			logf_event(w, "PG_DOWN", "message=\"%s\"", msg);
		w->err.sqlstate[0] = '\0';
		w->err.action = ACT_RECONNECT;
		return false;
	}
	snprintf(ms, sizeof(ms), "%d", w->cfg.claim_timeout_ms);
	return pg_exec(w, "claim_timeout", NULL,
				   "SELECT pg_catalog.set_config('sog.claim_timeout', $1, false)",
				   1, p);
}

bool
pg_connect(Worker *w)
{
	return pg_connect_quietly(w, false);
}

/* Reconnect with backoff, for up to two minutes. */
bool
pg_reconnect(Worker *w)
{
	double		start = now_s();
	int			saved = w->retries;
	int			attempts;

	w->retries = 0;
	for (attempts = 1; now_s() < start + 120; attempts++)
	{
		if (pg_connect_quietly(w, attempts > 1))
		{
			logf_event(w, "RECONNECTED", "attempts=%d seconds=%.1f", attempts,
					   now_s() - start);
			w->retries = saved;
			return true;
		}
		backoff(w);
		if (w->retries < 3)
			w->retries++;		/* 50, 100, 200, then every 400 ms */
	}
	return false;
}

static void
pos_text(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long) v);
}

/* A position column: NULL is "nothing yet", 0 here. */
static uint64_t
get_pos(PGresult *r, int col)
{
	return PQgetisnull(r, 0, col) ? 0 : strtoull(PQgetvalue(r, 0, col), NULL, 10);
}

/* Create our checkpoint, or find it (the same call returns the row). */
bool
guard_register(Worker *w)
{
	const char *p[4] = {w->cfg.consumer, w->cfg.stream, w->cfg.partition,
	w->identity};
	PGresult   *r;

	if (!pg_exec(w, "register", &r,
				 "SELECT id FROM sog.register($1, $2, $3, 'critical', "
				 "'nats_jetstream', NULL, $4)", 4, p))
		return false;
	w->cp = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

/* Take the checkpoint over: a new generation fences every earlier one. */
bool
guard_claim(Worker *w, Plan *plan)
{
	char		cp[24];
	const char *p[3] = {cp, w->cfg.owner, w->identity};
	PGresult   *r;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	if (!pg_exec(w, "claim", &r,
				 "SELECT generation, verdict, resume_from, verify_from, verify_to, "
				 "expected_count, provider_token, gap_id "
				 "FROM sog.claim($1, $2, $3)", 3, p))
		return false;
	memset(plan, 0, sizeof(*plan));
	w->gen = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	snprintf(plan->verdict, sizeof(plan->verdict), "%s", PQgetvalue(r, 0, 1));
	plan->resume_from = get_pos(r, 2);
	plan->verify_from = get_pos(r, 3);
	plan->verify_to = get_pos(r, 4);
	plan->expected_count = PQgetisnull(r, 0, 5) ? 0 : strtoll(PQgetvalue(r, 0, 5), NULL, 10);
	w->has_token = !PQgetisnull(r, 0, 6);
	snprintf(w->token, sizeof(w->token), "%s", PQgetvalue(r, 0, 6));
	plan->gap_id = PQgetisnull(r, 0, 7) ? 0 : strtoll(PQgetvalue(r, 0, 7), NULL, 10);
	w->applied = plan->resume_from;
	PQclear(r);
	return true;
}

/*
 * Tell the guard what is read but not applied: (above, cursor] and its
 * hash, `above` being the applied position when the call runs.  It must be
 * durable before the page's sink transaction runs, or a crash in between
 * could not be told from "nothing was read": alone (autocommit), as here,
 * for the first page; sink.c notes each next page inside the previous
 * page's sink transaction, after its apply, which commits it with that page.
 */
bool
guard_note_read(Worker *w, const Page *pg, uint64_t above)
{
	char		cp[24], gen[24], cur[24], cnt[24], hash[65];
	const char *p[5] = {cp, gen, cur, hash, cnt};

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	pos_text(page_last(pg), cur, sizeof(cur));
	snprintf(cnt, sizeof(cnt), "%d", page_hash(pg, above, hash));
	return pg_exec(w, "note_read", NULL,
				   "SELECT sog.note_read($1, $2, $3, $4, $5)", 5, p);
}

bool
guard_verify_gap(Worker *w, const char *hash, bool *ok)
{
	char		cp[24], gen[24];
	const char *p[3] = {cp, gen, hash};
	PGresult   *r;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	if (!pg_exec(w, "verify_gap", &r,
				 "SELECT sog.verify_gap($1, $2, $3)", 3, p))
		return false;
	*ok = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return true;
}

/*
 * Records we never applied are gone from the stream: record the gap
 * (applied, to] as 'retention'; the checkpoint is failed_closed from then
 * on.  Calling it again for a range an open gap covers returns that gap.
 */
bool
guard_report_gap(Worker *w, uint64_t to, const char *detail, int64_t *gap_id)
{
	char		cp[24], gen[24], pos[24];
	const char *p[4] = {cp, gen, pos, detail};
	PGresult   *r;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	pos_text(to, pos, sizeof(pos));
	if (!pg_exec(w, "report_gap", &r,
				 "SELECT sog.report_gap($1, $2, $3, 'retention', $4)", 4, p))
		return false;
	*gap_id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

/* After a reconnect: is our generation still current and not halted? */
bool
guard_owner_check(Worker *w, bool *owner)
{
	char		cp[24], gen[24];
	const char *p[2] = {cp, gen};
	PGresult   *r;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	if (!pg_exec(w, "owner_check", &r, "SELECT sog.owner_check($1, $2)", 2, p))
		return false;
	*owner = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return true;
}

/* Read the checkpoint back (register returns the row): applied, token. */
bool
guard_resync(Worker *w)
{
	const char *p[4] = {w->cfg.consumer, w->cfg.stream, w->cfg.partition,
	w->identity};
	PGresult   *r;

	if (!pg_exec(w, "resync", &r,
				 "SELECT applied_position, provider_token, state "
				 "FROM sog.register($1, $2, $3, 'critical', 'nats_jetstream', NULL, $4)",
				 4, p))
		return false;
	w->applied = get_pos(r, 0);
	w->has_token = !PQgetisnull(r, 0, 1);
	snprintf(w->token, sizeof(w->token), "%s", PQgetvalue(r, 0, 1));
	logf_event(w, "RESYNC", "applied=%llu token=%s state=%s",
			   (unsigned long long) w->applied,
			   w->has_token ? w->token : "-", PQgetvalue(r, 0, 2));
	PQclear(r);
	return true;
}

/* Graceful end: release ownership; nothing is buffered at this point. */
bool
guard_halt(Worker *w)
{
	char		cp[24], gen[24];
	const char *p[2] = {cp, gen};

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	return pg_exec(w, "halt", NULL,
				   "SELECT verdict FROM sog.halt($1, $2, NULL, NULL, NULL)", 2, p);
}

/* Open a recovery attempt for the expired consumer (the current token). */
bool
guard_begin_recovery(Worker *w, uint64_t anchor, bool inclusive,
					 uint64_t retained_from, Attempt *a)
{
	char		cp[24], gen[24], anc[24], ret[24];
	const char *p[6] = {cp, gen, w->has_token ? w->token : NULL, anc,
	inclusive ? "true" : "false", ret};
	PGresult   *r;

	snprintf(cp, sizeof(cp), "%lld", (long long) w->cp);
	snprintf(gen, sizeof(gen), "%lld", (long long) w->gen);
	pos_text(anchor, anc, sizeof(anc));
	pos_text(retained_from, ret, sizeof(ret));
	if (!pg_exec(w, "begin_recovery", &r,
				 "SELECT id, state, coalesce(failure, ''), gap_id "
				 "FROM sog.begin_recovery($1, $2, $3, NULL, $4, $5, $6, NULL)",
				 6, p))
		return false;
	a->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	snprintf(a->state, sizeof(a->state), "%s", PQgetvalue(r, 0, 1));
	snprintf(a->failure, sizeof(a->failure), "%s", PQgetvalue(r, 0, 2));
	a->gap_id = PQgetisnull(r, 0, 3) ? 0 : strtoll(PQgetvalue(r, 0, 3), NULL, 10);
	PQclear(r);
	return true;
}

/* Install our new consumer as the token, by compare-and-swap. */
bool
guard_promote(Worker *w, int64_t attempt, uint64_t last, Promotion *pr)
{
	char		id[24], pos[24];
	const char *p[3] = {id, w->cons, pos};
	PGresult   *r;

	snprintf(id, sizeof(id), "%lld", (long long) attempt);
	pos_text(last, pos, sizeof(pos));
	if (!pg_exec(w, "promote", &r,
				 "SELECT promoted, generation, applied_position, reason "
				 "FROM sog.promote($1, $2, $3)", 3, p))
		return false;
	pr->promoted = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	pr->generation = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	pr->applied = get_pos(r, 2);
	snprintf(pr->reason, sizeof(pr->reason), "%s", PQgetvalue(r, 0, 3));
	PQclear(r);
	return true;
}

/*
 * consumer.c: a NATS JetStream consumer that writes a stream into
 * PostgreSQL and neither loses nor doubles an event, with the
 * stream_offset_guard extension.  Written to be read and copied.
 *
 * One process consumes one stream (here: one partition) into a sink table.
 * It keeps three positions apart, because confusing them is how events get
 * lost:
 *
 *   read cursor       the last sequence fetched (told to the guard with
 *                     sog.note_read, durably, before the records are applied)
 *   applied position  the last sequence whose row committed (moved only by
 *                     the guard, inside the sink transaction)
 *   provider token    the name of the ephemeral JetStream pull consumer we
 *                     read from; the server deletes it after InactiveThreshold
 *                     without pulls, so it is an opaque, expiring handle,
 *                     moved by compare-and-swap (commit_page, promote)
 *
 * The state machine (one function per state, each returns the next one):
 *
 *        start: connect PostgreSQL and NATS, stream identity, sog.register
 *          |
 *          v
 *   +--> CLAIM   sog.claim: a new generation; every earlier one is fenced
 *   |      |
 *   |      +- aligned -------------> open a pull consumer at resume_from + 1
 *   |      +- gap_replay_required -> REPLAY: open at verify_from + 1, re-fetch
 *   |      |                         (verify_from, verify_to], hash it here,
 *   |      |                         sog.verify_gap; true: it is the first page
 *   |      +- fail_closed, unrecoverable_divergence -> STOPPED (an operator)
 *   |      v
 *   |     RUN    one page per turn, one COMMIT per page (the pipelined form):
 *   |      |       holding page k, fetch page k+1 (up to --page records,
 *   |      |       contiguous from the next sequence), then
 *   |      |       BEGIN; apply_run(page k), INSERT the new rows;
 *   |      |              sog.note_read(end of k+1, hash of page k+1),
 *   |      |              commit_page; COMMIT
 *   |      |       page k+1's read boundary commits with page k, so it is
 *   |      |       durable before its own sink transaction begins.  A page
 *   |      |       no transaction noted (the first after a claim, a verify
 *   |      |       or a recovery; after a failed sink transaction; after a
 *   |      |       pull that brought no page k+1) is noted alone first:
 *   |      |       sog.note_read(end of k, hash of page k)      COMMIT
 *   |      |       --two-commit notes every page alone like this.
 *   |      +- an empty or failed pull -> consumer info:
 *   |      |       10014 "consumer not found" (and only that) -> RECOVER
 *   |      |       alive -> idle;  no answer -> back off, pull again
 *   |      +- the stream skipped past the next sequence -> stream info and
 *   |      |       the expected message: gone (first_seq moved past it, or
 *   |      |       10037 "no message found") -> sog.report_gap(last gone,
 *   |      |       'retention') -> STOPPED (never skip); else reopen the
 *   |      |       consumer at the next sequence
 *   |      |       (a page held is applied first, alone, in each of these)
 *   |      +- --until reached, SIGTERM -> DONE: sog.halt, exit 0
 *   |
 *   |    RECOVER (our consumer expired)
 *   |      |  stream info: unapplied records gone -> report_gap -> STOPPED
 *   |      |  sog.begin_recovery(expired name, anchor = applied (inclusive),
 *   |      |                     retained_from = first_seq)  refused -> STOPPED
 *   |      |  open a new consumer at the anchor, fetch a page, note_read,
 *   |      |  BEGIN; recovery_event per event, INSERT the 'apply' ones; COMMIT
 *   |      +- sog.promote(new name, page_last): new generation -> RUN
 *   |
 *   +--- SG005, SG006: our position or token is stale: claim again
 *
 *   connection lost (commit outcome unknown): reconnect, sog.owner_check;
 *   still the owner: read the checkpoint back and go on (no new claim);
 *   not the owner: stop, since claiming would fence whoever took over.
 *   SG001 anywhere -> FENCED: exit 3 without writing anything more.
 *   What each SQLSTATE means for the worker: guard.c, the error catalogue.
 *
 * Exit status: 0 done, 2 bad usage or a bug (22023, 22P02, 42501, ...),
 * 3 fenced or no longer the owner, 4 stopped on a gap an operator must
 * resolve, 5 gave up retrying.
 */
#include "consumer.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum State
{
	ST_CLAIM,
	ST_RUN,
	ST_RECOVER,
	/* final states */
	ST_DONE,					/* exit 0 */
	ST_FENCED,					/* exit 3 */
	ST_STOPPED,					/* exit 4 */
	ST_BROKEN					/* exit 2 or 5 */
} State;

#define MAX_RETRIES 30

static volatile sig_atomic_t stop_requested = 0;

static State st_claim(Worker *w);
static State st_replay(Worker *w, uint64_t from, uint64_t to);
static State st_run(Worker *w);
static State st_recover(Worker *w);
static State on_sql_error(Worker *w, State here);
static void page_next(Worker *w);

/* Open a pull consumer at seq, retrying while NATS does not answer. */
static bool
open_retrying(Worker *w, uint64_t seq)
{
	int			tries;

	for (tries = 0; tries < MAX_RETRIES; tries++)
	{
		if (js_open_consumer(w, seq))
			return true;
		w->retries = tries;
		backoff(w);
	}
	w->exit_code = 5;
	return false;
}

/* ---- errors: what to do after a failed SQL step ------------------------- */

/*
 * After a reconnect (or a recovery attempt that is no longer open): do we
 * still own the checkpoint?  If not, stop: another worker took over, and
 * claiming again would fence it.  If so, read the checkpoint back and
 * decide what an in-flight sink transaction did: its page committed if and
 * only if the applied position reached its end (the rows, the receipts and
 * the position commit together).
 */
static State
regain_footing(Worker *w, State here)
{
	bool		owner = false;

	if (here == ST_CLAIM)
		return ST_CLAIM;		/* the claim's outcome is unknown: claim again */
	while (!guard_owner_check(w, &owner))
	{
		if (++w->retries > MAX_RETRIES ||
			(w->err.action == ACT_RECONNECT && !pg_reconnect(w)))
			return ST_BROKEN;
		backoff(w);
	}
	logf_event(w, "OWNER_CHECK", "generation=%lld owner=%s", (long long) w->gen,
			   owner ? "true" : "false");
	if (!owner)
	{
		logf_event(w, "STOP", "reason=not_owner: another worker took over; "
				   "claiming would fence it");
		return ST_FENCED;
	}
	if (!guard_resync(w))
		return ST_CLAIM;		/* cannot tell: a fresh plan is always safe */
	w->noted = 0;				/* note the next page alone: always safe */
	if (here != ST_RUN)
		return here;			/* RECOVER starts a new attempt */
	if (w->page.n > 0 && page_last(&w->page) <= w->applied)
		page_next(w);			/* it committed: the page fetched after it is next */
	if (w->page.n > 0 && w->page.rec[0].seq != w->applied + 1)
	{
		page_clear(&w->page);	/* does not follow the applied position */
		page_clear(&w->ahead);
	}
	if (w->page.n == 0 && w->next != w->applied + 1 &&
		!open_retrying(w, w->applied + 1))
		return ST_BROKEN;
	return here;				/* RUN goes on */
}

/* Carry out the action the error catalogue (guard.c) chose. */
static State
on_sql_error(Worker *w, State here)
{
	switch (w->err.action)
	{
		case ACT_RETRY:
			if (++w->retries > MAX_RETRIES)
			{
				logf_event(w, "STOP", "reason=gave_up sqlstate=%s", w->err.sqlstate);
				w->exit_code = 5;
				return ST_BROKEN;
			}
			backoff(w);
			return here;
		case ACT_RECONNECT:
			if (!pg_reconnect(w))
			{
				w->exit_code = 5;
				return ST_BROKEN;
			}
			return regain_footing(w, here);
		case ACT_RESYNC:
			return regain_footing(w, here);
		case ACT_RECLAIM:
			logf_event(w, "RECLAIM", "sqlstate=%s: claiming again for a fresh plan",
					   w->err.sqlstate);
			return ST_CLAIM;
		case ACT_FENCED:
			logf_event(w, "REFUSED", "sqlstate=SG001 generation=%lld "
					   "reason=fenced: another worker claimed; this one stops writing",
					   (long long) w->gen);
			return ST_FENCED;
		case ACT_STOP_GAP:
			logf_event(w, "STOP", "reason=gap sqlstate=%s: see sog.unresolved_gaps",
					   w->err.sqlstate);
			return ST_STOPPED;
		case ACT_BUG:
		case ACT_NONE:
			break;
	}
	logf_event(w, "STOP", "reason=bug sqlstate=%s", w->err.sqlstate);
	w->exit_code = 2;
	return ST_BROKEN;
}

/* ---- CLAIM and REPLAY ------------------------------------------------------ */

static State
st_claim(Worker *w)
{
	Plan		plan;
	uint64_t	start;

	page_clear(&w->page);
	page_clear(&w->ahead);
	w->noted = 0;
	js_close_consumer(w, false);
	w->jump_pending = false;
	if (!guard_claim(w, &plan))
		return on_sql_error(w, ST_CLAIM);
	w->retries = 0;
	logf_event(w, "CLAIM", "generation=%lld verdict=%s resume_from=%llu "
			   "verify_from=%llu verify_to=%llu gap_id=%lld token=%s",
			   (long long) w->gen, plan.verdict,
			   (unsigned long long) plan.resume_from,
			   (unsigned long long) plan.verify_from,
			   (unsigned long long) plan.verify_to, (long long) plan.gap_id,
			   w->has_token ? w->token : "-");
	phase(w, "after_claim");
	if (strcmp(plan.verdict, "gap_replay_required") == 0)
		return st_replay(w, plan.verify_from, plan.verify_to);
	if (strcmp(plan.verdict, "aligned") != 0)
	{
		logf_event(w, "STOP", "reason=%s gap_id=%lld: an operator resolves it",
				   plan.verdict, (long long) plan.gap_id);
		return ST_STOPPED;
	}
	start = plan.resume_from;
	if (w->cfg.resume_own_cursor && read_cursor_file(w) > start)
	{
		start = read_cursor_file(w);	/* THE BUG the checker must catch */
		logf_event(w, "BUG_OWN_CURSOR", "resume_from=%llu own_cursor=%llu",
				   (unsigned long long) plan.resume_from, (unsigned long long) start);
	}
	return open_retrying(w, start + 1) ? ST_RUN : ST_BROKEN;
}

/*
 * Records up to last_lost are gone from the stream before we applied them:
 * report the loss, (applied, last_lost], and stop advancing.
 */
static State
report_loss(Worker *w, uint64_t last_lost, const char *why)
{
	char		detail[256];
	int64_t		gap_id = 0;

	snprintf(detail, sizeof(detail), "stream %s: %s; %llu..%llu were never applied",
			 w->cfg.stream, why, (unsigned long long) w->applied + 1,
			 (unsigned long long) last_lost);
	while (!guard_report_gap(w, last_lost, detail, &gap_id))
	{
		State		s = on_sql_error(w, ST_RUN);

		if (s != ST_RUN)
			return s;
	}
	logf_event(w, "GAP_REPORTED", "gap_id=%lld from=%llu to=%llu reason=retention",
			   (long long) gap_id, (unsigned long long) w->applied,
			   (unsigned long long) last_lost);
	logf_event(w, "STOP", "reason=retention gap_id=%lld: not advancing past a loss",
			   (long long) gap_id);
	return ST_STOPPED;
}

/*
 * The stream skipped from `expected` to `got`.  Returns the last sequence
 * that is gone (retention moved the first sequence past it, or it was
 * deleted from the stream), 0 when nothing is gone (reposition the
 * consumer), -1 when NATS did not answer (ask again).
 */
static int64_t
lost_through(Worker *w, uint64_t expected, uint64_t got)
{
	uint64_t	first, last;

	if (!js_first_seq(w, &first, &last))
		return -1;
	if (first > expected)
		return (int64_t) first - 1;
	switch (js_msg_state(w, expected))
	{
		case MSG_GONE:
			return (int64_t) got - 1;
		case MSG_THERE:
			return 0;
		case MSG_UNKNOWN:
			break;
	}
	return -1;
}

/* Pull until the page holds everything up to `to`. */
static State
refetch(Worker *w, uint64_t to)
{
	Page		tmp = {0};
	int			idle = 0;
	int64_t		lost = 0;

	while (w->next <= to && idle < MAX_RETRIES)
	{
		FetchResult fr = js_fetch(w, (int) (to - w->next + 1), &tmp);
		int			i;

		for (i = 0; i < tmp.n; i++)
			page_add(&w->page, tmp.rec[i].seq, tmp.rec[i].data, tmp.rec[i].len);
		if (fr == FETCH_JUMP && (lost = lost_through(w, w->next, w->jump_to)) > 0)
			break;
		if ((fr == FETCH_JUMP && lost == 0) ||
			(tmp.n == 0 && js_consumer_state(w) == CONSUMER_NOT_FOUND))
		{
			if (!open_retrying(w, w->next))		/* only our re-read consumer */
				return ST_BROKEN;
		}
		idle = tmp.n > 0 ? 0 : idle + 1;
	}
	page_clear(&tmp);
	free(tmp.rec);
	if (lost > 0)
		return report_loss(w, (uint64_t) lost, "records to re-read are gone");
	return w->next > to ? ST_RUN : ST_BROKEN;
}

/*
 * gap_replay_required: our predecessor read (from, to] and recorded its
 * hash.  Re-read it by sequence, hash it the same way, and let the guard
 * compare.  The re-read records are the first page we apply.
 */
static State
st_replay(Worker *w, uint64_t from, uint64_t to)
{
	char		hash[65];
	bool		ok = false;
	State		s;

	if (!open_retrying(w, from + 1))
		return ST_BROKEN;
	if ((s = refetch(w, to)) != ST_RUN)
		return s;
	page_hash(&w->page, from, hash);
	if (!guard_verify_gap(w, hash, &ok))
		return on_sql_error(w, ST_CLAIM);
	logf_event(w, "VERIFY", "from=%llu to=%llu ok=%s hash=%s",
			   (unsigned long long) from, (unsigned long long) to,
			   ok ? "true" : "false", hash);
	if (!ok)
	{
		logf_event(w, "STOP", "reason=hash_mismatch: an operator resolves the gap");
		return ST_STOPPED;
	}
	phase(w, "after_verify");
	if (w->cfg.resume_own_cursor && read_cursor_file(w) > w->applied)
	{
		uint64_t	own = read_cursor_file(w);	/* THE BUG the checker must catch */

		logf_event(w, "BUG_OWN_CURSOR", "resume_from=%llu own_cursor=%llu",
				   (unsigned long long) w->applied, (unsigned long long) own);
		page_clear(&w->page);
		return open_retrying(w, own + 1) ? ST_RUN : ST_BROKEN;
	}
	return ST_RUN;				/* RUN applies the pending page first */
}

/* ---- RUN -------------------------------------------------------------------- */

/* Page k is done: the page fetched after it (if any) is the one to apply next. */
static void
page_next(Worker *w)
{
	Page		done = w->page;

	page_clear(&done);
	w->page = w->ahead;
	w->ahead = done;			/* empty, its buffer kept for the next fetch */
}

/* The read boundary of w->page is durable: remember it and say so. */
static void
noted(Worker *w, const char *how)
{
	w->noted = page_last(&w->page);
	logf_event(w, "READ", "cursor=%llu applied=%llu n=%d noted=%s",
			   (unsigned long long) w->noted, (unsigned long long) w->applied,
			   w->page.n, how);
	write_cursor_file(w, w->noted);
}

/*
 * Apply the page held, in one sink transaction; when the page fetched after
 * it is held too (the pipelined form), that transaction also notes its read
 * boundary.  A page whose boundary is not known to be durable is noted
 * alone, and committed, first.
 */
static State
apply_pending(Worker *w)
{
	bool		carry = w->ahead.n > 0;

	if (w->cfg.offsets_only)
	{
		if (!offsets_apply_page(w, &w->page))
			return on_sql_error(w, ST_RUN);
	}
	else
	{
		if (w->noted != page_last(&w->page))
		{
			if (w->cfg.resume_own_cursor)
				noted(w, "never (--resume-own-cursor: reads the guard cannot see)");
			else if (!guard_note_read(w, &w->page, w->applied))
				return on_sql_error(w, ST_RUN);
			else
				noted(w, "alone");
			phase(w, "after_note_read");
		}
		if (!sink_apply_page(w, &w->page,
							 carry && !w->cfg.resume_own_cursor ? &w->ahead : NULL))
		{
			w->noted = 0;		/* rolled back (or unknown): note again */
			return on_sql_error(w, ST_RUN);
		}
	}
	w->retries = 0;
	w->t_last = now_s();
	logf_event(w, "APPLIED", "applied=%llu generation=%lld",
			   (unsigned long long) w->applied, (long long) w->gen);
	page_next(w);
	if (carry)					/* its note committed with this page */
		noted(w, "with_previous_page");
	phase(w, "after_commit");
	if (carry)
		phase(w, "after_note_read");
	return ST_RUN;
}

/* The stream skipped past what we expected: a loss, or reposition. */
static State
handle_jump(Worker *w)
{
	int64_t		lost = lost_through(w, w->applied + 1, w->jump_to);

	if (lost < 0)
	{
		backoff(w);
		return ST_RUN;			/* jump_pending stays set: ask again */
	}
	w->jump_pending = false;
	if (lost > 0 && !w->cfg.offsets_only)
		return report_loss(w, (uint64_t) lost, "gone from the stream (retention or deleted)");
	if (lost > 0)
		logf_event(w, "SKIPPED", "from=%llu to=%lld (offsets only: nobody notices)",
				   (unsigned long long) w->applied + 1, (long long) lost);
	return open_retrying(w, (lost > 0 ? (uint64_t) lost : w->applied) + 1)
		? ST_RUN : ST_BROKEN;
}

/* A pull brought nothing: an idle stream, or is our consumer gone? */
static State
on_empty_pull(Worker *w)
{
	switch (js_consumer_state(w))
	{
		case CONSUMER_ALIVE:
			w->retries = 0;
			if (w->idle_since == 0)
				w->idle_since = now_s();
			if (w->cfg.idle_exit_ms > 0 &&
				now_s() - w->idle_since > w->cfg.idle_exit_ms / 1000.0)
				return ST_DONE;
			return ST_RUN;
		case CONSUMER_NOT_FOUND:
			logf_event(w, "EXPIRED", "consumer=%s applied=%llu: JSConsumerNotFoundErr (10014)",
					   w->cons, (unsigned long long) w->applied);
			if (w->cfg.offsets_only)
				return open_retrying(w, w->applied + 1) ? ST_RUN : ST_BROKEN;
			return ST_RECOVER;
		case CONSUMER_UNKNOWN:
			break;
	}
	if (++w->retries > MAX_RETRIES)
	{
		logf_event(w, "STOP", "reason=gave_up: NATS does not answer");
		w->exit_code = 5;
		return ST_BROKEN;
	}
	backoff(w);
	return ST_RUN;
}

/*
 * Read ahead (the pipelined form) unless the page held must be applied
 * alone: a jump to look at, a stop asked for, --until reached by it.
 */
static bool
read_ahead(Worker *w)
{
	return !w->cfg.two_commit && !w->cfg.offsets_only && w->ahead.n == 0 &&
		!w->jump_pending && !stop_requested &&
		!(w->cfg.until > 0 && page_last(&w->page) >= w->cfg.until);
}

static State
st_run(Worker *w)
{
	FetchResult fr = FETCH_OK;
	Page	   *into;
	State		s;

	if (w->page.n == 0 && w->jump_pending)
		return handle_jump(w);
	if (w->page.n == 0 &&
		(stop_requested || (w->cfg.until > 0 && w->applied >= w->cfg.until)))
		return ST_DONE;
	if (w->page.n > 0 && !read_ahead(w))
		return apply_pending(w);
	into = w->page.n == 0 ? &w->page : &w->ahead;
	fr = js_fetch(w, w->cfg.page, into);
	if (into->n > 0)
	{
		w->idle_since = 0;
		if (w->t_first == 0)
			w->t_first = now_s();
	}
	if (fr == FETCH_JUMP)
		w->jump_pending = true;
	if (into == &w->page)		/* nothing was held: apply on a later turn */
		return fr == FETCH_EMPTY || fr == FETCH_ERROR ? on_empty_pull(w) : ST_RUN;
	s = apply_pending(w);		/* page k, noting page k+1 if it came */
	if (s == ST_RUN && (fr == FETCH_EMPTY || fr == FETCH_ERROR))
		return on_empty_pull(w);
	return s;
}

/* ---- RECOVER ------------------------------------------------------------------ */

/* Fetch the recovery page: at least one record from the anchor on. */
static bool
recovery_fetch(Worker *w)
{
	int			tries;

	for (tries = 0; tries < MAX_RETRIES; tries++)
	{
		FetchResult fr = js_fetch(w, w->cfg.page, &w->page);

		if (w->page.n > 0)
			return true;
		if (fr == FETCH_JUMP ||
			(fr != FETCH_OK && js_consumer_state(w) == CONSUMER_NOT_FOUND))
			return false;		/* start over: the stream moved under us */
	}
	return false;
}

/* Promote, retrying through a reconnect: a retry answers already_promoted. */
static State
promote_page(Worker *w, int64_t attempt)
{
	Promotion	pr;

	while (!guard_promote(w, attempt, page_last(&w->page), &pr))
	{
		if (w->err.action != ACT_RECONNECT || !pg_reconnect(w))
			return on_sql_error(w, ST_RECOVER);
	}
	logf_event(w, "PROMOTE", "attempt=%lld promoted=%s reason=%s generation=%lld "
			   "applied=%llu consumer=%s", (long long) attempt,
			   pr.promoted ? "true" : "false", pr.reason, (long long) pr.generation,
			   (unsigned long long) pr.applied, w->cons);
	if (!pr.promoted && strcmp(pr.reason, "lost") == 0)
		return ST_FENCED;		/* another worker moved the checkpoint first */
	if (!pr.promoted)
	{
		logf_event(w, "STOP", "reason=%s", pr.reason);
		return ST_STOPPED;
	}
	w->gen = pr.generation;
	w->applied = pr.applied;
	snprintf(w->token, sizeof(w->token), "%s", w->cons);
	w->has_token = true;
	page_clear(&w->page);
	w->noted = 0;
	phase(w, "after_promote");
	return ST_RUN;
}

/*
 * Our pull consumer (the token) is gone.  Re-read from a position we can
 * prove, the applied position itself (inclusive: its receipt is checked),
 * and install the new consumer by compare-and-swap.
 *
 * An inclusive anchor needs the anchor record itself to be retained; when
 * the stream starts exactly after it, nothing unapplied is lost and we seek
 * exclusively from applied + 1 (JetStream has no late arrivals).
 */
static State
st_recover(Worker *w)
{
	uint64_t	first, last;
	bool		inclusive;
	Attempt		a;
	char		stopped[32];

	page_clear(&w->page);
	page_clear(&w->ahead);		/* none: RUN applied what it held first */
	if (++w->retries > MAX_RETRIES)
		return ST_BROKEN;		/* reset by every page that commits */
	if (!js_first_seq(w, &first, &last))
	{
		backoff(w);
		return ST_RECOVER;
	}
	if (first > w->applied + 1)
		return report_loss(w, first - 1, "retention moved the first sequence past them");
	if (w->applied == 0)		/* nothing applied: nothing to prove */
	{
		logf_event(w, "RECOVERY_SKIPPED", "reason=nothing applied yet");
		return open_retrying(w, 1) ? ST_RUN : ST_BROKEN;
	}
	inclusive = first <= w->applied;
	if (!guard_begin_recovery(w, w->applied, inclusive, first, &a))
		return on_sql_error(w, ST_RECOVER);
	logf_event(w, "RECOVERY_BEGIN", "attempt=%lld state=%s failure=%s anchor=%llu "
			   "inclusive=%s retained_from=%llu expired=%s", (long long) a.id,
			   a.state, a.failure[0] ? a.failure : "-",
			   (unsigned long long) w->applied, inclusive ? "true" : "false",
			   (unsigned long long) first, w->has_token ? w->token : "-");
	if (strcmp(a.state, "open") != 0)
	{
		logf_event(w, "STOP", "reason=recovery_refused failure=%s gap_id=%lld",
				   a.failure, (long long) a.gap_id);
		return ST_STOPPED;
	}
	if (!open_retrying(w, inclusive ? w->applied : w->applied + 1))
		return ST_BROKEN;
	if (!recovery_fetch(w))
		return ST_RECOVER;
	if (page_last(&w->page) > w->applied && !guard_note_read(w, &w->page, w->applied))
		return on_sql_error(w, ST_RECOVER);
	if (!sink_recovery_page(w, a.id, &w->page, stopped, sizeof(stopped)))
		return on_sql_error(w, ST_RECOVER);
	logf_event(w, "RECOVERY_PAGE", "attempt=%lld first=%llu last=%llu stopped=%s",
			   (long long) a.id, (unsigned long long) w->page.rec[0].seq,
			   (unsigned long long) page_last(&w->page), stopped[0] ? stopped : "-");
	if (stopped[0] != '\0')
		return ST_STOPPED;
	phase(w, "before_promote");
	return promote_page(w, a.id);
}

/* ---- start and end -------------------------------------------------------- */

static void
on_signal(int sig)
{
	(void) sig;
	stop_requested = 1;
}

static bool
setup(Worker *w)
{
	int			tries;

	for (tries = 0; tries < MAX_RETRIES; tries++, w->retries = tries, backoff(w))
	{
		if (w->pg == NULL || PQstatus(w->pg) != CONNECTION_OK)
			if (!pg_connect(w))
				continue;
		if (w->nc == NULL && !js_connect(w))
			continue;
		if (!js_stream_identity(w))
			continue;
		if (w->cfg.offsets_only)
			return offsets_load(w) && open_retrying(w, w->applied + 1);
		if (guard_register(w))
			return true;
		if (w->err.action != ACT_RETRY && w->err.action != ACT_RECONNECT)
		{
			w->exit_code = w->err.action == ACT_BUG ? 2 : 5;
			return false;
		}
	}
	return false;
}

static int
finish(Worker *w, State s)
{
	double		secs = w->t_last > w->t_first ? w->t_last - w->t_first : 0;

	if (s == ST_DONE && !w->cfg.offsets_only && !guard_halt(w))
		s = ST_BROKEN;
	if (s == ST_DONE)
		js_close_consumer(w, true);
	logf_event(w, "RATE", "mode=%s events=%llu duplicates=%llu seconds=%.3f eps=%.0f",
			   w->cfg.offsets_only ? "offsets_only" : "guard",
			   (unsigned long long) w->n_applied,
			   (unsigned long long) w->n_duplicate, secs,
			   secs > 0 ? w->n_applied / secs : 0);
	logf_event(w, "EXIT", "state=%s applied=%llu generation=%lld",
			   s == ST_DONE ? "done" : s == ST_FENCED ? "fenced" :
			   s == ST_STOPPED ? "stopped" : "broken",
			   (unsigned long long) w->applied, (long long) w->gen);
	if (w->pg)
		PQfinish(w->pg);
	switch (s)
	{
		case ST_DONE: return 0;
		case ST_FENCED: return 3;
		case ST_STOPPED: return 4;
		default: return w->exit_code ? w->exit_code : 5;
	}
}

int
main(int argc, char **argv)
{
	static Worker w;
	State		s;

	parse_flags(&w.cfg, argc, argv);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	logf_event(&w, "START", "pid=%d owner=%s mode=%s page=%d", (int) getpid(),
			   w.cfg.owner, w.cfg.offsets_only ? "offsets_only" : "guard", w.cfg.page);
	if (!setup(&w))
		return finish(&w, ST_BROKEN);
	s = w.cfg.offsets_only ? ST_RUN : ST_CLAIM;
	while (s < ST_DONE)
	{
		switch (s)
		{
			case ST_CLAIM: s = st_claim(&w); break;
			case ST_RUN: s = st_run(&w); break;
			case ST_RECOVER: s = st_recover(&w); break;
			default: break;
		}
	}
	return finish(&w, s);
}

/*
 * stream_offset_guard.pml
 *	  One checkpoint of stream_offset_guard and its protocol as the C code
 *	  implements it (claim, note_read, apply_batch, halt, verify_gap,
 *	  report_gap, begin_recovery, recovery_event, promote, resolve_gap),
 *	  with workers that crash at any step, zombies, a source that loses
 *	  records and expires its token, and an operator.  The workers note
 *	  each page's read boundary in a commit of its own (two commits per
 *	  page), or, with -DPIPELINED, also inside the previous page's sink
 *	  transaction (one commit per page).  Checked by spin:
 *	  see run.sh and README.md beside this file.
 *
 * Atomicity.  Every SQL function is one atomic step (d_step): it takes the
 * checkpoint's row lock, reads the newest committed state, checks, writes,
 * and its effects commit or roll back whole.  A sink transaction (BEGIN;
 * apply_batch; the user's INSERTs; COMMIT), and a recovery page (BEGIN;
 * recovery_event per event; INSERTs; COMMIT), is one atomic step too: the
 * row lock its first call takes is held to COMMIT, so no other step on the
 * checkpoint interleaves, and a crash before COMMIT leaves nothing.  A
 * crash is a worker that stops between two steps.  A zombie is a worker
 * that was fenced and goes on calling (every option of its loop stays
 * open; only the database refuses it).  A client's decision and the call
 * it makes are one step (the guard is the d_step's first statement); what
 * the client does with the answer, in its own memory, belongs to that step
 * too (atomic).  Between two steps every other process may move.
 *
 * Positions are 1..N; 0 stands for SQL NULL ("nothing yet", "unknown").
 * Sets of positions are bit masks: bit p is position p.  A buffer hash is
 * the exact set of positions it covers (payload bytes never change in this
 * model, so equal sets <=> equal SHA-256 buffer hashes).
 *
 * The default is the C code as it now is (src/checkpoint/boundary.c, src/functions/apply.c,
 * src/functions/claim.c, src/functions/recovery.c, src/functions/promote.c, src/functions/gap.c,
 * src/store/gap.c): a read boundary is discharged only by an apply that
 * reaches its cursor with the noted records (checked there, and by promote
 * for a recovery page), a verify_gap that matches, or a gap row that
 * covers it; a note_read or halt never replaces one that is open, a
 * transaction that leaves one partly applied does not commit, every gap
 * starts at the boundary's base, and resolve_gap keeps a boundary that the
 * gaps recorded since it was noted do not cover.  The default client may
 * recover while it holds noted records, may report_gap while replaying,
 * and promotes any page it fetched; the one rule it follows is R2 (re-read
 * retention after every fetch, README.md).  With CLIENT_DROP_NOTED and
 * ADVERSARY it breaks the protocol in every way a plausible client does.
 *
 * Flags (spin -DNAME):
 *	 PIPELINED                   the pipelined worker: besides every step of
 *	                             the two-commit worker, a sink transaction
 *	                             that applies page k (noted) and notes page
 *	                             k+1 (fetched since) after the apply, one
 *	                             commit (README.md, "The pipelined worker")
 *	 MUT_PIPE_HASH_FROM_BEFORE   (with PIPELINED) page k+1's hash taken from
 *	                             the applied position before page k
 *	 MUT_PIPE_NOTE_BEFORE_APPLY  (with PIPELINED) page k+1 noted before page
 *	                             k's apply in the same transaction
 *	 MUT_PIPE_ACK_EARLY          (with PIPELINED) page k+1 acknowledged to
 *	                             the source when page k commits
 *	 REACH_PIPE_VERIFIED         assert that no successor verifies a boundary
 *	                             a pipelined transaction recorded (run to
 *	                             see it fail: the handoff after page k's
 *	                             commit verifies page k+1)
 *	 CLIENT_DROP_NOTED           a client bug: a worker loses a noted record
 *	                             from its buffer (F6, F7)
 *	 ADVERSARY                   the calls a plausible client makes wrongly
 *	                             (the read boundary's), each one transaction:
 *	                             ADV_SAVEPOINT (page k's apply rolled back in
 *	                             a savepoint, page k dropped from the buffer
 *	                             as if applied, page k+1 noted), ADV_BACK (a
 *	                             note_read or halt at the applied position
 *	                             while records are noted), ADV_RENOTE (a note
 *	                             of the buffer while its boundary is open: after
 *	                             verify_gap, or after a record was lost),
 *	                             ADV_HALT_INSIDE (part of the noted page
 *	                             applied, then halt with the rest),
 *	                             ADV_REPORT_INSIDE (part applied, then the
 *	                             rest reported lost); each flag alone, or all
 *	 OLD_BOUNDARY                1.1's read boundary, every rule this version
 *	                             changed (each also alone): a note_read or
 *	                             halt replaced an open boundary
 *	                             (OLD_NOTE_REPLACES, OLD_HALT_REPLACES), a
 *	                             transaction committed a partly applied one
 *	                             (OLD_PARTIAL_COMMIT), report_gap and the
 *	                             other gaps started at the applied position
 *	                             (OLD_REPORT_FROM_APPLIED,
 *	                             OLD_GAPS_FROM_APPLIED), as did resolve_gap's
 *	                             cover check (OLD_COVER_FROM_APPLIED), and a
 *	                             short recovery page of a boundary without a
 *	                             hash promoted (OLD_PROMOTE_NOHASH)
 *	 OLD_GAP_FROM_APPLIED        the C code before F7's fix: verify_gap's
 *	                             hash_mismatch gap starts at the applied
 *	                             position even when an apply entered the
 *	                             boundary
 *	 BUG_RECOVERY_PAST_VERIFY    re-introduces the bug fixed by issue 8:
 *	                             recovery_event answers 'apply' above applied
 *	                             while replaying, promote advances applied
 *	                             and sets the state back to running
 *	 NO_P6                       do not assert the temporal-skew rule P6 (to
 *	                             see where the bug leads when nothing stops
 *	                             it: a silent loss)
 *	 OLD_PROMOTE                 promote as before the F1 fix: no check of
 *	                             the read boundary (F1 comes back)
 *	 OLD_RESOLVE                 resolve_gap as before the F3 fix: the last
 *	                             resolve clears the boundary, running (F3;
 *	                             with OLD_NO_REST, report_gap and a retention
 *	                             refusal did not yet record the rest of the
 *	                             boundary beyond the loss as unverified)
 *	 OLD_CLOSE_CHECK             apply's boundary check as before: a count
 *	                             check only before an event strictly above
 *	                             the cursor
 *	 HELPER_RESOLVE              the previous model's proposed F3 fix:
 *	                             replaying whenever a read hash remains above
 *	                             applied (never running after a mismatch)
 *	 OLD_PROMOTE_PARTIAL         promote as before the F4 fix: a page that
 *	                             ends inside the boundary (applied <
 *	                             advance_through < cursor) promotes (F4)
 *	 OLD_RESOLVE_SINCE_CLAIM     boundary_unverified as before the F5 fix:
 *	                             it counts the gaps detected since the last
 *	                             claim or promote, not since the boundary was
 *	                             recorded (F5)
 *	 CLIENT_NO_POSTFETCH_CHECK   the client checks retention for a recovery
 *	                             only through begin_recovery's retained_from,
 *	                             not again after fetching the page (F2: R2
 *	                             dropped)
 *	 CLIENT_SKIP_NOTED           the client may apply its noted buffer
 *	                             without its lowest record (e.g. 1, then 3
 *	                             of {1 2 3}): the close check must refuse it
 *	 REACH_MISMATCH_RUNNING      assert that no resolve_gap after a
 *	                             hash_mismatch of the current boundary leaves
 *	                             the checkpoint running (run to see it fail:
 *	                             running is reachable)
 *	 REACH_PAST_ACCEPTED         assert that no promote moves applied past an
 *	                             accepted loss (run to see it fail: after an
 *	                             operator accepts a retention loss, a
 *	                             recovery promotes past it; L1)
 *	 CHECK_MISMATCH_RESOLVES     assert that every such resolve (the last
 *	                             open gap, covering the boundary) leaves it
 *	                             running (F5)
 *	 ONLY=k                      check property k alone (numbers of README.md)
 *	 MUT_*                       deliberately broken variants, one per
 *	                             property (README.md, "Every property can
 *	                             fail"): MUT_IGNORE_RECOVERY_RECEIPTS,
 *	                             MUT_VERIFY_ALWAYS_TRUE,
 *	                             MUT_CLAIM_DROPS_BOUNDARY, MUT_NO_MAX,
 *	                             MUT_NO_FENCE, MUT_NO_CAS,
 *	                             MUT_EVENT_WHILE_REPLAYING,
 *	                             MUT_RESUME_FROM_CURSOR,
 *	                             MUT_REPORT_KEEPS_RUNNING,
 *	                             MUT_NO_CURSOR_RAISE, MUT_NO_RECEIPT,
 *	                             MUT_PROMOTE_NOT_IDEMPOTENT, and the
 *	                             pipelined worker's MUT_PIPE_* above
 *
 * Bounds (spin -DNAME=value): N, WORKERS, MAXALIVE, MAXLOSS, MAXEXP,
 * MAXATT, MAXOPS, as defined below.
 */

#ifndef N
#define N 3						/* positions 1..N (at most 4) */
#endif
#ifndef WORKERS
#define WORKERS 3
#endif
#ifndef MAXLOSS
#define MAXLOSS 1				/* source losses: retention trims + deletions */
#endif
#ifndef MAXEXP
#define MAXEXP 1				/* token expiries */
#endif
#ifndef MAXATT
#define MAXATT 2				/* recovery attempts, all workers together */
#endif
#ifndef MAXALIVE
#define MAXALIVE 2				/* workers alive at once (claimed, not stopped) */
#endif
#ifndef MAXOPS
#define MAXOPS 1				/* gaps the operator resolves */
#endif
#define MAXG 6					/* gap rows the model has room for */

/* -DONLY=k checks property k alone (to show that each one can fail) */
#ifdef ONLY
#define ON(k)		(ONLY == (k))
#else
#define ON(k)		true
#endif

#define B(p)		(1 << (p))
#define UPTO(b)		((B((b) + 1) - 1) & ~1)		/* positions 1..b */
#define RNG(f, b)	(UPTO(b) & ~UPTO(f))		/* positions in (f, b] */
/* the loss (applied, t] is accepted (store/gap.c sog_gap_loss_accepted) */
#define LOSS_ACCEPTED(t)	((t) > applied -> (RNG(applied, t) & ~gacc) == 0 : \
							 ((accok && acca == applied && acce >= (t)) || \
							  (applied < N && (gacc & B(applied + 1)) != 0)))
#define PRESENT(p)	((p) >= R && (del & B(p)) == 0)
#define SOURCE		(RNG(R - 1, N) & ~del)		/* what the source still holds */
#define TWO(m)		(((m) & ((m) - 1)) != 0)	/* at least two positions */

/*
 * The records a worker fetched after its last note while it still holds
 * noted ones (pend: page k+1) are kept apart: a boundary noted and not
 * applied is not replaced (boundary.c), so they are noted once the noted
 * ones are applied (the two-commit worker) or in the transaction that
 * applies them (the pipelined one).
 */

/* a worker's noted, unapplied records (without page k+1) */
#define NB			(buf & ~pend)

#define POP(m)		((((m) >> 1) & 1) + (((m) >> 2) & 1) + (((m) >> 3) & 1) + (((m) >> 4) & 1))

#if defined(REACH_MISMATCH_RUNNING) || defined(CHECK_MISMATCH_RESOLVES)
#define MMGHOST
#endif

mtype = {
	RUNNING, REPLAYING, FAILED,						/* checkpoint state */
	A_OPEN, A_FAILED, A_PROMOTED, A_LOST,			/* attempt state */
	OK, ALIGNED, GAP_REPLAY, FAIL_CLOSED,			/* claim verdicts */
	SG001, SG004, SG005, SG006, E55000, E22023,		/* SQLSTATEs */
	VTRUE, VFALSE, REFUSED, STOP, COVERED,
	PROMOTED, ALREADY, LOST, UNRESOLVED, PAGE_INCOMPLETE, EMPTY_NOT_BARRIER
};

/* ------------------------------------------------------------ database */

byte	gen;					/* generation */
byte	applied;				/* applied_position */
byte	cursor;					/* source_cursor */
byte	rbase;					/* read_base */
byte	rhash;					/* read_hash: the set it hashes */
bit		rhset;					/* read_hash IS NOT NULL */
bit		rcset;					/* read_count IS NOT NULL (the count is the
								 * size of the set rhash) */
mtype	st = RUNNING;			/* state */
byte	tok;					/* provider_token */
byte	rcpt;					/* positions with a receipt */

byte	gfrom[MAXG];			/* gap rows (from, to]; to 0 = NULL */
byte	gto[MAXG];
bit		gop[MAXG];				/* open (not resolved) */
bit		gret[MAXG];				/* reason 'retention' */
byte	ng;
byte	gopen;					/* open gaps */
byte	gsn;					/* bit i: gap i was detected at or after
								 * the read boundary was recorded (gap id >
								 * read_gap_floor; OLD_RESOLVE_SINCE_CLAIM:
								 * since the current claim or promote) */

typedef Attempt {				/* a row of sog.recovery */
	byte	w;					/* the worker that began it (ghost) */
	byte	g;					/* generation at begin */
	byte	tk;					/* the expired (base) token */
	mtype	s;
	byte	anc;				/* anchor, 0 = NULL */
	bit		incl;				/* anchor_inclusive */
	byte	last;				/* last_position */
	byte	adv;				/* advance_through */
	byte	rr;					/* retained_from, when an accepted loss
								 * lifted the retention refusal (else 0) */
};
Attempt	at[MAXATT];
byte	natt;

/*
 * store/gap.c sog_gap_loss_accepted: the loss (applied, end] is accepted
 * when resolved gaps join up over it (gacc: the positions they cover;
 * bounded ones of any reason, unbounded ones of reason retention), a chain
 * counting as one; the empty loss (applied, applied] by a resolved
 * retention gap (acca, acce] that starts at the applied position it was
 * resolved at, or by one that spans it (covers applied + 1).  The C code counts only those resolved as accepted_loss;
 * the model's operator has one resolution, so it counts every resolved
 * one: more recoveries open than in C, so what holds here holds there.
 */
byte	gacc;
bit		accok;
byte	acca;
byte	acce;

/* -------------------------------------------------------------- source */

byte	R = 1;					/* retained_from: positions < R are gone */
byte	del;					/* positions deleted (compaction, XDEL) */
byte	texp;					/* expired tokens */
byte	losses;
byte	expiries;
byte	ops;
byte	nclaimed;				/* workers that have claimed */
byte	alive;					/* workers claimed and not stopped */

/* -------------------------------------------------------------- ghosts */

byte	sink;					/* positions whose effect is in the sink */
byte	wit;					/* positions a committed note_read or halt
								 * reported to the guard */
byte	tlost;					/* positions retention removed before their
								 * effect was in the sink */
byte	gcov;					/* positions some gap row covers */
#ifdef REACH_PIPE_VERIFIED
bit		pipeb;					/* the read boundary was recorded by a
								 * pipelined sink transaction */
#endif
#ifdef MMGHOST
bit		mmcur;					/* a hash_mismatch gap was recorded for the
								 * current read boundary */
#endif

/* temporaries of one atomic step; not part of the state */
hidden byte xq, xp, xcnt, xi, xa, xtl, xtadv, xtr, xtnew, xta, xt, xvh,
			xbat, xfirst, xrr, xm, xrg, xra;
hidden byte xbnd, xcov, xmm, xsame, xgrow, xnocc;
hidden byte xcf, xe, xh, xpa, xsc, xsb, xsh, xshs, xscs, xack;
hidden mtype xrc;

/* print a set of positions, e.g. {1 3} */
inline pset(m)
{
	printf("{");
	xp = 1;
	do
	:: xp <= N ->
		if
		:: ((m) & B(xp)) != 0 -> printf(" %d", xp)
		:: else -> skip
		fi;
		xp++
	:: else -> break
	od;
	printf(" }");
	xp = 0
}

/* ----------------------------------------------------------- properties */

/*
 * Numbered as in README.md (-DONLY=k): 1 P1, 2 P2, 3 P3, 4 P4, 5 P5 (in
 * db_promote), 6 P6, 7 P7, 8 P8, 9 I1, 10 I2, 11 I3, 12 a retried promote
 * converges (in the worker), 13 a recorded read boundary is exact
 * (boundary_exact, and in db_pipe), 14 no false hash_mismatch (in
 * db_verify), 15 nothing acknowledged is lost (acknowledge).
 */

/* P1: no event in the sink twice */
inline sink_insert(p)
{
	assert(!ON(1) || (sink & B(p)) == 0);
	sink = sink | B(p)
}

/*
 * P3: applied_position never decreases.
 * P6: it moves only while no gap is unverified (replaying) or unresolved
 *     (an open gap): the temporal-skew rule.
 */
inline move_applied(v)
{
	assert(!ON(3) || v >= applied);
#ifndef NO_P6
	assert(!ON(6) || (st == RUNNING && gopen == 0));
#endif
	applied = v
}

/* P6 for effects: nothing is written above applied with a gap pending */
inline effects_allowed(m)
{
#ifndef NO_P6
	assert(!ON(6) || (m) == 0 || (st == RUNNING && gopen == 0))
#else
	skip
#endif
}

/* P4: a worker's step commits only under the current generation */
inline committed_by(g)
{
	assert(!ON(4) || g == gen)
}

/*
 * Checked in every state:
 * P2  no position the source delivered to a worker and the worker reported
 *     to the guard (note_read, halt) is at or below applied without its
 *     effect in the sink, unless a gap row covers it;
 * P7  no position that retention removed before it was applied is at or
 *     below applied without a gap row covering it;
 * P8  (completeness) every position at or below applied is in the sink or
 *     covered by a gap row, or is a record deleted from the source before
 *     any worker reported it (a guard cannot know records nobody fetched);
 * I1  state = failed_closed <=> an open gap;  I2  source_cursor >= applied;
 * I3  a receipt exists exactly where the sink has the effect.
 *
 * They hold for any client: with a worker that loses a noted record from
 * its buffer (CLIENT_DROP_NOTED) and the adversary's calls (ADVERSARY) too,
 * and nothing is exempt.  (1.1's model exempted the records an open read
 * boundary still held below the applied position: a boundary could then
 * stay partly applied across transactions, with a lost record below the
 * applied position that no call could apply any more.  Since such a
 * transaction does not commit, a noted record that is not applied always
 * lies above the applied position.)
 */
#define P2_REPORTED		(((wit & UPTO(applied)) & ~(sink | gcov)) == 0)
#define P7_RETENTION	(((tlost & UPTO(applied)) & ~(sink | gcov)) == 0)
#define P8_COMPLETE		((UPTO(applied) & ~(sink | gcov | (del & ~wit))) == 0)
#define I1_STATE		((st == FAILED) == (gopen > 0))
#define I2_CURSOR		(cursor >= applied)
#define I3_RECEIPTS		(rcpt == sink)

#define CHECKED(k, p)	(!ON(k) || (p))
#define ALL_HOLD	(CHECKED(2, P2_REPORTED) && CHECKED(7, P7_RETENTION) && \
					 CHECKED(8, P8_COMPLETE) && CHECKED(9, I1_STATE) && \
					 CHECKED(10, I2_CURSOR) && CHECKED(11, I3_RECEIPTS))

active proctype Monitor()
{
end:
	atomic {
		!ALL_HOLD ->
		assert(CHECKED(2, P2_REPORTED));
		assert(CHECKED(7, P7_RETENTION));
		assert(CHECKED(8, P8_COMPLETE));
		assert(CHECKED(9, I1_STATE));
		assert(CHECKED(10, I2_CURSOR));
		assert(CHECKED(11, I3_RECEIPTS))
	}
}

/* ------------------------------------------------------- shared moves */

inline clear_boundary()
{
#ifdef REACH_PIPE_VERIFIED
	pipeb = 0;
#endif
	cursor = applied;
	rbase = 0;
	rhash = 0;
	rhset = 0;
	rcset = 0;
#ifdef MMGHOST
	mmcur = 0;
#endif
	skip
}

/*
 * A resolved gap that no longer counts for resolve_gap (detected before
 * claimed_at) is never read again: gcov keeps what it covered.  Its row
 * is zeroed so that states differing only in it are one state.
 */
inline forget_dead_gaps()
{
	xi = 0;
	do
	:: xi < ng ->
		if
		:: !gop[xi] && (gsn & (1 << xi)) == 0 -> gfrom[xi] = 0; gto[xi] = 0; gret[xi] = 0
		:: else -> skip
		fi;
		xi++
	:: else -> break
	od;
	xi = 0
}

/* claimed_at moves (claim, promote): the gaps detected before no longer count */
inline new_claimed_at()
{
#ifdef OLD_RESOLVE_SINCE_CLAIM
	gsn = 0;
	forget_dead_gaps()
#else
	skip
#endif
}

/*
 * note_read and halt record a read boundary (read_base := applied) of the
 * records h (the hash of h, or its count).  The gaps that count for
 * resolve_gap are those detected from here on (functions/gap.c
 * sog_boundary_unverified: gap id > read_gap_floor).
 */
inline record_boundary(h)
{
#ifdef REACH_PIPE_VERIFIED
	pipeb = 0;
#endif
	cursor = wcur; rbase = applied; rhash = h; rcset = 1;
#ifdef CLIENT_COUNT_ONLY
	rhset = 0;					/* buffer_hash NULL, buffered_count given */
#else
	rhset = 1;
#endif
#ifndef OLD_RESOLVE_SINCE_CLAIM
	gsn = 0;
	forget_dead_gaps();
#endif
#ifdef MMGHOST
	mmcur = 0;
#endif
	wit = wit | (h)
}

/*
 * P13: a read boundary that a worker records is exact: its hash (or count)
 * is of exactly the records the worker holds, unapplied, in (read_base,
 * cursor] (held: its buffer as it is when the boundary commits).  What a
 * successor verifies is then what the worker held.
 */
inline boundary_exact(held)
{
	assert(!ON(13) || !(rhset || rcset) || cursor <= applied ||
		   rhash == ((held) & RNG(rbase, cursor)))
}

/*
 * store/receipt.c sog_boundary_applied: the records m applied in the boundary
 * are exactly the noted set (with a hash), or at least as many (count only)
 */
#define NOTED_OK(m)	((rhset && (m) == rhash) || (!rhset && POP(m) >= POP(rhash)))

/* note_read of cursor wcur and hash h is the boundary noted: nothing changes */
#define SAME_NOTE(h)	(wcur == cursor && ((rhset && (h) == rhash) || (!rhset && POP(h) == POP(rhash))))

/*
 * Where a gap that may hold a record of the read boundary starts
 * (boundary.c sog_boundary_base): at read_base when an apply entered the
 * boundary, else at the applied position.  Every gap the guard records
 * (claim, halt, verify_gap, report_gap, a recovery's refusal or stop)
 * starts there, and resolve_gap's cover check too.  Since a transaction
 * that leaves a boundary partly applied does not commit, the two differ
 * only inside such a transaction, or with OLD_PARTIAL_COMMIT (1.1).
 * OLD_GAP_FROM_APPLIED: verify_gap's gap from the applied position (before
 * F7's fix); OLD_COVER_FROM_APPLIED: resolve_gap's cover check from there
 * (1.1).
 */
#define BASE		((cursor > applied && rbase < applied) -> rbase : applied)

/*
 * OLD_BOUNDARY: 1.1's read boundary, every rule this version changed: a
 * note_read or halt replaced an open boundary (OLD_NOTE_REPLACES,
 * OLD_HALT_REPLACES), a transaction committed a partly applied one
 * (OLD_PARTIAL_COMMIT), report_gap, claim's no_buffer_hash and a
 * recovery's gaps started at the applied position (OLD_REPORT_FROM_APPLIED,
 * OLD_GAPS_FROM_APPLIED) and so did resolve_gap's cover check
 * (OLD_COVER_FROM_APPLIED), and a short recovery page of a boundary
 * without hash or count promoted (OLD_PROMOTE_NOHASH).
 */
#ifdef OLD_BOUNDARY
#define OLD_NOTE_REPLACES
#define OLD_HALT_REPLACES
#define OLD_PARTIAL_COMMIT
#define OLD_REPORT_FROM_APPLIED
#define OLD_GAPS_FROM_APPLIED
#define OLD_COVER_FROM_APPLIED
#define OLD_PROMOTE_NOHASH
#endif
#ifndef OLD_GAPS_FROM_APPLIED
#define GAP_FROM	BASE
#else
#define GAP_FROM	applied
#endif
#ifndef OLD_GAP_FROM_APPLIED
#define COVER_FROM	BASE
#else
#define COVER_FROM	applied
#endif

/* record a gap row (f, to] and fail closed */
inline add_gap(f, to)
{
	assert(ng < MAXG);			/* a bound of the model, not a property */
	gfrom[ng] = f;
	gto[ng] = to;
	gop[ng] = 1;
	gsn = gsn | (1 << ng);
	ng++;
	gopen++;
	if
	:: to > f -> gcov = gcov | RNG(f, to)
	:: else -> skip
	fi;
	st = FAILED
}

/*
 * An attempt concluded: of its row only the state is read again (and, for
 * a promoted one, its generation and base token, by P5); the rest is
 * zeroed so that states differing only in it are one state.
 */
inline conclude(k, how)
{
	at[k].s = how;
	at[k].w = 0; at[k].anc = 0; at[k].incl = 0; at[k].last = 0; at[k].adv = 0; at[k].rr = 0;
	if
	:: how != A_PROMOTED -> at[k].g = 0; at[k].tk = 0
	:: else -> skip
	fi
}

/* recovery.c sog_recovery_fail, inexact: up to the furthest known read */
inline fail_attempt(stoppos)
{
	xt = stoppos;
	if
	:: cursor > xt -> xt = cursor
	:: else -> skip
	fi;
	if
	:: xt <= applied -> xt = 0
	:: else -> skip
	fi;
	xcf = GAP_FROM;
	add_gap(xcf, xt);
	conclude(xa, A_FAILED)
}

/* conclude every open attempt but one as lost */
inline fence_open(except)
{
	xi = 0;
	do
	:: xi < natt ->
		if
		:: xi != except && at[xi].s == A_OPEN -> conclude(xi, A_LOST)
		:: else -> skip
		fi;
		xi++
	:: else -> break
	od
}

/* ------------------------------------------------------- SQL functions */

/* sog.claim(checkpoint_id, owner) */
inline db_claim()
{
	gen++;
	new_claimed_at();
	fence_open(255);
	mygen = gen;
	mytok = tok;
	if
	:: st == FAILED -> xrc = FAIL_CLOSED		/* the newest open gap's verdict */
	:: else ->
#ifdef MUT_CLAIM_DROPS_BOUNDARY
		clear_boundary();		/* the predecessor's boundary ignored */
#endif
		if
		:: cursor == applied -> st = RUNNING; xrc = ALIGNED
		:: cursor > applied && rhset ->
			st = REPLAYING; xrc = GAP_REPLAY; vfrom = rbase; vto = cursor
		:: cursor > applied && !rhset ->
			xcf = GAP_FROM; add_gap(xcf, cursor); xrc = FAIL_CLOSED	/* no_buffer_hash */
		:: cursor < applied ->
			add_gap(applied, 0); xrc = FAIL_CLOSED			/* divergence */
		fi
	fi;
	wapp = applied;							/* resume_from */
#ifdef MUT_RESUME_FROM_CURSOR
	wapp = cursor;							/* a client resuming from the cursor */
#endif
	wcur = wapp;
	rep = (xrc == GAP_REPLAY);
	printf("W%d claim -> generation %d, %e, resume_from %d, verify (%d, %d]\n",
		   me, gen, xrc, applied, vfrom, vto);
	stopf = (xrc == FAIL_CLOSED)
}

/*
 * sog.note_read(checkpoint_id, generation, cursor, hash of h, count of h):
 * its checks (apply.c sog_note_read), against the row as the caller's
 * transaction sees it, whose applied position is a (the committed one, or,
 * inside a sink transaction, the one its apply left): SG001, SG004 unless
 * running, SG005 for a cursor behind a, 22023 for a count larger than
 * cursor - a (util.c sog_check_buffered_count).  xrc = OK when it passes.
 */
inline note_check(a, h)
{
#ifdef MUT_NO_FENCE
	if
	:: false -> xrc = SG001
#else
	if
	:: mygen != gen -> xrc = SG001
#endif
	:: else ->
		if
		:: st != RUNNING -> xrc = SG004
		:: else ->
			if
			:: wcur < (a) -> xrc = SG005
			:: else ->
				if
				:: POP(h) > wcur - (a) -> xrc = E22023
#ifndef OLD_NOTE_REPLACES
				/*
				 * boundary.c sog_boundary_note: a boundary noted earlier
				 * and not applied (as the transaction sees it) is not
				 * replaced: the same note again changes nothing, a cursor
				 * that would move back is SG005, another note SG004
				 */
				:: POP(h) <= wcur - (a) && cursor > (a) ->
					if
					:: SAME_NOTE(h) -> xrc = OK; xsame = 1
					:: !SAME_NOTE(h) && wcur < cursor -> xrc = SG005
					:: !SAME_NOTE(h) && wcur >= cursor -> xrc = SG004
					fi
				:: POP(h) <= wcur - (a) && cursor <= (a) -> xrc = OK
#else
				:: else -> xrc = OK		/* 1.1: it replaced any boundary */
#endif
				fi
			fi
		fi
	fi
}

/*
 * note_read's write (boundary.c record_boundary): read_base := applied, or
 * the boundary cleared for a cursor at applied; nothing for the same note
 * again.  held: what the worker holds unapplied when this commits (P13).
 */
inline note_write(h, held)
{
	committed_by(mygen);
	if
	:: xsame -> skip
	:: !xsame && wcur == applied -> clear_boundary(); wit = wit | (h)
	:: !xsame && wcur != applied -> record_boundary(h)
	fi;
	xsame = 0;
	boundary_exact(held)
}

/* sog.note_read, committed alone (before the sink transaction) */
inline db_note_read()
{
	note_check(applied, buf);
	if
	:: xrc == OK -> note_write(buf, buf)
	:: else -> skip
	fi;
	printf("W%d note_read(gen %d, cursor %d, hash of ", me, mygen, wcur);
	pset(buf);
	printf(") -> %e\n", xrc);
	if
	:: xrc == OK -> noted = 1; pend = 0	/* the whole buffer is noted */
	:: else -> skip						/* the boundary before stays */
	fi
}

/*
 * The sink transaction: BEGIN; apply_batch(generation, xbat); INSERT the
 * effects of the events answered true; COMMIT.  apply_check decides
 * (xrc; the applied position it leaves, xta; the receipts, xtr; the new
 * events, xtnew) and writes nothing; apply_write writes.
 */
inline apply_check()
{
	xtnew = 0;
	if
	:: mygen != gen -> xrc = SG001
	:: else ->
		xta = applied; xtr = rcpt; xtnew = 0; xrc = OK; xq = 1;
		xbnd = ((rhset || rcset) && cursor > applied);	/* a read boundary is recorded */
		do
		:: xrc == OK && xq <= N ->
			if
			:: (xbat & B(xq)) != 0 ->
				if
				:: xq > xta ->
					if
					:: st != RUNNING -> xrc = SG004
					:: else ->
						/*
						 * boundary.c sog_boundary_check_close: the boundary closes
						 * at this event; the receipts in (read_base, applied]
						 * and this call's events in the boundary must be
						 * exactly the noted set (the hash), else SG004
						 */
						if
#ifndef OLD_CLOSE_CHECK
						:: xbnd && xq >= cursor ->
							xbnd = 0;
							xm = (rcpt & RNG(rbase, applied)) | (xbat & RNG(applied, xq - 1));
							if
							:: xq == cursor -> xm = xm | B(xq)
							:: else -> skip
							fi;
							/*
							 * the records this worker applied in it (xm), or
							 * those with the receipts a recovery attempt wrote
							 * above the applied position that this call does
							 * not deliver (the source may have trimmed them
							 * since; a worker that read them delivers them)
							 */
							if
#ifndef OLD_FOLD_ONE_WAY
							:: !NOTED_OK(xm) && !NOTED_OK(xm | (rcpt & RNG(applied, cursor))) -> xrc = SG004
#else
							:: !NOTED_OK(xm) -> xrc = SG004
#endif
							:: else -> skip
							fi
#else
						/* before: the count, before an event strictly above the cursor */
						:: xbnd && rcset && xq > cursor ->
							xbnd = 0;
							if
							:: POP(rcpt & RNG(rbase, applied)) + POP(xbat & RNG(applied, cursor)) < POP(rhash) ->
								xrc = SG004
							:: else -> skip
							fi
#endif
						:: else -> skip
						fi;
						if
						:: xrc != OK -> skip
#ifndef MUT_IGNORE_RECOVERY_RECEIPTS
						:: xrc == OK && (xtr & B(xq)) != 0 -> xta = xq	/* written by a recovery: false */
						:: xrc == OK && (xtr & B(xq)) == 0 ->
#else
						:: xrc == OK ->
#endif
							xtr = xtr | B(xq); xtnew = xtnew | B(xq); xta = xq
						fi
					fi
				:: else ->
					if
					:: (xtr & B(xq)) != 0 -> skip			/* duplicate: false */
					:: else -> xrc = SG005					/* out of order */
					fi
				fi
			:: else -> skip
			fi;
			xq++
		:: else -> break
		od;
#ifndef OLD_PARTIAL_COMMIT
		/*
		 * the commit check (boundary.c sog_boundary_commit_check): at
		 * COMMIT the applied position must not lie strictly inside the
		 * boundary; the whole transaction rolls back
		 */
		if
		:: xrc == OK && !xnocc && xta > applied && xta < cursor -> xrc = SG004
		:: else -> skip
		fi
#else
		skip
#endif
	fi
}

/* apply_batch's writes, after apply_check answered OK */
inline apply_write()
{
	committed_by(mygen);
	effects_allowed(xtnew);
#ifdef MUT_NO_RECEIPT
	xtr = rcpt;
#endif
	rcpt = xtr;
	if
	:: xta > applied ->
		move_applied(xta);
		if
		:: cursor <= applied -> clear_boundary()
		:: else -> skip
		fi
	:: else -> skip
	fi;
	xq = 1;
	do
	:: xq <= N ->
		if
		:: (xtnew & B(xq)) != 0 -> sink_insert(xq)
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od
}

/*
 * P15: nothing acknowledged to the source is ever lost.  A worker
 * acknowledges the records of a sink transaction (m) once it committed;
 * each must then have its effect in the sink (which never loses one).
 */
inline acknowledge(m)
{
	assert(!ON(15) || ((m) & ~sink) == 0)
}

inline apply_print()
{
	printf("W%d apply_batch(gen %d, ", me, mygen);
	pset(xbat);
	printf(") -> %e, new ", xrc);
	pset(xtnew);
	printf(", applied %d\n", applied)
}

/* the sink transaction of a page whose read boundary is already durable */
inline db_apply()
{
	apply_check();
	if
	:: xrc == OK -> apply_write()
	:: else -> skip
	fi;
	apply_print();
	if
	:: xrc == OK ->
		acknowledge(xbat);
		wapp = applied;
		buf = buf & ~xbat;
		dupp = 0;
		noted = noted && (NB != 0);
		if
		:: !noted -> pend = 0	/* page k+1 (if fetched) is not noted */
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* the pipelined sink transaction's SQL (see db_pipe below) */
inline pipe_tx()
{
#ifndef MUT_PIPE_NOTE_BEFORE_APPLY
	apply_check();
	if
	:: xrc == OK ->
		xpa = (xta > applied -> xta : applied);	/* applied after apply_batch */
		note_check(xpa, xh);
		if
		:: xrc == OK ->
			apply_write();
			note_write(xh, buf & ~xbat);
			/* P13: the successor verifies exactly page k+1's unapplied records */
			assert(!ON(13) || cursor <= applied || rbase == applied);
#ifdef REACH_PIPE_VERIFIED
			pipeb = (cursor > applied);
#endif
			skip
		:: else -> skip
		fi
	:: else -> skip
	fi
#else
	note_check(applied, xh);
	if
	:: xrc == OK ->
		/* apply_batch decides against the boundary the note just recorded */
		xsc = cursor; xsb = rbase; xsh = rhash; xshs = rhset; xscs = rcset;
		if
		:: wcur == applied -> cursor = applied; rbase = 0; rhash = 0; rhset = 0; rcset = 0
		:: else ->
			cursor = wcur; rbase = applied; rhash = xh; rcset = 1;
#ifdef CLIENT_COUNT_ONLY
			rhset = 0
#else
			rhset = 1
#endif
		fi;
		apply_check();
		cursor = xsc; rbase = xsb; rhash = xsh; rhset = xshs; rcset = xscs;
		if
		:: xrc == OK ->
			note_write(xh, buf);
			apply_write()
		:: else -> skip
		fi
	:: else -> skip
	fi
#endif
}

/*
 * The pipelined sink transaction (PIPELINED): BEGIN; apply_batch(page k:
 * xbat, from the noted records); INSERT the rows answered true;
 * note_read(cursor of page k+1, hash of the records above the applied
 * position page k leaves, their count); commit_page; COMMIT.  The client
 * computes that hash before the transaction, from the applied position it
 * expects page k to leave (xe: its own applied position, or the last
 * record of the batch above it); note_read records read_base := the
 * applied position in the transaction, after apply_batch.  Any error rolls
 * back both: page k's rows and page k+1's note.
 *
 * MUT_PIPE_HASH_FROM_BEFORE: the hash from the applied position before
 * page k (page k's records included).  MUT_PIPE_NOTE_BEFORE_APPLY:
 * note_read before apply_batch in the same transaction (read_base := the
 * applied position before page k; the hash of page k+1 alone).
 */
inline db_pipe()
{
	xe = wapp;
	xq = 1;
	do
	:: xq <= N ->
		if
		:: (xbat & B(xq)) != 0 && xq > xe -> xe = xq
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od;
	xh = (buf & ~xbat) & ~UPTO(xe);		/* page k+1's buffer hash */
#ifdef MUT_PIPE_HASH_FROM_BEFORE
	xh = buf & ~UPTO(wapp);
#endif
	pipe_tx();
	printf("W%d sink transaction: apply_batch(gen %d, ", me, mygen);
	pset(xbat);
	printf("), new ");
	pset(xtnew);
	printf(", then note_read(cursor %d, hash of ", wcur);
	pset(xh);
	printf(") -> %e; applied %d, read boundary (%d, %d]\n", xrc, applied, rbase, cursor);
	if
	:: xrc == OK ->
#ifdef MUT_PIPE_ACK_EARLY
		acknowledge(xbat | pend);	/* page k+1 too, before its own commit */
#else
		acknowledge(xbat);
#endif
		wapp = applied;
		buf = buf & ~xbat;
		dupp = 0;
		noted = 1;						/* page k+1 is noted now */
		pend = 0
	:: else -> skip						/* rolled back: nothing changed */
	fi;
	xe = 0; xh = 0; xpa = 0
}

/*
 * sog.halt(checkpoint_id, generation, cursor, hash, count), with what the
 * worker holds (h, its cursor wcur), in a transaction whose applied
 * position is a (the committed one, or the one an apply before it in the
 * same transaction left: ADVERSARY).  boundary.c sog_boundary_halt: a
 * boundary noted earlier and not applied is handed over as it was noted
 * (a halt at a cursor below it is SG005); OLD_HALT_REPLACES: the halt's
 * own boundary replaced it (1.1).
 */
inline halt_tx(a, h)
{
	if
	:: mygen != gen -> xrc = SG001
	:: else ->
		xrc = OK;
		if
		:: st == RUNNING ->
			if
#ifndef OLD_HALT_REPLACES
			:: cursor > (a) && wcur < cursor -> xrc = SG005
			:: cursor > (a) && wcur >= cursor -> skip	/* kept as noted */
			:: cursor <= (a) ->
#else
			:: true ->
#endif
				if
				:: wcur == (a) -> clear_boundary()
				:: else ->
					record_boundary(h);
					boundary_exact(h);
					if
					:: !rhset -> add_gap(applied, cursor)	/* no_buffer_hash */
					:: else -> skip
					fi
				fi
			fi
		:: else -> skip			/* a gap is pending: keep the boundary */
		fi;
		if
		:: xrc == OK -> committed_by(mygen)
		:: else -> skip
		fi
	fi
}

inline db_halt()
{
	halt_tx(applied, buf);
	printf("W%d halt(gen %d, cursor %d, hash of ", me, mygen, wcur);
	pset(buf);
	printf(") -> %e\n", xrc)
}

/*
 * Re-fetch (verify_from, verify_to] by positional seek, hash it, and call
 * sog.verify_gap(checkpoint_id, generation, replay_hash).
 */
inline db_verify()
{
	xvh = RNG(vfrom, vto) & SOURCE;
	if
	:: mygen != gen -> xrc = SG001
	:: else ->
		if
		:: st != REPLAYING || !rhset -> xrc = E55000
		:: else ->
			committed_by(mygen);
#ifdef MUT_VERIFY_ALWAYS_TRUE
			if
			:: true -> st = RUNNING; xrc = VTRUE
#else
			if
			:: xvh == rhash -> st = RUNNING; xrc = VTRUE;
#ifdef REACH_PIPE_VERIFIED
				/* fails iff reachable: a successor verifies a pipelined note */
				assert(!pipeb);
#endif
				skip
#endif
			:: else ->
				/*
				 * P14: no false alarm.  The re-fetch differs from the noted
				 * hash only when a record the worker noted is gone from the
				 * source (a boundary that says more or less than what the
				 * worker held would fail a successor that lost nothing).
				 */
				assert(!ON(14) || (rhash & ~UPTO(applied) & ~SOURCE) != 0);
				xcf = COVER_FROM;
				add_gap(xcf, cursor); xrc = VFALSE				/* hash_mismatch */
#ifdef MMGHOST
				mmcur = 1;
#endif
				skip
			fi
		fi
	fi;
	printf("W%d re-fetch (%d, %d] = ", me, vfrom, vto);
	pset(xvh);
	printf("; verify_gap(gen %d) -> %e\n", mygen, xrc);
	if
	:: xrc == VTRUE ->
		rep = 0;
		buf = xvh & ~UPTO(wapp);
		wcur = vto;
		noted = (buf != 0);
		vfrom = 0;
		vto = 0
	:: else -> skip
	fi;
	stopf = (xrc == VFALSE || xrc == E55000)
}

/*
 * The rest of an open hashed or counted boundary beyond a loss through
 * `to` can no longer be verified (the hash chains through the lost
 * records): boundary.c sog_boundary_record_rest records it as an
 * unverified gap (to, cursor].
 */
inline boundary_rest(to)
{
#ifndef OLD_NO_REST
	if
	:: (rhset || rcset) && cursor > applied && to > applied && cursor > (to) -> add_gap(to, cursor)
	:: else -> skip
	fi
#else
	skip
#endif
}

/*
 * sog.report_gap(checkpoint_id, generation, lossto, 'retention') in a
 * transaction whose applied position is a: functions/gap.c.  The gap starts at
 * the boundary's base, moved past the open gaps that already account for
 * the records above it (store/gap.c sog_gap_losses_through; the model
 * forgets resolved gaps, so it records more than C, never less); the rest
 * of the boundary beyond it is unverified.  OLD_REPORT_FROM_APPLIED: 1.1,
 * from the applied position, a new gap unless one open gap covers it all.
 */
inline report_tx(a)
{
	if
	:: mygen != gen -> xrc = SG001
	:: else ->
		if
		:: lossto <= (a) -> xrc = E22023
		:: else ->
			xrc = OK;
#ifndef OLD_REPORT_FROM_APPLIED
			xcf = ((cursor > (a) && rbase < (a)) -> rbase : (a));
			xgrow = 1;
			do
			:: xgrow && xrc == OK ->
				xgrow = 0;
				xi = 0;
				do
				:: xi < ng ->
					if
					:: gop[xi] && gfrom[xi] <= xcf && gto[xi] == 0 -> xrc = COVERED
					:: gop[xi] && gfrom[xi] <= xcf && gto[xi] > xcf -> xcf = gto[xi]; xgrow = 1
					:: else -> skip
					fi;
					xi++
				:: else -> break
				od;
				if
				:: xcf >= lossto -> xrc = COVERED
				:: else -> skip
				fi
			:: else -> break
			od;
			xgrow = 0;
#else
			xcf = (a);
			xi = 0;
			do
			:: xi < ng ->
				if
				:: gop[xi] && gfrom[xi] <= xcf && (gto[xi] == 0 || gto[xi] >= lossto) ->
					xrc = COVERED						/* to NULL: unbounded */
				:: else -> skip
				fi;
				xi++
			:: else -> break
			od;
#endif
			if
			:: xrc == OK ->
				add_gap(xcf, lossto);
				gret[ng - 1] = 1;
				boundary_rest(lossto);
#ifdef MUT_REPORT_KEEPS_RUNNING
				st = RUNNING;			/* forgets to fail closed */
#endif
				skip
			:: else -> skip		/* the gaps recorded cover it already */
			fi
		fi
	fi
}

inline db_report()
{
	report_tx(applied);
	if
	:: xrc == OK || xrc == COVERED -> committed_by(mygen)
	:: else -> skip
	fi;
	printf("W%d report_gap(gen %d, to %d, retention) -> %e\n", me, mygen, lossto, xrc)
}

/*
 * sog.begin_recovery(checkpoint_id, generation, expired_token, scope,
 *                    anchor, anchor_inclusive, retained_from := xrr)
 * The provider is Kafka-like: it seeks inclusively, has no late arrivals
 * and does not backfill (no finality needed); one scope; no pruning.
 */
#define LOSS_END	(xrr - 1 < applied -> applied : xrr - 1)

inline db_begin()
{
	if
	:: mygen != gen -> xrc = SG001
	:: else ->
		if
		:: mytok != tok -> xrc = SG006
		:: else ->
			committed_by(mygen);
			xa = natt;
			natt++;
			at[xa].w = me; at[xa].g = gen; at[xa].tk = tok; at[xa].s = A_OPEN;
			at[xa].anc = anc; at[xa].incl = incl;
			att_ = xa + 1;
			if
			:: incl -> xfirst = anc
			:: else -> xfirst = anc + 1
			fi;
			xt = LOSS_END;
			if
			:: xrr > xfirst && !LOSS_ACCEPTED(xt) ->
				/*
				 * retention: (applied, retained_from - 1]; C starts it next to
				 * the losses on record (report_gap's rule), the model at the
				 * base: it records more than C, never less
				 */
				xcf = GAP_FROM;
				add_gap(xcf, xt);
				gret[ng - 1] = 1;
				boundary_rest(xt);
				conclude(xa, A_FAILED);
				xrc = REFUSED
			:: else ->
				if
				:: xrr > xfirst -> at[xa].rr = xrr		/* an accepted loss lifts it (L1) */
				:: else -> skip
				fi;
				if
				:: anc > applied -> fail_attempt(0); xrc = REFUSED	/* coverage_unproven */
				:: else -> xrc = OK
				fi
			fi
		fi
	fi;
	printf("W%d begin_recovery(gen %d, token %d, anchor %d, inclusive %d, retained_from %d) -> %e\n",
		   me, mygen, mytok, anc, incl, xrr, xrc);
	if
	:: xrc == SG001 || xrc == SG006 -> anc = 0; incl = 0	/* no attempt */
	:: else -> skip
	fi;
	stopf = (xrc == REFUSED)
}

/*
 * The page's sink transaction: BEGIN; recovery_event(attempt, p, digest)
 * for each fetched event in order; INSERT the effects answered 'apply';
 * COMMIT.  A stop ('coverage_gap', 'unverifiable') commits with the events
 * before it; an error (SG001, SG004, 55000) rolls the page back.
 */
inline db_page_tx()
{
	xa = att_ - 1;
	if
	:: at[xa].s != A_OPEN -> xrc = E55000
	:: else ->
		if
		:: at[xa].g != gen -> xrc = SG001
		:: else -> xrc = OK
		fi
	fi;
	xtl = at[xa].last; xtadv = at[xa].adv; xtr = rcpt; xtnew = 0; xt = 0; xq = 1;
	do
	:: xrc == OK && xq <= N ->
		if
		:: (pg & B(xq)) != 0 ->
			if
			:: xtl != 0 && xq <= xtl -> xrc = STOP; xt = xq			/* coverage_gap */
			:: else ->
				if
				:: xtl == 0 && !at[xa].incl && at[xa].anc != 0 && xq <= at[xa].anc ->
					xrc = STOP; xt = xq								/* coverage_gap */
				:: else ->
					if
					:: xtl == 0 && at[xa].incl && at[xa].anc <= applied && xq != at[xa].anc &&
					   !(at[xa].rr != 0 && xq >= at[xa].rr) ->		/* recovery.c anchor_gone_accepted */
						xrc = STOP; xt = xq							/* coverage_gap */
					:: else ->
						if
						:: xq <= applied ->
							if
							:: (xtr & B(xq)) != 0 -> xtl = xq		/* verified */
							:: else -> xrc = STOP; xt = xq			/* unverifiable */
							fi
						:: else ->
#if defined(BUG_RECOVERY_PAST_VERIFY) || defined(MUT_EVENT_WHILE_REPLAYING)
							if
							:: st == FAILED -> xrc = SG004
#else
							if
							:: st != RUNNING -> xrc = SG004
#endif
							:: else ->
								if
								:: (xtr & B(xq)) != 0 -> xtl = xq; xtadv = xq	/* duplicate */
								:: else ->
									xtr = xtr | B(xq); xtnew = xtnew | B(xq);
									xtl = xq; xtadv = xq						/* apply */
								fi
							fi
						fi
					fi
				fi
			fi
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od;
	if
	:: xrc == OK || xrc == STOP ->
		committed_by(mygen);
		effects_allowed(xtnew);
		rcpt = xtr;
		at[xa].last = xtl;
		at[xa].adv = xtadv;
		xq = 1;
		do
		:: xq <= N ->
			if
			:: (xtnew & B(xq)) != 0 -> sink_insert(xq)
			:: else -> skip
			fi;
			xq++
		:: else -> break
		od;
		/* the page's events before a stop committed: acknowledged (P15) */
		if
		:: xrc == STOP -> xack = pg & UPTO(xt - 1)
		:: else -> xack = pg
		fi;
		acknowledge(xack);
		xack = 0;
		if
		:: xrc == STOP -> fail_attempt(xt)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	printf("W%d recovery page ", me);
	pset(pg);
	printf(" (attempt %d) -> %e, 'apply' for ", att_, xrc);
	pset(xtnew);
	printf("\n");
	pgc = (xrc == OK);
	stopf = (xrc == STOP)
}

/*
 * boundary.c sog_boundary_promotable: a page whose advance reaches or passes
 * the read cursor closes the boundary, and the receipts in (read_base,
 * cursor] must then be exactly the noted set; a page that ends inside the
 * boundary (applied < advance < cursor) cannot be checked and does not
 * promote (F4), with or without a hash (OLD_PROMOTE_NOHASH: 1.1 promoted a
 * short page of a boundary without hash or count).  OLD_PROMOTE_PARTIAL:
 * such a page promoted, leaving the boundary to be checked when it closes;
 * OLD_PROMOTE: no check at all (F1).
 */
#if defined(OLD_PROMOTE)
#define PAGE_CLOSES(a)	true
#elif !defined(OLD_PROMOTE_PARTIAL) && !defined(OLD_PROMOTE_NOHASH)
#define PAGE_CLOSES(a)	(cursor <= applied || at[a].adv <= applied || \
						 (at[a].adv >= cursor && (!(rhset || rcset) || NOTED_OK(rcpt & RNG(rbase, cursor)))))
#elif !defined(OLD_PROMOTE_PARTIAL)
#define PAGE_CLOSES(a)	(!(rhset || rcset) || cursor <= applied || at[a].adv <= applied || \
						 (at[a].adv >= cursor && NOTED_OK(rcpt & RNG(rbase, cursor))))
#else
#define PAGE_CLOSES(a)	(!(rhset || rcset) || cursor <= applied || at[a].adv < cursor || \
						 NOTED_OK(rcpt & RNG(rbase, cursor)))
#endif

/* sog.promote(recovery_id, successor_token, page_last) */
inline db_promote()
{
	xa = att_ - 1;
	if
#ifndef MUT_PROMOTE_NOT_IDEMPOTENT
	:: at[xa].s == A_PROMOTED -> xrc = ALREADY
#else
	:: false -> skip
#endif
	:: else ->
		if
		:: at[xa].s == A_LOST -> xrc = LOST
		:: else ->
			if
#if defined(BUG_RECOVERY_PAST_VERIFY)
			:: at[xa].s == A_FAILED || gopen > 0 || !PAGE_CLOSES(xa) -> xrc = UNRESOLVED
#else
			:: at[xa].s == A_FAILED || gopen > 0 || st != RUNNING || !PAGE_CLOSES(xa) ->
				xrc = UNRESOLVED
#endif
			:: else ->
				if
				:: at[xa].last != pglast -> xrc = PAGE_INCOMPLETE
				:: else ->
					if
					:: pglast == 0 -> xrc = EMPTY_NOT_BARRIER
					:: else ->
#ifdef MUT_NO_CAS
						if
						:: true ->
#else
						if
						:: gen == at[xa].g && tok == at[xa].tk ->
#endif
							committed_by(mygen);
							/* P5: no attempt with this (generation, base token) promoted yet */
							xi = 0;
							do
							:: xi < natt ->
								assert(!ON(5) || at[xi].s != A_PROMOTED ||
									   at[xi].g != at[xa].g || at[xi].tk != at[xa].tk);
								xi++
							:: else -> break
							od;
							tok = at[xa].tk + 1;
#ifdef MUT_NO_MAX
							if
							:: at[xa].adv != 0 -> move_applied(at[xa].adv)
#else
							if
							:: at[xa].adv > applied -> move_applied(at[xa].adv)
#endif
							:: else -> skip
							fi;
#ifndef MUT_NO_CURSOR_RAISE
							if
							:: cursor <= applied -> clear_boundary()
							:: else -> skip
							fi;
#endif
#ifdef BUG_RECOVERY_PAST_VERIFY
							if
							:: st == REPLAYING -> st = RUNNING
							:: else -> skip
							fi;
#endif
							gen++;
							new_claimed_at();
#ifndef MUT_NO_CAS
							fence_open(xa);
#endif
#ifndef MUT_PROMOTE_NOT_IDEMPOTENT
#ifdef REACH_PAST_ACCEPTED
							/* fails iff reachable: a lifted refusal promotes */
							assert(!(at[xa].rr != 0 && applied > acca));
#endif
							conclude(xa, A_PROMOTED);
#else
							at[xa].s = A_PROMOTED;
#endif
							xrg = gen;			/* the promotion's answer */
							xra = applied;
							xrc = PROMOTED
						:: else ->
							conclude(xa, A_LOST);
							xrc = LOST
						fi
					fi
				fi
			fi
		fi
	fi;
	printf("W%d promote(attempt %d, page_last %d) -> %e; generation %d, applied %d\n",
		   me, att_, pglast, xrc, gen, applied)
}

#ifdef ADVERSARY				/* every wrong call below */
#define ADV_SAVEPOINT
#define ADV_BACK
#define ADV_RENOTE
#define ADV_HALT_INSIDE
#define ADV_REPORT_INSIDE
#endif
#if defined(ADV_SAVEPOINT) || defined(ADV_BACK) || defined(ADV_RENOTE) || \
	defined(ADV_HALT_INSIDE) || defined(ADV_REPORT_INSIDE)
#define ADV
#endif

#ifdef ADV
/* ------------------------------------------------------- the adversary */

/*
 * ADVERSARY: the calls a plausible client makes wrongly, each
 * one whole transaction.  The guard must answer each with an error that
 * changes nothing, or every record must stay applied or on a gap row.
 *
 * adv_savepoint: page k's apply ran in a savepoint that the client rolled
 * back (JDBC autosave, a nested transaction block); believing page k
 * applied, the client drops it from its buffer and, in the same
 * transaction, notes page k+1 (hashed from the position page k would
 * leave); COMMIT, then it acknowledges page k.
 */
inline adv_savepoint()
{
	xh = pend;
	xpa = wapp;
	xq = 1;
	do
	:: xq <= N ->
		if
		:: (NB & B(xq)) != 0 -> xpa = xq		/* where page k would leave it */
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od;
	note_check(applied, xh);
	if
	:: xrc == OK ->
		note_write(xh, xh);
		acknowledge(NB);
		buf = pend; pend = 0; noted = 1
	:: else -> skip
	fi;
	printf("W%d savepoint: page k's apply rolled back, then note_read(cursor %d, hash of ", me, wcur);
	pset(xh);
	printf(") -> %e\n", xrc);
	xh = 0; xpa = 0
}

/*
 * adv_back: a read cursor moved back: note_read (what = 0) or halt (what
 * = 1) at the worker's applied position, as if it held nothing, while it
 * holds noted records (it forgets them: a source that forgets what it
 * delivered, a client that lost its buffer).
 */
inline adv_back(what)
{
	xsc = wcur;
	wcur = wapp;
	if
	:: what == 0 ->
		note_check(applied, 0);
		if
		:: xrc == OK -> note_write(0, 0)
		:: else -> skip
		fi
	:: else -> halt_tx(applied, 0)
	fi;
	if
	:: what == 0 -> printf("W%d note_read at its applied position %d, holding nothing -> %e\n", me, wapp, xrc)
	:: else -> printf("W%d halt at its applied position %d, holding nothing -> %e\n", me, wapp, xrc)
	fi;
	if
	:: xrc == OK -> buf = 0; pend = 0; noted = 0; dupp = 0
	:: else -> wcur = xsc
	fi;
	xsc = 0
}

/*
 * adv_renote: note_read of what the worker holds while that boundary is
 * noted and not applied (after verify_gap, or again); with a record lost
 * from its buffer (CLIENT_DROP_NOTED) it is not the boundary noted.
 */
inline adv_renote()
{
	note_check(applied, buf);
	if
	:: xrc == OK -> note_write(buf, buf)
	:: else -> skip
	fi;
	printf("W%d note_read again (cursor %d, hash of ", me, wcur);
	pset(buf);
	printf(") -> %e\n", xrc)
}

/*
 * adv_apply_then: BEGIN; apply_batch(1 of the 2 or more noted records);
 * then halt with what the worker still holds (what = 1), or report_gap of
 * the rest of its read as lost (what = 2); COMMIT.  The commit check sees
 * the boundary as the whole transaction leaves it.
 */
inline adv_apply_then(what)
{
	xnocc = 1;
	apply_check();
	xnocc = 0;
	if
	:: xrc == OK ->
		xsc = cursor; xsb = rbase;
		if
		:: what == 1 ->
#ifndef OLD_HALT_REPLACES
			if
			:: wcur < cursor -> xrc = SG005
			:: else -> skip			/* the noted boundary is kept */
			fi
#else
			xsc = wcur; xsb = xta	/* its own boundary (applied, cursor] */
#endif
		:: else -> skip				/* report_gap: the boundary stays */
		fi;
#ifndef OLD_PARTIAL_COMMIT
		if
		:: xrc == OK && xsc > xta && xsb < xta -> xrc = SG004	/* COMMIT refused */
		:: else -> skip
		fi;
#endif
		if
		:: xrc == OK ->
			apply_write();
			acknowledge(xbat);
			wapp = applied;
			buf = buf & ~xbat;
			dupp = 0;
			if
			:: what == 1 -> halt_tx(applied, buf)
			:: else -> lossto = wcur; report_tx(applied); lossto = 0
			fi;
			committed_by(mygen)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	printf("W%d sink transaction: apply_batch(gen %d, ", me, mygen);
	pset(xbat);
	if
	:: what == 1 -> printf("), then halt -> %e; applied %d, read boundary (%d, %d]\n", xrc, applied, rbase, cursor)
	:: else -> printf("), then report_gap of the rest -> %e; applied %d, read boundary (%d, %d]\n", xrc, applied, rbase, cursor)
	fi;
	xsc = 0; xsb = 0
}
#endif

/* ------------------------------------------------------------- fetches */

/* the next lim records after the read cursor, by the token */
inline fetch(lim, redeliver)
{
	xfirst = wcur + 1;
	if
	:: R > xfirst && (RNG(xfirst - 1, R - 1) & ~gcov) != 0 ->
		lossto = R - 1		/* post-fetch check: records we needed are gone
							 * (retained_from > cursor + 1), and no gap row
							 * (sog.gaps) covers them yet */
	:: else ->
		xq = xfirst; xcnt = 0; xm = buf;
		do
		:: xq <= N && xcnt < lim ->
			if
			:: PRESENT(xq) -> buf = buf | B(xq); wcur = xq; xcnt++
			:: else -> skip				/* deleted: the source skips it */
			fi;
			xq++
		:: else -> break
		od;
		if
		:: xcnt > 0 && noted -> pend = pend | (buf & ~xm)	/* page k+1 */
		:: else -> skip
		fi;
		xm = 0;
		if
		:: redeliver && wapp != 0 && wapp == xfirst - 1 && PRESENT(wapp) -> dupp = wapp
		:: else -> skip
		fi
	fi;
	printf("W%d fetch -> buffer ", me);
	pset(buf);
	printf(", read cursor %d, redelivered %d, loss through %d\n", wcur, dupp, lossto)
}

/* the recovery page: the first lim records from the anchor, by seek */
inline fetch_page(lim)
{
	if
	:: incl -> xfirst = anc
	:: else -> xfirst = anc + 1
	fi;
#ifndef CLIENT_NO_POSTFETCH_CHECK
	if
	:: R > xfirst && (RNG(wapp, R - 1) & ~gcov) != 0 -> lossto = R - 1
	:: else -> skip
	fi;
#endif
	xq = xfirst; xcnt = 0;
	do
	:: xq <= N && xcnt < lim ->
		if
		:: PRESENT(xq) -> pg = pg | B(xq); pglast = xq; xcnt++
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od;
	pgf = 1;
	printf("W%d fetch recovery page from %d -> ", me, xfirst);
	pset(pg);
	printf(", loss through %d\n", lossto)
}

/* the batch of a sink transaction: the first lim noted records */
inline batch(lim)
{
	xbat = 0; xcnt = 0; xq = 1;
	do
	:: noted && xq <= N && xcnt < lim ->
		if
		:: (NB & B(xq)) != 0 -> xbat = xbat | B(xq); xcnt++
		:: else -> skip
		fi;
		xq++
	:: else -> break
	od;
	if
	:: dupp != 0 -> xbat = xbat | B(dupp)	/* a redelivered, applied record */
	:: else -> skip
	fi
}

/* ----------------------------------------------------------- the worker */

/*
 * A zombie is a worker that was fenced and does not know it: nothing in
 * its loop changes when it is fenced, it goes on calling, and only the
 * database refuses it (SG001, 55000, 'lost').
 */
#define GO			(lossto == 0)
#define MINE(k)		(natt > (k) && at[k].s == A_OPEN && at[k].w == me && att_ != (k) + 1)
#define CAN_READ	(GO && !rep && att_ == 0 && (texp & B(mytok)) == 0 && wcur < N)
#define CAN_APPLY	(GO && !rep && ((noted && NB != 0) || dupp != 0))
#define CAN_NOTE	(GO && !rep && buf != 0 && (!noted || pend != 0))
#define CAN_HALT	(GO && att_ == 0)
#ifdef PIPELINED
#define CAN_PIPE	(GO && !rep && noted && pend != 0)
#endif
#define CAN_BEGIN	(GO && att_ == 0 && (texp & B(mytok)) != 0 && natt < MAXATT)

proctype Worker(byte me)
{
	byte	mygen, mytok, wapp, wcur, buf, dupp, att_, pg, pglast, anc,
			vfrom, vto, lossto;
	bit		rep, noted, incl, pgf, pgc, stopf;
	byte	pend;	/* page k+1: records fetched since the last note, while
					 * the records before them are noted (noted = 1) */

	/*
	 * Workers are identical, so they claim in the order of their numbers:
	 * any other order is the same behaviour with the names permuted.
	 */
	atomic {
		d_step {
			nclaimed == me - 1 && alive < MAXALIVE;
			nclaimed++;
			alive++;
			db_claim()
		};
		if
		:: stopf -> goto done			/* failed closed: the operator's turn */
		:: else -> skip
		fi
	};
	do
	:: goto done						/* crash, or stop */

	/* a loss seen while reading: report it, then stop (failed closed) */
	:: d_step { lossto != 0; db_report() }; goto done

	/* read by the token: 1 or 2 records; the source may redeliver */
	:: d_step { CAN_READ; fetch(1, 0) }
	:: d_step { CAN_READ; fetch(2, 0) }
	:: d_step { CAN_READ && wapp != 0 && wcur == wapp; fetch(1, 1) }

	/*
	 * note_read commits before the sink transaction that applies (the
	 * pipelined worker: the first page after claim, verify, a rollback or
	 * an idle source; or any page, the two-commit way)
	 */
	:: d_step { CAN_NOTE; db_note_read() }

	:: d_step { CAN_APPLY; batch(1); db_apply() }
	:: d_step { CAN_APPLY && noted && TWO(NB); batch(2); db_apply() }
#ifdef PIPELINED
	/*
	 * the pipelined sink transaction: page k (1 or 2 of the noted records,
	 * plus a redelivered one), then page k+1's note, one commit
	 */
	:: d_step { CAN_PIPE; batch(1); db_pipe() }
	:: d_step { CAN_PIPE && TWO(NB); batch(2); db_pipe() }
#endif
#ifdef CLIENT_DROP_NOTED
	/*
	 * a client bug: one noted record lost from the buffer (never applied);
	 * the guard must refuse (SG004) the apply that closes the boundary,
	 * or a successor's verify must, unless a note replaced the boundary
	 * first (R5 forbids that)
	 */
	:: d_step { GO && noted && TWO(NB) && (NB & B(1)) != 0; buf = buf & ~B(1); printf("W%d drops record 1 from its buffer\n", me) }
	:: d_step { GO && noted && TWO(NB) && (NB & B(2)) != 0; buf = buf & ~B(2); printf("W%d drops record 2 from its buffer\n", me) }
	:: d_step { GO && noted && TWO(NB) && (NB & B(3)) != 0; buf = buf & ~B(3); printf("W%d drops record 3 from its buffer\n", me) }
#if N > 3
	:: d_step { GO && noted && TWO(NB) && (NB & B(4)) != 0; buf = buf & ~B(4); printf("W%d drops record 4 from its buffer\n", me) }
#endif
#endif
#ifdef CLIENT_SKIP_NOTED
	/* a client bug: the noted buffer without its lowest record */
	:: d_step {
		CAN_APPLY && noted && TWO(NB);
		xbat = NB & (NB - 1);
		if
		:: dupp != 0 -> xbat = xbat | B(dupp)
		:: else -> skip
		fi;
		db_apply();
#ifndef OLD_CLOSE_CHECK
		assert(xrc == SG001 || xrc == SG004)	/* refused: nothing changes */
#endif
	}
#endif

	:: d_step { CAN_HALT; db_halt() }; goto done
#ifdef ADV_SAVEPOINT
	:: d_step { GO && !rep && noted && NB != 0 && pend != 0; adv_savepoint() }
#endif
#ifdef ADV_BACK
	:: d_step { GO && !rep && noted && wcur > wapp; adv_back(0) }
	:: d_step { GO && att_ == 0 && noted && wcur > wapp; adv_back(1) }; goto done
#endif
#ifdef ADV_RENOTE
	:: d_step { GO && !rep && noted && pend == 0 && buf != 0; adv_renote() }
#endif
#ifdef ADV_HALT_INSIDE
	:: d_step { GO && !rep && att_ == 0 && noted && TWO(NB); batch(1); adv_apply_then(1) }; goto done
#endif
#ifdef ADV_REPORT_INSIDE
	:: d_step { GO && !rep && noted && TWO(NB); batch(1); adv_apply_then(2) }; goto done
#endif

	/*
	 * gap_replay_required: re-fetch (verify_from, verify_to], hash it,
	 * verify_gap.  The client may instead report the retention loss its
	 * re-fetch shows (F3: resolve_gap must then keep the boundary).
	 */
	:: d_step {
			GO && rep && R > vfrom + 1 && (RNG(wapp, R - 1) & ~gcov) != 0;
			lossto = R - 1;
			printf("W%d re-fetch (%d, %d]: retained_from is %d\n", me, vfrom, vto, R)
		}
	:: atomic { d_step { GO && rep; db_verify() };
		if
		:: stopf -> goto done
		:: else -> skip
		fi
	   }

	/* the token expired: begin a recovery from a proven anchor */
	:: atomic { d_step { CAN_BEGIN; anc = wapp; incl = 0; xrr = R; db_begin() };
		if
		:: stopf -> goto done
		:: else -> skip
		fi
	   }
	:: atomic { d_step { CAN_BEGIN && wapp != 0; anc = wapp; incl = 1; xrr = R; db_begin() };
		if
		:: stopf -> goto done
		:: else -> skip
		fi
	   }

	:: d_step { GO && att_ != 0 && !pgf; fetch_page(1) }
	:: d_step { GO && att_ != 0 && !pgf; fetch_page(2) }

	:: atomic { d_step { GO && att_ != 0 && pgf && !pgc && pg != 0; db_page_tx() };
		if
		:: stopf -> goto done
		:: else -> skip
		fi
	   }

	:: d_step {
			GO && att_ != 0 && pgf;
			db_promote();
			if
			:: xrc == PROMOTED ->
				/* a retry after an unknown outcome must converge */
				db_promote();
				assert(!ON(12) || xrc == ALREADY);
				mygen = xrg;
				mytok = at[xa].tk + 1;
				wapp = xra;
				buf = buf & ~UPTO(wapp);
				if
				:: wcur < wapp -> wcur = wapp
				:: else -> skip
				fi;
				pend = pend & ~UPTO(wapp);
				noted = noted && (NB != 0);
				if
				:: !noted -> pend = 0
				:: else -> skip
				fi;
				rep = 0;
				att_ = 0; pg = 0; pglast = 0; anc = 0; incl = 0; pgf = 0; pgc = 0
			:: xrc == PAGE_INCOMPLETE -> pgc = 0
			:: xrc == EMPTY_NOT_BARRIER -> pgf = 0; pg = 0; pglast = 0
			:: else -> skip				/* lost, unresolved: try something else */
			fi
		}

	/*
	 * pick up an open attempt this worker began, again (a client that
	 * lost track of which attempt id is current, e.g. after a reconnect)
	 */
	:: d_step { GO && att_ == 0 && MINE(0); att_ = 1; anc = at[0].anc; incl = at[0].incl; printf("W%d resumes attempt %d\n", me, att_) }
#if MAXATT > 1
	:: d_step { GO && att_ == 0 && MINE(1); att_ = 2; anc = at[1].anc; incl = at[1].incl; printf("W%d resumes attempt %d\n", me, att_) }
#endif
#if MAXATT > 2
	:: d_step { GO && att_ == 0 && MINE(2); att_ = 3; anc = at[2].anc; incl = at[2].incl; printf("W%d resumes attempt %d\n", me, att_) }
#endif

	/* give this attempt up (another may begin) */
	:: d_step { att_ != 0; att_ = 0; pg = 0; pglast = 0; anc = 0; incl = 0; pgf = 0; pgc = 0 }
	od;
done:
	atomic {
		printf("W%d stops (crash, halt or refusal)\n", me);
		alive--;
		mygen = 0; mytok = 0; wapp = 0; wcur = 0; buf = 0; dupp = 0; att_ = 0;
		pg = 0; pglast = 0; anc = 0; vfrom = 0; vto = 0; lossto = 0;
		rep = 0; noted = 0; incl = 0; pgf = 0; pgc = 0; stopf = 0;
		pend = 0;
		skip
	}
}

/* ---------------------------------------------------- the source's faults */

inline trim(k)
{
	tlost = tlost | (RNG(R - 1, R + (k) - 1) & ~del & ~sink);
	R = R + (k);
	losses++;
	printf("source: retention, retained_from %d\n", R)
}

inline compact(p)
{
	del = del | B(p);
	losses++;
	printf("source: record %d deleted (compaction)\n", p)
}

active proctype Source()
{
end:
	do
	:: losses < MAXLOSS && R + 1 <= N + 1 -> d_step { trim(1) }
	:: losses < MAXLOSS && R + 2 <= N + 1 -> d_step { trim(2) }
	:: losses < MAXLOSS && R + 3 <= N + 1 -> d_step { trim(3) }
	:: losses < MAXLOSS && R + 4 <= N + 1 -> d_step { trim(4) }
	:: losses < MAXLOSS && N >= 1 && PRESENT(1) -> d_step { compact(1) }
	:: losses < MAXLOSS && N >= 2 && PRESENT(2) -> d_step { compact(2) }
	:: losses < MAXLOSS && N >= 3 && PRESENT(3) -> d_step { compact(3) }
	:: losses < MAXLOSS && N >= 4 && PRESENT(4) -> d_step { compact(4) }
	:: expiries < MAXEXP ->
		d_step {
			texp = texp | B(tok);
			expiries++;
			printf("source: token %d expired\n", tok)
		}
	od
}

/* ------------------------------------------------------------ operator */

/*
 * sog.resolve_gap(the oldest open gap, 'accepted_loss', ...).  With no gap
 * left open: boundary.c sog_boundary_unverified -- a read hash above
 * applied that no gap detected since the boundary was recorded (resolved
 * or not) covers from its base through the cursor (from <= the base or
 * NULL, to >= cursor or NULL) -- keeps the boundary and returns to
 * replaying; else the boundary is cleared, running.  The gaps it resolves
 * include the unverified rest of a boundary beyond a reported loss.
 */
active proctype Operator()
{
end:
	do
	:: ops < MAXOPS && gopen > 0 ->
		d_step {
			xi = 0;
			do
			:: !gop[xi] -> xi++
			:: else -> break
			od;
			gop[xi] = 0;
			gopen--;
			printf("operator: resolve_gap (%d, %d]\n", gfrom[xi], gto[xi]);
			xt = (gto[xi] == 0 -> N : gto[xi]);
			if
			:: gret[xi] && gfrom[xi] == applied && !(accok && acca == applied && acce >= xt) ->
				accok = 1; acca = applied; acce = xt
			:: else -> skip
			fi;
			if
			:: gto[xi] != 0 || gret[xi] -> gacc = gacc | RNG(gfrom[xi], xt)
			:: else -> skip
			fi;
			xt = 0;
#ifdef MMGHOST
			xmm = mmcur && gopen == 0;
#endif
			xcov = 0;
#ifndef OLD_COVER_FROM_APPLIED
			xcf = BASE;			/* boundary.c sog_boundary_unverified: from the base */
#else
			xcf = applied;		/* 1.1: from the applied position */
#endif
			xi = 0;
			do
			:: xi < ng ->
				if
				:: (gsn & (1 << xi)) != 0 && gfrom[xi] <= xcf &&
				   (gto[xi] == 0 || gto[xi] >= cursor) -> xcov = 1
				:: else -> skip
				fi;
				xi++
			:: else -> break
			od;
			if
			:: gopen == 0 ->
#if defined(OLD_RESOLVE)
				clear_boundary(); st = RUNNING
#elif defined(HELPER_RESOLVE)
				if
				:: rhset && cursor > applied -> st = REPLAYING
				:: else -> clear_boundary(); st = RUNNING
				fi
#else
				if
				:: (rhset || rcset) && cursor > applied && !xcov ->
					st = REPLAYING	/* verify it (count only: the next claim fails closed) */
				:: else -> clear_boundary(); st = RUNNING
				fi
#endif
			:: else -> skip
			fi;
			if
			:: gopen == 0 -> printf("operator: no gap open: %e, read boundary (%d, %d]\n", st, rbase, cursor)
			:: else -> skip
			fi;
#ifdef REACH_MISMATCH_RUNNING
			assert(!(xmm && st == RUNNING));	/* fails iff running is reachable */
#endif
#ifdef CHECK_MISMATCH_RESOLVES
			assert(!xmm || st == RUNNING);
#endif
			ops++;
			forget_dead_gaps();
			xcov = 0; xmm = 0
		}
	od
}

init
{
	atomic {
		xi = 1;
		do
		:: xi <= WORKERS -> run Worker(xi); xi++
		:: else -> break
		od;
		xi = 0
	}
}

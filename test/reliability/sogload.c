/*
 * sogload.c: the workload driver of the reliability suite.
 *
 * One binary, several roles (the first argument):
 *
 *   consumer  a worker on one partition that goes through the whole protocol
 *             of the SQL contract: claim, verify_gap (re-fetch and hash on the
 *             client), note_read (committed before the sink transaction; a
 *             page noted is applied whole in one sink transaction, and the
 *             next is noted once it is), apply_batch with sink rows (only
 *             the rows answered new),
 *             commit_page, halt, skip_gap (telemetry), report_gap (when the
 *             server has it), begin_recovery / recovery_event / promote;
 *             it ends its leases by halting, by crashing between or inside
 *             transactions, or by being fenced by the next claim.
 *   race      a coordinator and N contenders racing expired-token recovery
 *             attempts on one checkpoint, round after round.
 *   monitor   polls sog.status: every answer is an observation of the
 *             applied position and generation (the checker looks for
 *             regressions).
 *   operator  resolves gaps the way an operator would (replayed when the
 *             source still holds the records, accepted_loss when they were
 *             trimmed) and, with --trim, trims the source (retention).
 *   drain     after the faults: claims every partition and applies the whole
 *             source, resolving what is left, and halts.
 *   probe-ro  on a hot standby: claim and apply_batch must fail with 25006.
 *   hashcheck checks the client-side SHA-256 and buffer hash against the
 *             contract's vectors.
 *
 * The source is the table rel.source(part, pos, payload, trimmed), read by
 * position; the sink is rel.sink(part, pos, payload, gen, tag); every
 * transaction the driver commits also inserts its tag into rel.optag, so an
 * operation whose COMMIT outcome is unknown (connection lost) can be
 * resolved afterwards.
 *
 * Every operation is logged, one line per event, to the process's own log:
 *     <unix time in us> <process> <op> <phase> key=value ... [msg=<rest>]
 * with phase invoked, ok, failed (with the SQLSTATE) or unknown.  The
 * checker (check.pl) reads these logs and dumps of the final database.
 *
 * Deliberately broken consumers for the checker's self-test (--mode):
 *   ignore-answer  writes every event's row whatever apply_batch answered
 *                  (and replays verified gaps from their start): duplicates;
 *   own-cursor     notes nothing, and after a claim resumes from its own
 *                  read cursor of the lease before instead of the applied
 *                  position: losses, gaps skipped without a record (with
 *                  its reads noted, the guard refuses the skip: SG004);
 *   nofence        writes its sink rows in a second transaction, after the
 *                  one that called apply_batch: zombie commits.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "sha256.h"

#define MODE_NORMAL		0
#define MODE_IGNORE		1
#define MODE_OWNCURSOR	2
#define MODE_NOFENCE	3

/* ------------------------------------------------------------ utilities */

static FILE *logf_;
static char proc_name[64] = "?";
static long tag_seq;
static volatile sig_atomic_t stop_flag;
static uint64_t rng_state = 88172645463325252ULL;

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* uniform in [lo, hi] */
static long
rnd_range(long lo, long hi)
{
	if (hi <= lo)
		return lo;
	return lo + (long) (rnd() % (uint64_t) (hi - lo + 1));
}

/* true with probability pm per mille */
static int
chance(int pm)
{
	return (long) (rnd() % 1000) < pm;
}

static void
sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_flag)
		;
}

static void
on_term(int sig)
{
	(void) sig;
	stop_flag = 1;
}

static void
die(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "sogload %s: ", proc_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

/*
 * One log line: time, process, op, phase, then the formatted fields.  The
 * line is flushed at once: a process stopped or killed later loses nothing.
 */
static void
logev(const char *op, const char *phase, const char *fmt,...)
{
	va_list		ap;

	if (!logf_)
		return;
	fprintf(logf_, "%lld %s %s %s", (long long) now_us(), proc_name, op, phase);
	if (fmt && *fmt)
	{
		fputc(' ', logf_);
		va_start(ap, fmt);
		vfprintf(logf_, fmt, ap);
		va_end(ap);
	}
	fputc('\n', logf_);
	fflush(logf_);
}

static void
open_log(const char *path)
{
	logf_ = fopen(path, "a");
	if (!logf_)
		die("cannot open log %s: %s", path, strerror(errno));
}

static char *
xstrdup(const char *s)
{
	char	   *r = strdup(s ? s : "");

	if (!r)
		die("out of memory");
	return r;
}

static void *
xrealloc(void *p, size_t n)
{
	void	   *r = realloc(p, n);

	if (!r)
		die("out of memory");
	return r;
}

/* A growable string. */
typedef struct
{
	char	   *s;
	size_t		len,
				cap;
} Str;

static void
str_addn(Str *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
	{
		b->cap = (b->len + n + 1) * 2 + 64;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void
str_add(Str *b, const char *s)
{
	str_addn(b, s, strlen(s));
}

static void
str_addf(Str *b, const char *fmt,...)
{
	char		tmp[512];
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n < sizeof(tmp))
		str_addn(b, tmp, n);
	else
	{
		char	   *big = malloc(n + 1);

		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		str_addn(b, big, n);
		free(big);
	}
}

static void
str_reset(Str *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

static void
hexify(const unsigned char *d, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";
	size_t		i;

	for (i = 0; i < n; i++)
	{
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static int
unhex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ------------------------------------------------------------ hashes */

/* h0 of the contract: SHA-256("sog:buffer:v1") */
static void
bh_init(unsigned char h[32])
{
	sha256("sog:buffer:v1", 13, h);
}

/* hi = SHA-256(h(i-1) || be16(len(Pi)) || Pi || Di) */
static void
bh_step(unsigned char h[32], int64_t pos, const unsigned char dig[32])
{
	char		p[32];
	int			n = snprintf(p, sizeof(p), "%lld", (long long) pos);
	unsigned char be[2] = {(unsigned char) (n >> 8), (unsigned char) n};
	Sha256		s;

	sha256_init(&s);
	sha256_update(&s, h, 32);
	sha256_update(&s, be, 2);
	sha256_update(&s, p, n);
	sha256_update(&s, dig, 32);
	sha256_final(&s, h);
}

/* ------------------------------------------------------------ database */

enum
{
	ST_OK = 0,					/* the statement succeeded */
	ST_ERR = 1,					/* it failed; the connection is usable */
	ST_LOST = 2					/* the connection is gone */
};

typedef struct
{
	int			st;
	char		state[6];
	char		msg[400];
	PGresult   *res;
} Res;

typedef struct
{
	PGconn	   *pg;
	const char *conninfo;
	int			in_tx;
	int			iit_ms;			/* idle_in_transaction_session_timeout */
	int			claim_timeout_ok;	/* the server knows sog.claim_timeout */
} Db;

static void
res_free(Res *r)
{
	if (r->res)
		PQclear(r->res);
	r->res = NULL;
}

static const char *
res_val(Res *r, int row, int col)
{
	if (!r->res || PQgetisnull(r->res, row, col))
		return NULL;
	return PQgetvalue(r->res, row, col);
}

static int
res_ntuples(Res *r)
{
	return r->res ? PQntuples(r->res) : 0;
}

/* Messages go at the end of a log line, on one line. */
static void
flatten(char *m)
{
	for (; *m; m++)
		if (*m == '\n' || *m == '\r' || *m == '\t')
			*m = ' ';
}

static Res
db_exec(Db *db, const char *sql, int n, const char *const *params)
{
	Res			r;
	ExecStatusType es;

	memset(&r, 0, sizeof(r));
	if (!db->pg || PQstatus(db->pg) != CONNECTION_OK)
	{
		r.st = ST_LOST;
		strcpy(r.state, "08003");
		strcpy(r.msg, "no connection");
		return r;
	}
	r.res = PQexecParams(db->pg, sql, n, NULL, params, NULL, NULL, 0);
	es = r.res ? PQresultStatus(r.res) : PGRES_FATAL_ERROR;
	if (es == PGRES_TUPLES_OK || es == PGRES_COMMAND_OK)
	{
		r.st = ST_OK;
		return r;
	}
	{
		const char *ss = r.res ? PQresultErrorField(r.res, PG_DIAG_SQLSTATE) : NULL;
		const char *mm = r.res ? PQresultErrorField(r.res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

		if (!mm)
			mm = PQerrorMessage(db->pg);
		snprintf(r.state, sizeof(r.state), "%s", ss ? ss : "08006");
		snprintf(r.msg, sizeof(r.msg), "%s", mm ? mm : "");
		flatten(r.msg);
	}
	r.st = (PQstatus(db->pg) == CONNECTION_OK) ? ST_ERR : ST_LOST;
	if (r.st == ST_LOST)
		db->in_tx = 0;
	return r;
}

/* Run a statement whose result does not matter (SET, ROLLBACK). */
static void
db_quiet(Db *db, const char *sql)
{
	Res			r = db_exec(db, sql, 0, NULL);

	res_free(&r);
}

static void
db_close(Db *db)
{
	if (db->pg)
		PQfinish(db->pg);
	db->pg = NULL;
	db->in_tx = 0;
}

/*
 * (Re)connect, retrying with back-off until connected, stopped, or the
 * deadline.  Returns 1 when connected.
 */
static int
db_connect(Db *db, int64_t deadline)
{
	long		backoff = 20;

	db_close(db);
	for (;;)
	{
		int64_t		t0 = now_us();

		db->pg = PQconnectdb(db->conninfo);
		if (PQstatus(db->pg) == CONNECTION_OK)
		{
			logev("connect", "ok", "t0=%lld backend=%d", (long long) t0,
				 PQbackendPID(db->pg));
			if (db->iit_ms > 0)
			{
				char		q[128];

				snprintf(q, sizeof(q), "SET idle_in_transaction_session_timeout = %d", db->iit_ms);
				db_quiet(db, q);
			}
			return 1;
		}
		{
			char		m[300];

			snprintf(m, sizeof(m), "%s", PQerrorMessage(db->pg));
			flatten(m);
			logev("connect", "failed", "msg=%s", m);
		}
		PQfinish(db->pg);
		db->pg = NULL;
		if (stop_flag || (deadline && now_us() > deadline))
			return 0;
		sleep_ms(backoff);
		if (backoff < 1000)
			backoff *= 2;
	}
}

static int
db_ok(Db *db)
{
	return db->pg && PQstatus(db->pg) == CONNECTION_OK;
}

/* ------------------------------------------------------------ configuration */

typedef struct
{
	const char *conninfo;
	const char *opconninfo;
	const char *logpath;
	const char *name;
	int			part;
	int			paged;
	int			telemetry;
	double		seconds;
	int64_t		deadline;
	int			batch_max;
	int			lease_min_ms,
				lease_max_ms;
	int			idle_min_ms,
				idle_max_ms;
	int			pace_ms;		/* sleep up to this after each step */
	int			tx_sleep_max_ms;	/* sleeps inside sink transactions */
	int			p_tx_sleep;		/* per mille of sink transactions that sleep */
	int			p_recovery;		/* per mille of steps that run a recovery */
	int			p_bad_anchor;	/* per mille of recoveries with a refused anchor */
	int			p_crash;		/* per mille of lease ends that crash */
	int			timeouts;		/* random statement/lock timeouts */
	int			iit_ms;
	int			claim_timeout_ms;
	int			mode;
	int			drain;
	int			oneshot;
	long		seed;
	/* race */
	int			contenders;
	int			rounds;
	const char *logdir;
	/* monitor / operator */
	int			interval_ms;
	int			trim;
	int			reconnect_ms;
	const char *parts;
} Cfg;

static Cfg cfg;

/* ------------------------------------------------------------ consumer state */

typedef struct
{
	int64_t		pos;
	unsigned char dig[32];
	char	   *hex;			/* payload as hex, for the sink row */
	int			gone;			/* the source no longer holds it (trimmed) */
} Rec;

typedef struct
{
	Db			db;
	Db			op;				/* operator connection (drain only) */
	int64_t		cp;
	int64_t		gen;
	int			owned;
	int64_t		applied;		/* the applied position we know; 0 = none */
	int64_t		read_after;		/* last position read from the source */
	int64_t		noted_to;		/* cursor of the read boundary the guard
								 * holds, not applied yet (0: none): the
								 * next sink transaction applies it whole */
	int64_t		own_cursor;		/* own-cursor mode: read_after of the lease
								 * before */
	char		token[128];
	int			has_token;
	Rec		   *buf;			/* read, not yet applied (ascending) */
	int			nbuf,
				cap;
	int64_t		source_end;
	int			retry_pending;	/* records of an unknown sink tx to retry */
	int64_t		lease_until;
	int			has_report_gap;
	int			has_gaps;
	int			done;			/* drain: partition finished */
	int			fails;			/* consecutive failures */
} C;

static char *
newtag(void)
{
	static char t[96];

	snprintf(t, sizeof(t), "%s.%ld", proc_name, ++tag_seq);
	return t;
}

static void
buf_clear(C *c)
{
	int			i;

	for (i = 0; i < c->nbuf; i++)
		free(c->buf[i].hex);
	c->nbuf = 0;
	c->retry_pending = 0;
}

static void
buf_drop(C *c, int k)
{
	int			i;

	if (k > c->nbuf)
		k = c->nbuf;
	for (i = 0; i < k; i++)
		free(c->buf[i].hex);
	memmove(c->buf, c->buf + k, sizeof(Rec) * (c->nbuf - k));
	c->nbuf -= k;
}

static void
buf_push(C *c, Rec *r)
{
	if (c->nbuf == c->cap)
	{
		c->cap = c->cap ? c->cap * 2 : 256;
		c->buf = xrealloc(c->buf, sizeof(Rec) * c->cap);
	}
	c->buf[c->nbuf++] = *r;
}

static void
recs_free(Rec *r, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		free(r[i].hex);
	free(r);
}

/*
 * buffer hash and count of the buffered records above the applied position,
 * through upto
 */
static void
buf_hash(C *c, int64_t upto, char out[65], long *count)
{
	unsigned char h[32];
	int			i;
	long		n = 0;

	bh_init(h);
	for (i = 0; i < c->nbuf; i++)
		if (c->buf[i].pos > c->applied && c->buf[i].pos <= upto)
		{
			bh_step(h, c->buf[i].pos, c->buf[i].dig);
			n++;
		}
	hexify(h, 32, out);
	*count = n;
}

static int64_t
parse_pos(const char *s)
{
	return s ? atoll(s) : 0;
}

/*
 * Read source records with lo < pos <= hi (hi 0: no bound), at most limit
 * (0: no limit), in order.  Positions may be sparse.  A record the source
 * trimmed (retention) comes back with gone set and no payload, the way a
 * provider reports that the log now starts later.  Returns the count, -1 if
 * the read failed.
 */
static int
src_fetch(C *c, int64_t lo, int64_t hi, int limit, Rec **out)
{
	char		a[24], b[24], d[24], l[24];
	const char *p[4];
	Res			r;
	int			n, i;
	Rec		   *recs;

	snprintf(a, sizeof(a), "%d", cfg.part);
	snprintf(b, sizeof(b), "%lld", (long long) lo);
	snprintf(d, sizeof(d), "%lld", (long long) (hi > 0 ? hi : INT64_MAX));
	snprintf(l, sizeof(l), "%d", limit > 0 ? limit : 1000000000);
	p[0] = a;
	p[1] = b;
	p[2] = d;
	p[3] = l;
	r = db_exec(&c->db,
				"SELECT pos, CASE WHEN NOT trimmed THEN payload END FROM rel.source"
				" WHERE part = $1::int AND pos > $2::bigint AND pos <= $3::bigint"
				" ORDER BY pos LIMIT $4::int", 4, p);
	if (r.st != ST_OK)
	{
		logev("source", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
		res_free(&r);
		return -1;
	}
	n = res_ntuples(&r);
	recs = calloc(n > 0 ? n : 1, sizeof(Rec));
	for (i = 0; i < n; i++)
	{
		const char *hx = res_val(&r, i, 1);
		size_t		hl, nb, j;
		unsigned char *raw;

		recs[i].pos = atoll(res_val(&r, i, 0));
		if (!hx)
		{
			recs[i].gone = 1;
			continue;
		}
		hl = strlen(hx);
		if (hl < 2 || hx[0] != '\\' || hx[1] != 'x')
			die("unexpected bytea output");
		nb = (hl - 2) / 2;
		raw = malloc(nb + 1);
		for (j = 0; j < nb; j++)
			raw[j] = (unsigned char) (unhex_digit(hx[2 + 2 * j]) * 16 + unhex_digit(hx[3 + 2 * j]));
		sha256(raw, nb, recs[i].dig);
		free(raw);
		recs[i].hex = xstrdup(hx + 2);
	}
	res_free(&r);
	*out = recs;
	return n;
}

/* ------------------------------------------------------------ transactions */

enum
{
	TX_OK, TX_FAILED, TX_UNKNOWN
};

/* Roll back if a transaction is open; ignore the outcome. */
static void
tx_abort(C *c)
{
	if (c->db.in_tx && db_ok(&c->db))
		db_quiet(&c->db, "ROLLBACK");
	c->db.in_tx = 0;
}

static int
tx_begin(C *c, const char *tag, const char *kind)
{
	Res			r;

	logev("tx", "invoked", "tag=%s kind=%s cp=%lld gen=%lld", tag, kind,
		 (long long) c->cp, (long long) c->gen);
	r = db_exec(&c->db, "BEGIN", 0, NULL);
	if (r.st != ST_OK)
	{
		logev("tx", "failed", "tag=%s kind=%s sqlstate=%s where=begin msg=%s", tag, kind, r.state, r.msg);
		res_free(&r);
		return 0;
	}
	res_free(&r);
	c->db.in_tx = 1;
	return 1;
}

/* A statement inside the transaction failed: log it and roll back. */
static void
tx_failed(C *c, const char *tag, const char *kind, Res *r, const char *where)
{
	logev("tx", "failed", "tag=%s kind=%s sqlstate=%s where=%s msg=%s", tag, kind,
		 r->state, where, r->msg);
	tx_abort(c);
}

/* Insert the tag, then COMMIT; log ok, failed or unknown. */
static int
tx_commit(C *c, const char *tag, const char *kind, int64_t gen)
{
	char		g[24], cpb[24];
	const char *p[4];
	Res			r;

	snprintf(g, sizeof(g), "%lld", (long long) gen);
	snprintf(cpb, sizeof(cpb), "%lld", (long long) c->cp);
	p[0] = tag;
	p[1] = kind;
	p[2] = cpb;
	p[3] = g;
	r = db_exec(&c->db, "INSERT INTO rel.optag (tag, kind, cp, gen) VALUES ($1, $2, $3::bigint, $4::bigint)", 4, p);
	if (r.st != ST_OK)
	{
		tx_failed(c, tag, kind, &r, "optag");
		res_free(&r);
		return TX_FAILED;
	}
	res_free(&r);
	logev("commit", "invoked", "tag=%s", tag);
	r = db_exec(&c->db, "COMMIT", 0, NULL);
	c->db.in_tx = 0;
	if (r.st == ST_OK)
	{
		const char *cs = PQcmdStatus(r.res);

		if (cs && strcmp(cs, "COMMIT") == 0)
		{
			logev("tx", "ok", "tag=%s kind=%s gen=%lld", tag, kind, (long long) gen);
			res_free(&r);
			return TX_OK;
		}
		logev("tx", "failed", "tag=%s kind=%s sqlstate=none where=commit msg=%s", tag, kind, cs ? cs : "");
		res_free(&r);
		return TX_FAILED;
	}
	if (r.st == ST_LOST)
	{
		logev("tx", "unknown", "tag=%s kind=%s gen=%lld sqlstate=%s msg=%s", tag, kind,
			 (long long) gen, r.state, r.msg);
		res_free(&r);
		return TX_UNKNOWN;
	}
	logev("tx", "failed", "tag=%s kind=%s sqlstate=%s where=commit msg=%s", tag, kind, r.state, r.msg);
	res_free(&r);
	return TX_FAILED;
}

/* After a failure: reconnect if the connection is gone. */
static void owner_check(C *c);
static void note_error(const char *op, Res *r);

static void
after_failure(C *c, Res *r)
{
	if ((r && r->st == ST_LOST) || !db_ok(&c->db))
	{
		if (db_connect(&c->db, cfg.deadline) && c->owned)
			owner_check(c);
	}
}

/*
 * After a reconnect: is our generation still current and not halted
 * (sog.owner_check, 1.1)?  If not, stop and claim again.
 */
static void
owner_check(C *c)
{
	char		a[24], g[24];
	const char *p[2];
	Res			r;

	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	p[0] = a;
	p[1] = g;
	logev("ownercheck", "invoked", "cp=%lld gen=%lld", (long long) c->cp, (long long) c->gen);
	r = db_exec(&c->db, "SELECT sog.owner_check($1::bigint, $2::bigint)", 2, p);
	if (r.st == ST_OK)
	{
		int			own = strcmp(res_val(&r, 0, 0), "t") == 0;

		logev("ownercheck", "ok", "cp=%lld gen=%lld owner=%d", (long long) c->cp, (long long) c->gen, own);
		if (!own)
		{
			c->owned = 0;
			buf_clear(c);
		}
	}
	else
	{
		logev("ownercheck", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
		if (strcmp(r.state, "42883") != 0)	/* a 1.0 server has no owner_check */
			note_error("owner_check", &r);
	}
	res_free(&r);
}

static void
fenced(C *c, const char *where)
{
	logev("fenced", "ok", "cp=%lld gen=%lld where=%s", (long long) c->cp, (long long) c->gen, where);
	c->owned = 0;
	buf_clear(c);
}

/*
 * Random statement and lock timeouts inside a transaction (--timeouts);
 * claim (1) also gets lock and claim timeouts, promote (2) a lock timeout.
 */
static void
maybe_timeouts(C *c, int claim)
{
	char		q[160];

	if (!cfg.timeouts)
		return;
	if (chance(300))
	{
		snprintf(q, sizeof(q), "SET LOCAL statement_timeout = %ld", rnd_range(1, 25));
		db_quiet(&c->db, q);
	}
	if (claim && chance(500))
	{
		snprintf(q, sizeof(q), "SET LOCAL lock_timeout = %ld", claim == 2 ? rnd_range(1, 30) : rnd_range(5, 200));
		db_quiet(&c->db, q);
	}
	if (claim == 1 && c->db.claim_timeout_ok && chance(300))
	{
		snprintf(q, sizeof(q), "SET LOCAL sog.claim_timeout = %ld", rnd_range(10, 300));
		db_quiet(&c->db, q);
	}
}

/*
 * Errors that are part of the scenario; anything else is logged as
 * unexpected and counted by the checker.
 */
static int
expected_error(const char *st)
{
	static const char *ok[] = {
		"SG001",				/* fenced */
		"57014",				/* statement_timeout, pg_cancel_backend */
		"55P03",				/* lock_timeout, claim_timeout */
		"25P03",				/* idle_in_transaction_session_timeout */
		"57P01", "57P02", "57P03",	/* shutdown, crash, starting up */
		"53100",				/* disk full */
		"53200",				/* out of memory (disk-full scenario) */
		"58030",				/* I/O error (disk full) */
		"25006",				/* read-only (standby) */
		"40P01",				/* deadlock (never expected; see the log) */
		NULL
	};
	int			i;

	if (st[0] == '0' && st[1] == '8')
		return 1;
	for (i = 0; ok[i]; i++)
		if (strcmp(st, ok[i]) == 0)
			return strcmp(st, "40P01") != 0;
	return 0;
}

static void
note_error(const char *op, Res *r)
{
	if (r->st == ST_ERR && !expected_error(r->state))
		logev("anomaly", "ok", "what=unexpected_error op=%s sqlstate=%s msg=%s", op, r->state, r->msg);
}

/* ------------------------------------------------------------ protocol steps */

static int	do_claim(C *c);
static int	read_more(C *c, int want);

/*
 * Register the partition's checkpoint; returns its id.  register of an
 * existing checkpoint waits for any open transaction that changed its row
 * (INSERT ... ON CONFLICT DO NOTHING waits for the row's updater; neither
 * sog.claim_timeout nor anything else bounds it), so a worker started while
 * a stopped zombie holds its sink transaction open would hang here.  With
 * --oneshot (the zombie scenario's stealers) register gets a lock_timeout,
 * and on 55P03 the id is looked up in sog.status instead; the wait is logged.
 */
static int64_t
do_register(C *c)
{
	char		pn[24];
	const char *p[3];
	Res			r;

	snprintf(pn, sizeof(pn), "p%d", cfg.part);
	p[0] = pn;
	p[1] = cfg.telemetry ? "telemetry" : "critical";
	p[2] = cfg.paged ? "kafka" : NULL;
	for (;;)
	{
		int64_t		t0 = now_us();

		logev("register", "invoked", "part=%d", cfg.part);
		if (cfg.oneshot)
		{
			db_quiet(&c->db, "BEGIN");
			db_quiet(&c->db, "SET LOCAL lock_timeout = 300");
			c->db.in_tx = 1;
		}
		r = db_exec(&c->db,
					"SELECT id FROM sog.register('rel', 'orders', $1, $2, $3)", 3, p);
		if (r.st == ST_OK)
		{
			int64_t		id = atoll(res_val(&r, 0, 0));

			res_free(&r);
			if (cfg.oneshot)
				db_quiet(&c->db, "COMMIT");
			c->db.in_tx = 0;
			logev("register", "ok", "part=%d cp=%lld", cfg.part, (long long) id);
			return id;
		}
		logev("register", "failed", "sqlstate=%s waited_ms=%lld msg=%s", r.state,
			  (long long) (now_us() - t0) / 1000, r.msg);
		tx_abort(c);
		if (cfg.oneshot && strcmp(r.state, "55P03") == 0)
		{
			const char *pp[1] = {pn};
			Res			r2;

			res_free(&r);
			logev("observation", "ok", "what=register_blocked_by_open_sink_tx part=%d", cfg.part);
			r2 = db_exec(&c->db, "SELECT checkpoint_id FROM sog.status WHERE consumer = 'rel'"
						 " AND stream = 'orders' AND \"partition\" = $1", 1, pp);
			if (r2.st == ST_OK && res_ntuples(&r2) == 1)
			{
				int64_t		id = atoll(res_val(&r2, 0, 0));

				res_free(&r2);
				logev("register", "ok", "part=%d cp=%lld via=status", cfg.part, (long long) id);
				return id;
			}
			res_free(&r2);
			continue;
		}
		note_error("register", &r);
		after_failure(c, &r);
		res_free(&r);
		if (stop_flag || (cfg.deadline && now_us() > cfg.deadline))
			return -1;
		sleep_ms(100);
	}
}

static void
detect_features(C *c)
{
	Res			r = db_exec(&c->db,
							"SELECT to_regprocedure('sog.report_gap(bigint,bigint,sog.position,text,text)') IS NOT NULL,"
							" to_regprocedure('sog.gaps(bigint)') IS NOT NULL", 0, NULL);

	if (r.st == ST_OK)
	{
		c->has_report_gap = strcmp(res_val(&r, 0, 0), "t") == 0;
		c->has_gaps = strcmp(res_val(&r, 0, 1), "t") == 0;
	}
	res_free(&r);
	r = db_exec(&c->db, "SET sog.claim_timeout = 0", 0, NULL);
	c->db.claim_timeout_ok = (r.st == ST_OK);
	res_free(&r);
	r = db_exec(&c->db, "RESET sog.claim_timeout", 0, NULL);
	res_free(&r);
	if (cfg.claim_timeout_ms > 0 && c->db.claim_timeout_ok)
	{
		char		q[80];

		snprintf(q, sizeof(q), "SET sog.claim_timeout = %d", cfg.claim_timeout_ms);
		db_quiet(&c->db, q);
	}
	logev("features", "ok", "report_gap=%d gaps=%d claim_timeout=%d", c->has_report_gap,
		 c->has_gaps, c->db.claim_timeout_ok);
}

static void
source_end(C *c)
{
	char		a[16];
	const char *p[1];

	snprintf(a, sizeof(a), "%d", cfg.part);
	p[0] = a;
	for (;;)
	{
		Res			r = db_exec(&c->db, "SELECT coalesce(max(pos), 0) FROM rel.source WHERE part = $1::int", 1, p);

		if (r.st == ST_OK)
		{
			c->source_end = atoll(res_val(&r, 0, 0));
			res_free(&r);
			return;
		}
		after_failure(c, &r);
		res_free(&r);
		if (stop_flag)
			return;
		sleep_ms(100);
	}
}

/*
 * Are all positions lo..hi covered by gaps an operator resolved as
 * accepted_loss?  (sog.gaps of 1.1; without it the answer is no.)
 */
static int
hole_accepted(C *c, int64_t lo, int64_t hi)
{
	char		a[24], b[24], d[24];
	const char *p[3];
	Res			r;
	int			ok = 0;

	if (!c->has_gaps)
		return 0;
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(b, sizeof(b), "%lld", (long long) lo);
	snprintf(d, sizeof(d), "%lld", (long long) hi);
	p[0] = a;
	p[1] = b;
	p[2] = d;
	r = db_exec(&c->db,
				"SELECT count(*) FROM generate_series($2::bigint, $3::bigint) g"
				" WHERE NOT EXISTS (SELECT 1 FROM sog.gaps($1::bigint) x"
				"  WHERE x.resolution = 'accepted_loss'"
				"    AND (x.from_position IS NULL OR x.from_position OPERATOR(sog.<) g::sog.position)"
				"    AND x.to_position OPERATOR(sog.>=) g::sog.position)", 3, p);
	if (r.st == ST_OK)
		ok = atoll(res_val(&r, 0, 0)) == 0;
	else
	{
		logev("gaps", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
		note_error("gaps", &r);
	}
	logev("gaps", "ok", "cp=%lld lo=%lld hi=%lld accepted=%d", (long long) c->cp,
		 (long long) lo, (long long) hi, ok);
	res_free(&r);
	return ok;
}

/*
 * report_gap (1.1): (applied, to] cannot be applied as read: reason
 * retention (the source no longer holds records) or unverifiable (a replay
 * could not be rebuilt).
 */
static void
do_report_gap(C *c, int64_t to, const char *reason)
{
	char		a[24], g[24], t[24];
	const char *p[4];
	char	   *tag = newtag();
	char		tagc[96];
	Res			r;

	snprintf(tagc, sizeof(tagc), "%s", tag);
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	snprintf(t, sizeof(t), "%lld", (long long) to);
	p[0] = a;
	p[1] = g;
	p[2] = t;
	p[3] = reason;
	logev("report", "invoked", "cp=%lld gen=%lld tag=%s applied=%lld to=%lld reason=%s", (long long) c->cp,
		  (long long) c->gen, tagc, (long long) c->applied, (long long) to, reason);
	if (!tx_begin(c, tagc, "report"))
	{
		after_failure(c, NULL);
		return;
	}
	r = db_exec(&c->db, "SELECT sog.report_gap($1::bigint, $2::bigint, $3::sog.position, $4, 'reported by the reliability workload')", 4, p);
	if (r.st != ST_OK)
	{
		logev("report", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("report_gap", &r);
		tx_failed(c, tagc, "report", &r, "report_gap");
		if (strcmp(r.state, "SG001") == 0)
			fenced(c, "report_gap");
		after_failure(c, &r);
		res_free(&r);
		return;
	}
	{
		char		gid[24];

		snprintf(gid, sizeof(gid), "%s", res_val(&r, 0, 0) ? res_val(&r, 0, 0) : "");
		res_free(&r);
		if (tx_commit(c, tagc, "report", c->gen) == TX_OK)
			logev("report", "ok", "tag=%s cp=%lld gap=%s", tagc, (long long) c->cp, gid);
		else
			after_failure(c, NULL);
	}
	/* the checkpoint is failed_closed now: wait for the operator */
	c->owned = 0;
	buf_clear(c);
}

/* Drain: resolve every open gap of the checkpoint as an operator would. */
static void
drain_resolve(C *c)
{
	char		a[24];
	Res			r;
	int			i;

	if (!db_ok(&c->op) && !db_connect(&c->op, 0))
		return;
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	{
		char		pt[16];
		const char *pp[2];

		snprintf(pt, sizeof(pt), "%d", cfg.part);
		pp[0] = a;
		pp[1] = pt;
		r = db_exec(&c->op,
					"SELECT g.gap_id, CASE WHEN EXISTS (SELECT 1 FROM rel.source s WHERE s.part = $2::int"
					"   AND s.trimmed AND (g.from_position IS NULL OR s.pos::sog.position OPERATOR(sog.>) g.from_position)"
					"   AND s.pos::sog.position OPERATOR(sog.<=) g.to_position) THEN 'accepted_loss' ELSE 'replayed' END"
					"  FROM sog.unresolved_gaps g WHERE g.checkpoint_id = $1::bigint ORDER BY g.gap_id",
					2, pp);
	}
	if (r.st != ST_OK)
	{
		logev("resolve", "failed", "sqlstate=%s where=list msg=%s", r.state, r.msg);
		note_error("unresolved_gaps", &r);
		res_free(&r);
		return;
	}
	for (i = 0; i < res_ntuples(&r); i++)
	{
		const char *pp[3];
		Res			r2;

		pp[0] = res_val(&r, i, 0);
		pp[1] = res_val(&r, i, 1);
		pp[2] = "drain: the reliability harness resolves what is left";
		logev("resolve", "invoked", "gap=%s resolution=%s", pp[0], pp[1]);
		r2 = db_exec(&c->op, "SELECT sog.resolve_gap($1::bigint, $2, $3)", 3, pp);
		if (r2.st == ST_OK)
			logev("resolve", "ok", "gap=%s resolution=%s", pp[0], pp[1]);
		else
		{
			logev("resolve", "failed", "gap=%s sqlstate=%s msg=%s", pp[0], r2.state, r2.msg);
			if (strcmp(r2.state, "55000") != 0)
				note_error("resolve_gap", &r2);
		}
		res_free(&r2);
	}
	res_free(&r);
}

/*
 * Records lo..hi are missing from the source (trimmed).  If an operator
 * accepted their loss, read past them; else report the gap (1.1).
 */
static void
handle_hole(C *c, int64_t lo, int64_t hi)
{
	int			i;

	logev("hole", "ok", "cp=%lld lo=%lld hi=%lld applied=%lld", (long long) c->cp,
		 (long long) lo, (long long) hi, (long long) c->applied);
	if (hole_accepted(c, lo, hi))
	{
		c->read_after = hi;
		return;
	}
	/* apply what is buffered below the hole first */
	for (i = 0; i < c->nbuf; i++)
		if (c->buf[i].pos > c->applied)
			return;
	if (!c->has_report_gap)
	{
		logev("anomaly", "ok", "what=hole_without_report_gap cp=%lld lo=%lld hi=%lld",
			 (long long) c->cp, (long long) lo, (long long) hi);
		c->owned = 0;
		return;
	}
	do_report_gap(c, hi, "retention");
	if (cfg.drain)
		drain_resolve(c);
}

/*
 * note_read of the buffer through upto: (applied, upto], committed on its
 * own, when no boundary noted before is still to be applied.
 */
static int
do_note(C *c, int64_t upto)
{
	char		a[24], g[24], cur[24], cnt[24], hash[65];
	const char *p[5];
	long		n;
	char		tagc[96];
	Res			r;
	int			t;

	if (cfg.mode == MODE_OWNCURSOR || c->noted_to > c->applied || upto <= c->applied)
		return 1;				/* nothing to note, or not now */
	snprintf(tagc, sizeof(tagc), "%s", newtag());
	buf_hash(c, upto, hash, &n);
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	snprintf(cur, sizeof(cur), "%lld", (long long) upto);
	snprintf(cnt, sizeof(cnt), "%ld", n);
	p[0] = a;
	p[1] = g;
	p[2] = cur;
	p[3] = hash;
	p[4] = cnt;
	logev("note", "invoked", "tag=%s cp=%lld gen=%lld applied=%lld cursor=%lld count=%ld hash=%s",
		 tagc, (long long) c->cp, (long long) c->gen, (long long) c->applied,
		 (long long) upto, n, hash);
	if (!tx_begin(c, tagc, "note"))
	{
		after_failure(c, NULL);
		return 0;
	}
	maybe_timeouts(c, 0);
	r = db_exec(&c->db, "SELECT sog.note_read($1::bigint, $2::bigint, $3::sog.position, $4, $5::bigint)", 5, p);
	if (r.st != ST_OK)
	{
		logev("note", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("note_read", &r);
		tx_failed(c, tagc, "note", &r, "note_read");
		if (strcmp(r.state, "SG001") == 0)
			fenced(c, "note_read");
		else if (strcmp(r.state, "SG004") == 0)
		{
			c->owned = 0;
			buf_clear(c);
		}
		after_failure(c, &r);
		res_free(&r);
		return 0;
	}
	res_free(&r);
	t = tx_commit(c, tagc, "note", c->gen);
	if (t == TX_OK)
	{
		logev("note", "ok", "tag=%s", tagc);
		c->noted_to = upto;
		return 1;
	}
	if (t == TX_UNKNOWN)
	{
		/*
		 * The boundary may or may not be recorded: go on as if it were (the
		 * next sink transaction applies it whole, and no other is noted
		 * before; the same note again would change nothing).
		 */
		c->noted_to = upto;
		after_failure(c, NULL);
	}
	return 0;
}

/* positions and digests of recs[0..n) as array literals */
static void
arrays(Rec *recs, int n, Str *pos, Str *dig, Str *pay)
{
	int			i;
	char		h[65];

	str_reset(pos);
	str_reset(dig);
	if (pay)
		str_reset(pay);
	str_add(pos, "{");
	str_add(dig, "{");
	if (pay)
		str_add(pay, "{");
	for (i = 0; i < n; i++)
	{
		hexify(recs[i].dig, 32, h);
		str_addf(pos, "%s%lld", i ? "," : "", (long long) recs[i].pos);
		str_addf(dig, "%s\"\\\\x%s\"", i ? "," : "", h);
		if (pay)
		{
			str_add(pay, i ? ",\"\\\\x" : "\"\\\\x");
			str_add(pay, recs[i].hex);
			str_add(pay, "\"");
		}
	}
	str_add(pos, "}");
	str_add(dig, "}");
	if (pay)
		str_add(pay, "}");
}

/* positions of recs[0..n) as ranges: 1-5,9,12-14 */
static void
ranges(Rec *recs, int n, Str *out)
{
	int			i = 0;

	str_reset(out);
	while (i < n)
	{
		int			j = i;

		while (j + 1 < n && recs[j + 1].pos == recs[j].pos + 1)
			j++;
		if (j > i)
			str_addf(out, "%s%lld-%lld", out->len ? "," : "", (long long) recs[i].pos, (long long) recs[j].pos);
		else
			str_addf(out, "%s%lld", out->len ? "," : "", (long long) recs[i].pos);
		i = j + 1;
	}
	if (!out->s)
		str_add(out, "");
}

/* Insert sink rows for the records whose flag is set. */
static Res
insert_rows(C *c, Rec *recs, int n, const char *flags, const char *tag, int64_t gen)
{
	Str			pos = {0}, pay = {0};
	char		pt[16], g[24];
	const char *p[5];
	int			i, k = 0;
	Res			r;

	memset(&r, 0, sizeof(r));
	str_add(&pos, "{");
	str_add(&pay, "{");
	for (i = 0; i < n; i++)
	{
		if (!flags[i])
			continue;
		str_addf(&pos, "%s%lld", k ? "," : "", (long long) recs[i].pos);
		str_add(&pay, k ? ",\"\\\\x" : "\"\\\\x");
		str_add(&pay, recs[i].hex);
		str_add(&pay, "\"");
		k++;
	}
	str_add(&pos, "}");
	str_add(&pay, "}");
	if (k == 0)
	{
		free(pos.s);
		free(pay.s);
		r.st = ST_OK;
		return r;
	}
	snprintf(pt, sizeof(pt), "%d", cfg.part);
	snprintf(g, sizeof(g), "%lld", (long long) gen);
	p[0] = pt;
	p[1] = g;
	p[2] = tag;
	p[3] = pos.s;
	p[4] = pay.s;
	r = db_exec(&c->db,
				"INSERT INTO rel.sink (part, pos, payload, gen, tag)"
				" SELECT $1::int, u.p, u.pl, $2::bigint, $3 FROM unnest($4::bigint[], $5::bytea[]) AS u(p, pl)",
				5, p);
	if (r.st == ST_OK)
		logev("sinkrows", "ok", "tag=%s n=%d", tag, k);
	free(pos.s);
	free(pay.s);
	return r;
}

static void
newtoken(C *c, char *out, size_t n, int64_t through)
{
	snprintf(out, n, "T%d.%lld.%ld", cfg.part, (long long) through, (long) rnd_range(0, 999999));
	(void) c;
}

/*
 * The sink transaction for buf[0..k): apply_batch, the rows answered new,
 * commit_page (paged partitions), the tag, COMMIT.
 */
static void
sink_tx(C *c, int k)
{
	Str			pos = {0}, dig = {0};
	char		a[24], g[24], tagc[96], ntok[128];
	const char *p[4];
	char	   *flags;
	Res			r;
	int			i, t, nnew = 0;
	Rec		   *recs = c->buf;
	int64_t		last = recs[k - 1].pos;
	int64_t		gen = c->gen;

	snprintf(tagc, sizeof(tagc), "%s", newtag());
	arrays(recs, k, &pos, &dig, NULL);
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) gen);
	p[0] = a;
	p[1] = g;
	p[2] = pos.s;
	p[3] = dig.s;
	if (!tx_begin(c, tagc, cfg.mode == MODE_NOFENCE ? "apply" : "sink"))
	{
		after_failure(c, NULL);
		goto out;
	}
	maybe_timeouts(c, 0);
	{
		Str			rg = {0};

		ranges(recs, k, &rg);
		logev("apply", "invoked", "tag=%s cp=%lld gen=%lld first=%lld last=%lld n=%d applied=%lld pos=%s",
			  tagc, (long long) c->cp, (long long) gen, (long long) recs[0].pos, (long long) last, k,
			  (long long) c->applied, rg.s);
		free(rg.s);
	}
	r = db_exec(&c->db, "SELECT sog.apply_batch($1::bigint, $2::bigint, $3::sog.position[], $4::bytea[])::text", 4, p);
	if (r.st != ST_OK)
	{
		logev("apply", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("apply_batch", &r);
		tx_failed(c, tagc, "sink", &r, "apply_batch");
		if (strcmp(r.state, "SG001") == 0)
			fenced(c, "apply_batch");
		else if (strcmp(r.state, "SG004") == 0 || strcmp(r.state, "SG005") == 0 ||
				 strcmp(r.state, "SG003") == 0)
		{
			c->owned = 0;
			buf_clear(c);
		}
		else if (r.st == ST_ERR && !expected_error(r.state))
		{
			/* a session in a state we do not know: start a fresh one */
			db_connect(&c->db, 0);
		}
		after_failure(c, &r);
		res_free(&r);
		goto out;
	}
	{
		const char *ans = res_val(&r, 0, 0);
		Str			al = {0};
		int			j = 0;

		flags = calloc(k + 1, 1);
		for (i = 0; ans && ans[i]; i++)
		{
			if (ans[i] == 't' || ans[i] == 'f')
			{
				if (j < k)
					flags[j] = (ans[i] == 't');
				str_addn(&al, ans[i] == 't' ? "t" : "f", 1);
				j++;
			}
		}
		if (j != k)
			logev("anomaly", "ok", "what=answer_count tag=%s expected=%d got=%d", tagc, k, j);
		for (i = 0; i < k; i++)
			nnew += flags[i];
		logev("apply", "ok", "tag=%s new=%d answers=%s", tagc, nnew, al.s ? al.s : "");
		free(al.s);
	}
	res_free(&r);
	if (cfg.mode == MODE_IGNORE)
		memset(flags, 1, k);

	if (cfg.mode == MODE_NOFENCE)
	{
		/* BROKEN: the guard's transaction commits alone; rows follow later */
		t = tx_commit(c, tagc, "apply", gen);
		if (t != TX_OK)
		{
			after_failure(c, NULL);
			free(flags);
			goto out;
		}
		sleep_ms(rnd_range(0, 300));
		snprintf(tagc, sizeof(tagc), "%s", newtag());
		if (!tx_begin(c, tagc, "sink"))
		{
			after_failure(c, NULL);
			free(flags);
			goto out;
		}
	}

	r = insert_rows(c, recs, k, flags, tagc, gen);
	free(flags);
	if (r.st != ST_OK)
	{
		logev("sinkrows", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("sink insert", &r);
		tx_failed(c, tagc, "sink", &r, "insert");
		after_failure(c, &r);
		res_free(&r);
		goto out;
	}
	res_free(&r);

	if (cfg.paged)
	{
		const char *pp[4];

		newtoken(c, ntok, sizeof(ntok), last);
		pp[0] = a;
		pp[1] = g;
		pp[2] = c->has_token ? c->token : NULL;
		pp[3] = ntok;
		logev("page", "invoked", "tag=%s expected=%s successor=%s", tagc, c->has_token ? c->token : "NULL", ntok);
		r = db_exec(&c->db, "SELECT sog.commit_page($1::bigint, $2::bigint, $3, $4)", 4, pp);
		if (r.st != ST_OK)
		{
			logev("page", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
			note_error("commit_page", &r);
			tx_failed(c, tagc, "sink", &r, "commit_page");
			if (strcmp(r.state, "SG001") == 0)
				fenced(c, "commit_page");
			else if (strcmp(r.state, "SG006") == 0)
			{
				c->owned = 0;
				buf_clear(c);
			}
			after_failure(c, &r);
			res_free(&r);
			goto out;
		}
		res_free(&r);
		logev("page", "ok", "tag=%s", tagc);
	}

	if (cfg.tx_sleep_max_ms > 0 && chance(cfg.p_tx_sleep))
	{
		long		ms = rnd_range(cfg.tx_sleep_max_ms / 4, cfg.tx_sleep_max_ms);

		logev("txsleep", "ok", "tag=%s ms=%ld", tagc, ms);
		sleep_ms(ms);
	}

	t = tx_commit(c, tagc, "sink", gen);
	if (t == TX_OK)
	{
		if (last > c->applied)
			c->applied = last;
		if (c->noted_to <= c->applied)
			c->noted_to = 0;
		buf_drop(c, k);
		c->retry_pending = 0;
		if (cfg.paged)
		{
			snprintf(c->token, sizeof(c->token), "%s", ntok);
			c->has_token = 1;
		}
		c->fails = 0;
	}
	else if (t == TX_UNKNOWN)
	{
		after_failure(c, NULL);
		if (cfg.paged)
		{
			/* the token is unknown now: claim again */
			c->owned = 0;
			buf_clear(c);
		}
		else
			c->retry_pending = k;	/* apply the same records again */
	}
	else
		after_failure(c, NULL);
out:
	free(pos.s);
	free(dig.s);
}

/* halt: graceful handoff; hashed = 0 halts without a hash (fail closed). */
static void
do_halt(C *c, int hashed)
{
	char		a[24], g[24], cur[24], cnt[24], hash[65], tagc[96];
	const char *p[5];
	long		n;
	Res			r;
	int			has_cursor = c->read_after > c->applied;

	snprintf(tagc, sizeof(tagc), "%s", newtag());
	buf_hash(c, c->read_after, hash, &n);
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	snprintf(cur, sizeof(cur), "%lld", (long long) c->read_after);
	snprintf(cnt, sizeof(cnt), "%ld", n);
	p[0] = a;
	p[1] = g;
	p[2] = has_cursor ? cur : NULL;
	p[3] = (has_cursor && hashed) ? hash : NULL;
	p[4] = cnt;
	logev("halt", "invoked", "tag=%s cp=%lld gen=%lld applied=%lld cursor=%s hashed=%d count=%ld",
		 tagc, (long long) c->cp, (long long) c->gen, (long long) c->applied,
		 has_cursor ? cur : "NULL", hashed && has_cursor, n);
	if (!tx_begin(c, tagc, "halt"))
	{
		after_failure(c, NULL);
		goto out;
	}
	r = db_exec(&c->db, "SELECT verdict, resume_from::text FROM sog.halt($1::bigint, $2::bigint, $3::sog.position, $4, $5::bigint)", 5, p);
	if (r.st != ST_OK)
	{
		logev("halt", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("halt", &r);
		tx_failed(c, tagc, "halt", &r, "halt");
		after_failure(c, &r);
		res_free(&r);
		goto out;
	}
	{
		char		verdict[40], resume[40];

		snprintf(verdict, sizeof(verdict), "%s", res_val(&r, 0, 0));
		snprintf(resume, sizeof(resume), "%s", res_val(&r, 0, 1) ? res_val(&r, 0, 1) : "NULL");
		res_free(&r);
		if (tx_commit(c, tagc, "halt", c->gen) == TX_OK)
			logev("halt", "ok", "tag=%s cp=%lld gen=%lld verdict=%s resume=%s cursor=%s hashed=%d noted=%d",
				 tagc, (long long) c->cp, (long long) c->gen, verdict, resume,
				 has_cursor ? cur : "NULL", hashed && has_cursor, c->noted_to > c->applied);
		else
			after_failure(c, NULL);
	}
out:
	c->owned = 0;
	buf_clear(c);
}

/* skip_gap (telemetry): the buffered records are given up, with a record. */
static void
do_skip(C *c)
{
	char		a[24], g[24], tagc[96];
	const char *p[3];
	Res			r;

	snprintf(tagc, sizeof(tagc), "%s", newtag());
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	p[0] = a;
	p[1] = g;
	p[2] = "telemetry: the reliability workload skips";
	logev("skip", "invoked", "tag=%s cp=%lld gen=%lld applied=%lld cursor=%lld", tagc,
		 (long long) c->cp, (long long) c->gen, (long long) c->applied, (long long) c->read_after);
	if (!tx_begin(c, tagc, "skip"))
	{
		after_failure(c, NULL);
		goto out;
	}
	r = db_exec(&c->db, "SELECT sog.skip_gap($1::bigint, $2::bigint, $3)", 3, p);
	if (r.st != ST_OK)
	{
		logev("skip", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("skip_gap", &r);
		tx_failed(c, tagc, "skip", &r, "skip_gap");
		after_failure(c, &r);
		res_free(&r);
		goto out;
	}
	res_free(&r);
	if (tx_commit(c, tagc, "skip", c->gen) == TX_OK)
		logev("skip", "ok", "tag=%s", tagc);
	else
		after_failure(c, NULL);
out:
	/* claim again to learn the new applied position */
	c->owned = 0;
	buf_clear(c);
}

/*
 * Digests of this checkpoint's receipts in [lo, hi] (sog.receipts), for
 * records the source trimmed after they were applied.  Fills dig of every
 * gone record of recs it finds and clears its gone flag; returns how many.
 */
static int
fill_from_receipts(C *c, Rec *recs, int n, int64_t lo, int64_t hi)
{
	char		a[24], b[24], d[24];
	const char *p[3];
	Res			r;
	int			i, j = 0, filled = 0;

	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(b, sizeof(b), "%lld", (long long) lo);
	snprintf(d, sizeof(d), "%lld", (long long) hi);
	p[0] = a;
	p[1] = b;
	p[2] = d;
	r = db_exec(&c->db, "SELECT \"position\"::text::bigint, encode(payload_digest, 'hex')"
				" FROM sog.receipts($1::bigint, $2::sog.position, $3::sog.position)", 3, p);
	if (r.st != ST_OK)
	{
		logev("receipts", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
		note_error("receipts", &r);
		res_free(&r);
		return 0;
	}
	for (i = 0; i < res_ntuples(&r); i++)
	{
		int64_t		pos = atoll(res_val(&r, i, 0));
		const char *hx = res_val(&r, i, 1);
		int			k;

		while (j < n && recs[j].pos < pos)
			j++;
		if (j < n && recs[j].pos == pos && recs[j].gone)
		{
			for (k = 0; k < 32; k++)
				recs[j].dig[k] = (unsigned char) (unhex_digit(hx[2 * k]) * 16 + unhex_digit(hx[2 * k + 1]));
			recs[j].gone = 0;
			recs[j].hex = NULL;	/* no payload: never written to the sink */
			filled++;
		}
	}
	res_free(&r);
	logev("receipts", "ok", "cp=%lld lo=%lld hi=%lld filled=%d", (long long) c->cp,
		  (long long) lo, (long long) hi, filled);
	return filled;
}

/*
 * gap_replay_required: re-fetch (vfrom, vto], hash it on the client and
 * verify it.  Returns 1 when the checkpoint is running under us.
 *
 * The recorded hash covers what the predecessor held: records the source
 * had trimmed before it read them are not in it, if an operator accepted
 * their loss.  Records trimmed since are missing now: at or below the
 * applied position their digests come from the receipts; above it they are
 * lost, and reported (report_gap) instead of verified.
 */
static int
do_replay(C *c, int64_t vfrom, int64_t vto, long vcount)
{
	Rec		   *recs = NULL;
	int			n, i, j, present = 0;
	int64_t		lost_to = 0;
	unsigned char h[32];
	char		hash[65], a[24], g[24], tagc[96];
	const char *p[3];
	Res			r;
	int			t;

	n = src_fetch(c, vfrom, vto, 0, &recs);
	if (n < 0)
	{
		after_failure(c, NULL);
		return 0;
	}
	/* runs of trimmed records: accepted losses drop out, the rest stay gone */
	for (i = 0; i < n; i = j)
	{
		j = i + 1;
		if (!recs[i].gone)
			continue;
		while (j < n && recs[j].gone)
			j++;
		if (hole_accepted(c, recs[i].pos, recs[j - 1].pos))
		{
			int			k;

			for (k = i; k < j; k++)
				recs[k].gone = 2;	/* not in the recorded hash */
		}
	}
	for (i = 0; i < n; i++)
		if (recs[i].gone == 1 && recs[i].pos <= c->applied)
		{
			fill_from_receipts(c, recs, n, recs[i].pos, c->applied);
			break;
		}
	for (i = 0; i < n; i++)
	{
		if (recs[i].gone == 1)
			lost_to = recs[i].pos;
		else if (!recs[i].gone)
			present++;
	}
	if (lost_to > 0)
	{
		logev("refetch", "ok", "cp=%lld from=%lld to=%lld got=%d expected=%ld missing_through=%lld",
			  (long long) c->cp, (long long) vfrom, (long long) vto, present, vcount, (long long) lost_to);
		recs_free(recs, n);
		if (lost_to > c->applied)
		{
			c->owned = 1;		/* report_gap needs the current generation */
			handle_hole(c, c->applied + 1, lost_to);
			c->owned = 0;
		}
		else
		{
			/*
			 * Records at or below the applied position are gone from the
			 * source and their receipts were pruned: the recorded hash cannot
			 * be rebuilt.  Let an operator decide about (applied, vto].
			 */
			logev("observation", "ok", "what=replay_unverifiable cp=%lld from=%lld to=%lld",
				  (long long) c->cp, (long long) vfrom, (long long) lost_to);
			c->owned = 1;
			do_report_gap(c, vto, "unverifiable");
			c->owned = 0;
			if (cfg.drain)
				drain_resolve(c);
		}
		return 0;
	}
	if (vcount >= 0 && present != vcount)
	{
		/*
		 * The recorded hash covers records that are gone now (an operator
		 * accepted their loss after the predecessor had read them): it
		 * cannot be rebuilt.  Had the accepted gaps covered the whole
		 * boundary, resolve_gap should have cleared it (README: resolve_gap),
		 * and this plan should have been aligned.
		 */
		int			whole = hole_accepted(c, c->applied + 1, vto);

		if (whole)
			logev("anomaly", "ok", "what=boundary_kept_after_accepted_loss cp=%lld from=%lld to=%lld count=%ld",
				  (long long) c->cp, (long long) vfrom, (long long) vto, vcount);
		else
			logev("observation", "ok", "what=boundary_over_accepted_loss cp=%lld from=%lld to=%lld expected=%ld present=%d",
				  (long long) c->cp, (long long) vfrom, (long long) vto, vcount, present);
		recs_free(recs, n);
		c->owned = 1;
		do_report_gap(c, vto, "unverifiable");
		c->owned = 0;
		if (cfg.drain)
			drain_resolve(c);
		return 0;
	}
	bh_init(h);
	for (i = 0; i < n; i++)
		if (!recs[i].gone)
			bh_step(h, recs[i].pos, recs[i].dig);
	hexify(h, 32, hash);
	snprintf(tagc, sizeof(tagc), "%s", newtag());
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	p[0] = a;
	p[1] = g;
	p[2] = hash;
	logev("verify", "invoked", "tag=%s cp=%lld gen=%lld from=%lld to=%lld count=%d expected=%ld hash=%s",
		  tagc, (long long) c->cp, (long long) c->gen, (long long) vfrom, (long long) vto, present,
		  vcount, hash);
	if (!tx_begin(c, tagc, "verify"))
	{
		after_failure(c, NULL);
		recs_free(recs, n);
		return 0;
	}
	r = db_exec(&c->db, "SELECT sog.verify_gap($1::bigint, $2::bigint, $3)", 3, p);
	if (r.st != ST_OK)
	{
		logev("verify", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("verify_gap", &r);
		tx_failed(c, tagc, "verify", &r, "verify_gap");
		after_failure(c, &r);
		res_free(&r);
		recs_free(recs, n);
		return 0;
	}
	{
		int			match = strcmp(res_val(&r, 0, 0), "t") == 0;

		res_free(&r);
		t = tx_commit(c, tagc, "verify", c->gen);
		if (t != TX_OK)
		{
			after_failure(c, NULL);
			recs_free(recs, n);
			return 0;
		}
		logev("verify", "ok", "tag=%s result=%s", tagc, match ? "t" : "f");
		if (!match)
		{
			recs_free(recs, n);
			return 0;
		}
	}
	/* the re-fetched records are read: keep them as the buffer */
	buf_clear(c);
	{
		int			from_start = (cfg.mode == MODE_IGNORE) || (!cfg.drain && chance(500));

		for (i = 0; i < n; i++)
		{
			if (recs[i].gone || !recs[i].hex)
				continue;		/* dropped, or known from its receipt only */
			if (from_start || recs[i].pos > c->applied)
			{
				buf_push(c, &recs[i]);
				recs[i].hex = NULL;
			}
		}
	}
	c->read_after = vto > c->applied ? vto : c->applied;
	c->noted_to = vto;			/* the verified boundary: applied whole next */
	recs_free(recs, n);
	return 1;
}

/*
 * claim: a new generation and its plan, committed with the tag; then follow
 * the plan.  Returns 1 when the checkpoint is ours and running.
 */
static int
do_claim(C *c)
{
	char		a[24], tagc[96], owner[128];
	const char *p[2];
	Res			r;
	int			t;
	int64_t		t0;
	char		verdict[40], vh[80], tok[128], gid[24];
	int64_t		gen, resume, vfrom, vto;
	long		vcount;
	int			tok_null;

	if (cfg.mode == MODE_OWNCURSOR)
		c->own_cursor = c->read_after;	/* the cursor of the lease before */
	snprintf(tagc, sizeof(tagc), "%s", newtag());
	snprintf(owner, sizeof(owner), "%s", tagc);
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	p[0] = a;
	p[1] = owner;
	buf_clear(c);
	c->owned = 0;
	t0 = now_us();
	logev("claim", "invoked", "tag=%s cp=%lld", tagc, (long long) c->cp);
	if (!tx_begin(c, tagc, "claim"))
	{
		after_failure(c, NULL);
		return 0;
	}
	maybe_timeouts(c, 1);
	r = db_exec(&c->db,
				"SELECT generation, verdict, resume_from::text, verify_from::text, verify_to::text,"
				" expected_hash, expected_count, provider_token, gap_id FROM sog.claim($1::bigint, $2)", 2, p);
	if (r.st != ST_OK)
	{
		logev("claim", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("claim", &r);
		tx_failed(c, tagc, "claim", &r, "claim");
		after_failure(c, &r);
		res_free(&r);
		return 0;
	}
	gen = atoll(res_val(&r, 0, 0));
	snprintf(verdict, sizeof(verdict), "%s", res_val(&r, 0, 1));
	resume = parse_pos(res_val(&r, 0, 2));
	vfrom = parse_pos(res_val(&r, 0, 3));
	vto = parse_pos(res_val(&r, 0, 4));
	snprintf(vh, sizeof(vh), "%s", res_val(&r, 0, 5) ? res_val(&r, 0, 5) : "NULL");
	vcount = res_val(&r, 0, 6) ? atol(res_val(&r, 0, 6)) : -1;
	tok_null = res_val(&r, 0, 7) == NULL;
	snprintf(tok, sizeof(tok), "%s", tok_null ? "" : res_val(&r, 0, 7));
	snprintf(gid, sizeof(gid), "%s", res_val(&r, 0, 8) ? res_val(&r, 0, 8) : "NULL");
	res_free(&r);
	t = tx_commit(c, tagc, "claim", gen);
	if (t != TX_OK)
	{
		if (t == TX_UNKNOWN)
			logev("claim", "unknown", "tag=%s cp=%lld gen=%lld", tagc, (long long) c->cp, (long long) gen);
		after_failure(c, NULL);
		return 0;
	}
	logev("claim", "ok", "tag=%s t0=%lld cp=%lld gen=%lld verdict=%s resume=%lld vfrom=%lld vto=%lld vcount=%ld vhash=%s token=%s gap=%s",
		 tagc, (long long) t0, (long long) c->cp, (long long) gen, verdict, (long long) resume,
		 (long long) vfrom, (long long) vto, vcount, vh, tok_null ? "NULL" : tok, gid);
	c->gen = gen;
	c->applied = resume;
	c->read_after = resume;
	c->noted_to = 0;
	if (cfg.mode == MODE_OWNCURSOR && c->own_cursor > resume)
		c->read_after = c->own_cursor;	/* BROKEN: its own cursor */
	c->has_token = !tok_null;
	snprintf(c->token, sizeof(c->token), "%s", tok);
	c->fails = 0;
	if (strcmp(verdict, "aligned") == 0)
	{
		c->owned = 1;
		return 1;
	}
	if (strcmp(verdict, "gap_replay_required") == 0)
	{
		c->owned = do_replay(c, vfrom, vto, vcount);
		return c->owned;
	}
	/* fail_closed or unrecoverable_divergence: a gap awaits an operator */
	if (cfg.drain)
		drain_resolve(c);
	else if (cfg.telemetry)
		do_skip(c);
	return 0;
}

/*
 * Expired-token recovery on a paged partition: begin_recovery from an
 * anchor at or below the applied position, re-read the page, replay it in a
 * sink transaction with recovery_event, promote.  bad_anchor asks for an
 * anchor above the applied position, which must be refused with a gap.
 */
static void
do_recovery(C *c, int bad_anchor)
{
	char		a[24], g[24], an[24], tagc[96], rid[24], ntok[128];
	const char *p[5];
	Res			r;
	int64_t		anchor, page_last;
	int			L, n, i, t, tries;
	Rec		   *recs = NULL;
	char	   *flags;
	Str			ans = {0};
	int			stopped = 0;

	if (!c->has_token || c->applied < 1)
		return;
	anchor = bad_anchor ? c->applied + 1 : c->applied - rnd_range(0, 3);
	if (anchor < 1)
		anchor = 1;
	L = (int) rnd_range(1, 25);
	/* the anchor must still be in the source (it is not trimmed) */
	n = src_fetch(c, anchor - 1, 0, L, &recs);
	if (n < 0)
	{
		after_failure(c, NULL);
		return;
	}
	for (i = 0; i < n; i++)
		if (recs[i].gone)
			break;
	if (n == 0 || recs[0].pos != anchor || i == 0)
	{
		/* the anchor is not in the source (trimmed, or a sparse offset) */
		recs_free(recs, n);
		return;
	}
	n = i;						/* a page of records the source holds */
	page_last = recs[n - 1].pos;

	snprintf(tagc, sizeof(tagc), "%s", newtag());
	snprintf(a, sizeof(a), "%lld", (long long) c->cp);
	snprintf(g, sizeof(g), "%lld", (long long) c->gen);
	snprintf(an, sizeof(an), "%lld", (long long) anchor);
	p[0] = a;
	p[1] = g;
	p[2] = c->token;
	p[3] = an;
	logev("recbegin", "invoked", "tag=%s cp=%lld gen=%lld token=%s anchor=%lld applied=%lld bad=%d",
		 tagc, (long long) c->cp, (long long) c->gen, c->token, (long long) anchor,
		 (long long) c->applied, bad_anchor);
	if (!tx_begin(c, tagc, "recbegin"))
	{
		after_failure(c, NULL);
		recs_free(recs, n);
		return;
	}
	maybe_timeouts(c, 2);
	r = db_exec(&c->db, "SELECT id, state, failure, gap_id FROM sog.begin_recovery($1::bigint, $2::bigint, $3, NULL, $4::sog.position, true)", 4, p);
	if (r.st != ST_OK)
	{
		logev("recbegin", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("begin_recovery", &r);
		tx_failed(c, tagc, "recbegin", &r, "begin_recovery");
		if (strcmp(r.state, "SG001") == 0)
			fenced(c, "begin_recovery");
		after_failure(c, &r);
		res_free(&r);
		recs_free(recs, n);
		return;
	}
	{
		char		state[20], failure[40], gap[24];

		snprintf(rid, sizeof(rid), "%s", res_val(&r, 0, 0));
		snprintf(state, sizeof(state), "%s", res_val(&r, 0, 1));
		snprintf(failure, sizeof(failure), "%s", res_val(&r, 0, 2) ? res_val(&r, 0, 2) : "NULL");
		snprintf(gap, sizeof(gap), "%s", res_val(&r, 0, 3) ? res_val(&r, 0, 3) : "NULL");
		res_free(&r);
		t = tx_commit(c, tagc, "recbegin", c->gen);
		if (t != TX_OK)
		{
			after_failure(c, NULL);
			recs_free(recs, n);
			return;
		}
		logev("recbegin", "ok", "tag=%s rid=%s cp=%lld gen=%lld state=%s failure=%s gap=%s anchor=%lld bad=%d",
			 tagc, rid, (long long) c->cp, (long long) c->gen, state, failure, gap,
			 (long long) anchor, bad_anchor);
		if (strcmp(state, "open") != 0)
		{
			/* receipts_pruned: the operator pruned at or above the anchor meanwhile */
			if (!bad_anchor && strcmp(failure, "receipts_pruned") != 0)
				logev("anomaly", "ok", "what=recovery_refused rid=%s failure=%s", rid, failure);
			/* failed_closed: the operator resolves it */
			c->owned = 0;
			buf_clear(c);
			recs_free(recs, n);
			return;
		}
		if (bad_anchor)
			logev("anomaly", "ok", "what=bad_anchor_accepted rid=%s", rid);
	}

	/* the page, in one sink transaction */
	snprintf(tagc, sizeof(tagc), "%s", newtag());
	flags = calloc(n + 1, 1);
	if (!tx_begin(c, tagc, "rpage"))
	{
		after_failure(c, NULL);
		goto promote;
	}
	maybe_timeouts(c, 0);
	{
		Str			rg = {0};

		ranges(recs, n, &rg);
		logev("rpage", "invoked", "tag=%s rid=%s cp=%lld gen=%lld first=%lld last=%lld n=%d applied=%lld pos=%s",
			  tagc, rid, (long long) c->cp, (long long) c->gen, (long long) anchor,
			  (long long) page_last, n, (long long) c->applied, rg.s);
		free(rg.s);
	}
	for (i = 0; i < n; i++)
	{
		char		ps[24], dh[70];
		const char *pp[3];
		const char *v;

		snprintf(ps, sizeof(ps), "%lld", (long long) recs[i].pos);
		strcpy(dh, "\\x");
		hexify(recs[i].dig, 32, dh + 2);
		pp[0] = rid;
		pp[1] = ps;
		pp[2] = dh;
		r = db_exec(&c->db, "SELECT sog.recovery_event($1::bigint, $2::sog.position, $3::bytea)", 3, pp);
		if (r.st != ST_OK)
		{
			logev("rpage", "failed", "tag=%s rid=%s at=%s sqlstate=%s msg=%s", tagc, rid, ps, r.state, r.msg);
			/* 55000: the attempt was concluded meanwhile (another won, or a claim) */
			if (strcmp(r.state, "55000") != 0)
				note_error("recovery_event", &r);
			tx_failed(c, tagc, "rpage", &r, "recovery_event");
			if (strcmp(r.state, "SG001") == 0)
				fenced(c, "recovery_event");
			after_failure(c, &r);
			res_free(&r);
			free(flags);
			free(ans.s);
			recs_free(recs, n);
			return;
		}
		v = res_val(&r, 0, 0);
		str_addn(&ans, v, 1);	/* v, a, d, m, u, c */
		flags[i] = strcmp(v, "apply") == 0;
		if (strcmp(v, "verified") && strcmp(v, "apply") && strcmp(v, "duplicate"))
		{
			logev("anomaly", "ok", "what=recovery_stop rid=%s at=%s answer=%s", rid, ps, v);
			stopped = 1;
			res_free(&r);
			n = i + 1;
			break;
		}
		res_free(&r);
	}
	logev("rpage", "ok", "tag=%s rid=%s answers=%s", tagc, rid, ans.s ? ans.s : "");
	if (cfg.mode == MODE_IGNORE)
		memset(flags, 1, n);
	r = insert_rows(c, recs, n, flags, tagc, c->gen);
	if (r.st != ST_OK)
	{
		logev("sinkrows", "failed", "tag=%s sqlstate=%s msg=%s", tagc, r.state, r.msg);
		note_error("sink insert", &r);
		tx_failed(c, tagc, "rpage", &r, "insert");
		after_failure(c, &r);
		res_free(&r);
		goto promote;
	}
	res_free(&r);
	t = tx_commit(c, tagc, "rpage", c->gen);
	if (t != TX_OK)
		after_failure(c, NULL);
	if (stopped)
	{
		c->owned = 0;
		buf_clear(c);
		free(flags);
		free(ans.s);
		recs_free(recs, n);
		return;
	}

promote:
	free(flags);
	free(ans.s);
	newtoken(c, ntok, sizeof(ntok), page_last);
	for (tries = 0; tries < 10 && !stop_flag; tries++)
	{
		char		pl[24];
		const char *pp[3];

		snprintf(tagc, sizeof(tagc), "%s", newtag());
		snprintf(pl, sizeof(pl), "%lld", (long long) page_last);
		pp[0] = rid;
		pp[1] = ntok;
		pp[2] = pl;
		logev("promote", "invoked", "tag=%s rid=%s cp=%lld gen=%lld token=%s last=%s try=%d",
			 tagc, rid, (long long) c->cp, (long long) c->gen, ntok, pl, tries);
		if (!tx_begin(c, tagc, "promote"))
		{
			after_failure(c, NULL);
			continue;
		}
		maybe_timeouts(c, 2);
		r = db_exec(&c->db, "SELECT promoted, generation, applied_position::text, provider_token, reason FROM sog.promote($1::bigint, $2, $3::sog.position)", 3, pp);
		if (r.st != ST_OK)
		{
			logev("promote", "failed", "tag=%s rid=%s sqlstate=%s msg=%s", tagc, rid, r.state, r.msg);
			note_error("promote", &r);
			tx_failed(c, tagc, "promote", &r, "promote");
			after_failure(c, &r);
			res_free(&r);
			if (strcmp(r.state, "57014") == 0 || strcmp(r.state, "55P03") == 0 || r.st == ST_LOST)
			{
				sleep_ms(10);
				continue;
			}
			break;
		}
		{
			char		promoted[8], reason[40], rtok[128];
			int64_t		rgen = atoll(res_val(&r, 0, 1));
			int64_t		rapp = parse_pos(res_val(&r, 0, 2));

			snprintf(promoted, sizeof(promoted), "%s", res_val(&r, 0, 0));
			snprintf(reason, sizeof(reason), "%s", res_val(&r, 0, 4));
			snprintf(rtok, sizeof(rtok), "%s", res_val(&r, 0, 3) ? res_val(&r, 0, 3) : "");
			res_free(&r);
			t = tx_commit(c, tagc, "promote", rgen);
			if (t == TX_UNKNOWN)
			{
				logev("promote", "unknown", "tag=%s rid=%s promoted=%s gen=%lld applied=%lld reason=%s",
					 tagc, rid, promoted, (long long) rgen, (long long) rapp, reason);
				after_failure(c, NULL);
				continue;		/* a retry converges */
			}
			if (t != TX_OK)
			{
				after_failure(c, NULL);
				continue;
			}
			logev("promote", "ok", "tag=%s rid=%s cp=%lld promoted=%s gen=%lld applied=%lld token=%s reason=%s",
				 tagc, rid, (long long) c->cp, promoted, (long long) rgen, (long long) rapp, rtok, reason);
			if (strcmp(promoted, "t") == 0)
			{
				c->gen = rgen;
				c->applied = rapp;
				c->read_after = rapp;
				snprintf(c->token, sizeof(c->token), "%s", rtok);
				c->has_token = 1;
				buf_clear(c);
			}
			else
			{
				/* lost, unresolved, page_incomplete: claim again */
				c->owned = 0;
				buf_clear(c);
			}
			break;
		}
	}
	recs_free(recs, n);
}

/* A lease ends: halt, crash between or inside transactions, or skip. */
static void
end_lease(C *c)
{
	long		x = rnd_range(0, 999);

	/*
	 * After an unknown COMMIT our applied position may be stale: resolve it
	 * (apply the same records again) before noting, halting or skipping.
	 */
	if (c->retry_pending > 0)
	{
		sink_tx(c, c->retry_pending <= c->nbuf ? c->retry_pending : c->nbuf);
		return;
	}
	/* most leases end with records read and noted but not applied */
	if (c->nbuf == 0 && c->retry_pending == 0 && chance(700))
	{
		if (!read_more(c, (int) rnd_range(1, cfg.batch_max)) && !c->owned)
			return;
	}
	if (cfg.telemetry && x < 150 && c->nbuf > 0)
	{
		do_note(c, c->read_after);
		do_skip(c);
		return;
	}
	if (x < cfg.p_crash / 2)
	{
		logev("crash", "ok", "cp=%lld gen=%lld where=between applied=%lld cursor=%lld",
			 (long long) c->cp, (long long) c->gen, (long long) c->applied, (long long) c->read_after);
		db_close(&c->db);
		c->owned = 0;
		buf_clear(c);
		db_connect(&c->db, 0);
		return;
	}
	if (x < cfg.p_crash && c->nbuf > 0)
	{
		Str			pos = {0}, dig = {0};
		char		a[24], g[24];
		const char *p[4];
		Res			r;

		arrays(c->buf, c->nbuf, &pos, &dig, NULL);
		snprintf(a, sizeof(a), "%lld", (long long) c->cp);
		snprintf(g, sizeof(g), "%lld", (long long) c->gen);
		p[0] = a;
		p[1] = g;
		p[2] = pos.s;
		p[3] = dig.s;
		db_quiet(&c->db, "BEGIN");
		r = db_exec(&c->db, "SELECT sog.apply_batch($1::bigint, $2::bigint, $3::sog.position[], $4::bytea[])", 4, p);
		res_free(&r);
		logev("crash", "ok", "cp=%lld gen=%lld where=in_tx applied=%lld cursor=%lld",
			 (long long) c->cp, (long long) c->gen, (long long) c->applied, (long long) c->read_after);
		free(pos.s);
		free(dig.s);
		db_close(&c->db);
		c->owned = 0;
		buf_clear(c);
		db_connect(&c->db, 0);
		return;
	}
	do_halt(c, x < 900);
}

/*
 * Read up to want more records after read_after into the buffer and note
 * the read boundary (committed before any sink transaction applies them).
 * Stops at records the source trimmed: those are a hole (handle_hole).
 * Returns 1 when records were read and noted.
 */
static int
read_more(C *c, int want)
{
	Rec		   *recs = NULL;
	int			n, i, k;

	if (c->read_after >= c->source_end)
		return 0;
	n = src_fetch(c, c->read_after, 0, want, &recs);
	if (n < 0)
	{
		after_failure(c, NULL);
		return 0;
	}
	if (n == 0)
	{
		free(recs);
		return 0;
	}
	if (recs[0].gone)
	{
		int64_t		lo = recs[0].pos, hi = recs[0].pos;

		for (i = 1; i < n && recs[i].gone; i++)
			hi = recs[i].pos;
		recs_free(recs, n);
		handle_hole(c, lo, hi);
		return 0;
	}
	for (k = 1; k < n; k++)
		if (recs[k].gone)
			break;
	for (i = 0; i < k; i++)
	{
		buf_push(c, &recs[i]);
		recs[i].hex = NULL;
	}
	c->read_after = recs[k - 1].pos;
	recs_free(recs, n);
	return do_note(c, c->read_after);	/* page k+1 waits while page k is open */
}

/*
 * One step of an owned partition: read (and note) more if the buffer is
 * short, then apply all or part of the buffer.
 */
static void
step(C *c)
{
	int			i, nnew = 0;
	int			want = (int) rnd_range(1, cfg.batch_max);

	if (c->retry_pending > 0)
	{
		sink_tx(c, c->retry_pending <= c->nbuf ? c->retry_pending : c->nbuf);
		return;
	}
	for (i = 0; i < c->nbuf; i++)
		nnew += c->buf[i].pos > c->applied;
	if (nnew < want && c->read_after < c->source_end)
	{
		if (!read_more(c, want - nnew))
			return;
	}
	if (c->nbuf == 0)
	{
		if (!cfg.drain)
			sleep_ms(50);
		else if (c->read_after >= c->source_end)
			c->done = 1;
		return;
	}
	{
		int			k = c->nbuf;
		int			open = 0;

		if (!cfg.drain && k > 1 && chance(300))
			k = (int) rnd_range(1, k - 1);
		/* the open boundary is applied whole, in this sink transaction */
		while (open < c->nbuf && c->noted_to > c->applied && c->buf[open].pos <= c->noted_to)
			open++;
		if (k < open)
			k = open;
		/* no boundary open: note what this transaction applies first */
		if (c->noted_to <= c->applied && c->buf[k - 1].pos > c->applied &&
			!do_note(c, c->buf[k - 1].pos))
			return;
		sink_tx(c, k);
	}
}

static void
consumer_init(C *c)
{
	memset(c, 0, sizeof(*c));
	c->db.conninfo = cfg.conninfo;
	c->db.iit_ms = cfg.iit_ms;
	c->op.conninfo = cfg.opconninfo ? cfg.opconninfo : cfg.conninfo;
}

static int
consumer_main(void)
{
	C			c;

	consumer_init(&c);
	if (!db_connect(&c.db, cfg.deadline))
		return 1;
	detect_features(&c);
	c.cp = do_register(&c);
	if (c.cp < 0)
		return 1;
	source_end(&c);
	while (!stop_flag && now_us() < cfg.deadline)
	{
		if (!db_ok(&c.db) && !db_connect(&c.db, cfg.deadline))
			break;
		if (!c.owned)
		{
			if (!cfg.oneshot || tag_seq > 0)
				sleep_ms(rnd_range(cfg.idle_min_ms, cfg.idle_max_ms));
			if (stop_flag || now_us() >= cfg.deadline)
				break;
			if (do_claim(&c))
				c.lease_until = now_us() + 1000LL * rnd_range(cfg.lease_min_ms, cfg.lease_max_ms);
			continue;
		}
		if (now_us() > c.lease_until)
		{
			end_lease(&c);
			if (cfg.oneshot)
				break;
			continue;
		}
		if (cfg.paged && c.retry_pending == 0 && c.nbuf == 0 && chance(cfg.p_recovery))
		{
			do_recovery(&c, chance(cfg.p_bad_anchor));
			continue;
		}
		step(&c);
		if (cfg.pace_ms > 0)
			sleep_ms(rnd_range(0, cfg.pace_ms));
	}
	if (c.owned && db_ok(&c.db) && c.retry_pending > 0)
		sink_tx(&c, c.retry_pending <= c.nbuf ? c.retry_pending : c.nbuf);
	if (c.owned && db_ok(&c.db) && c.retry_pending == 0)
		do_halt(&c, 1);
	logev("exit", "ok", "stop=%d", (int) stop_flag);
	db_close(&c.db);
	return 0;
}

/* ------------------------------------------------------------ drain */

static int
drain_main(void)
{
	char	   *list = xstrdup(cfg.parts);
	char	   *tok, *save = NULL;
	int			failed = 0;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		C			c;
		int			paged = 0, tele = 0, guard = 0;
		char	   *colon = strchr(tok, ':');

		/* part[:flags] with flags p (paged) and t (telemetry) */
		if (colon)
		{
			paged = strchr(colon, 'p') != NULL;
			tele = strchr(colon, 't') != NULL;
			*colon = '\0';
		}
		cfg.part = atoi(tok);
		cfg.paged = paged;
		cfg.telemetry = tele;
		consumer_init(&c);
		if (!db_connect(&c.db, cfg.deadline))
		{
			failed++;
			continue;
		}
		detect_features(&c);
		c.cp = do_register(&c);
		source_end(&c);
		while (!c.done && now_us() < cfg.deadline)
		{
			if (!db_ok(&c.db) && !db_connect(&c.db, cfg.deadline))
				break;
			if (!c.owned)
			{
				if (guard++ > 0)
					sleep_ms(50);
				do_claim(&c);
				continue;
			}
			step(&c);
		}
		if (c.done)
		{
			do_halt(&c, 1);
			logev("drained", "ok", "part=%d cp=%lld applied=%lld end=%lld", cfg.part,
				 (long long) c.cp, (long long) c.applied, (long long) c.source_end);
		}
		else
		{
			logev("drained", "failed", "part=%d cp=%lld applied=%lld end=%lld", cfg.part,
				 (long long) c.cp, (long long) c.applied, (long long) c.source_end);
			failed++;
		}
		db_close(&c.db);
		db_close(&c.op);
	}
	free(list);
	return failed ? 1 : 0;
}

/* ------------------------------------------------------------ race */

/*
 * One contender: reads "round gen token applied" lines from the
 * coordinator, runs one recovery attempt for each, answers "done".
 */
static void
contender_loop(int idx, int rfd, int wfd)
{
	C			c;
	FILE	   *in = fdopen(rfd, "r");
	char		line[512];
	char		path[600];

	snprintf(proc_name, sizeof(proc_name), "%s-k%d", cfg.name, idx);
	snprintf(path, sizeof(path), "%s/%s.log", cfg.logdir, proc_name);
	open_log(path);
	rng_state ^= (uint64_t) (idx + 1) * 0x9E3779B97F4A7C15ULL;
	consumer_init(&c);
	db_connect(&c.db, 0);
	while (fgets(line, sizeof(line), in))
	{
		long		round;
		long long	gen, applied;
		char		token[120];

		if (sscanf(line, "R %ld %lld %119s %lld", &round, &gen, token, &applied) != 4)
			break;
		if (!db_ok(&c.db))
			db_connect(&c.db, 0);
		c.cp = atoll(getenv("SOG_RACE_CP"));
		c.gen = gen;
		c.applied = applied;
		c.read_after = applied;
		c.owned = 1;
		c.has_token = strcmp(token, "NULL") != 0;
		snprintf(c.token, sizeof(c.token), "%s", token);
		logev("round", "ok", "round=%ld gen=%lld applied=%lld token=%s", round, gen, applied, token);
		do_recovery(&c, 0);
		if (write(wfd, "D\n", 2) != 2)
			break;
	}
	logev("exit", "ok", "");
	exit(0);
}

static int
race_main(void)
{
	C			c;
	int			K = cfg.contenders, i;
	int			to[64], from[64];
	pid_t		pids[64];
	long		round;
	char		cpbuf[32];

	if (K > 64)
		K = 64;
	consumer_init(&c);
	if (!db_connect(&c.db, cfg.deadline))
		return 1;
	detect_features(&c);
	c.cp = do_register(&c);
	source_end(&c);
	snprintf(cpbuf, sizeof(cpbuf), "%lld", (long long) c.cp);
	setenv("SOG_RACE_CP", cpbuf, 1);
	fflush(logf_);
	for (i = 0; i < K; i++)
	{
		int			a[2], b[2];

		if (pipe(a) || pipe(b))
			die("pipe: %s", strerror(errno));
		pids[i] = fork();
		if (pids[i] == 0)
		{
			int			j;

			close(a[1]);
			close(b[0]);
			for (j = 0; j < i; j++)
			{
				close(to[j]);
				close(from[j]);
			}
			fclose(logf_);
			logf_ = NULL;
			db_close(&c.db);
			contender_loop(i, a[0], b[1]);
		}
		close(a[0]);
		close(b[1]);
		to[i] = a[1];
		from[i] = b[0];
	}
	for (round = 1; round <= cfg.rounds && !stop_flag && now_us() < cfg.deadline; round++)
	{
		char		msg[400];
		int			tries = 0;

		/* a fresh generation for the round, running and with a token */
		while (!stop_flag && now_us() < cfg.deadline)
		{
			if (!db_ok(&c.db) && !db_connect(&c.db, cfg.deadline))
				break;
			if (!c.owned && !do_claim(&c))
			{
				sleep_ms(20 + 10 * (tries++ % 10));
				continue;
			}
			if (!c.has_token || c.applied < 1 || chance(200))
			{
				/* apply a few records normally (sets the first token) */
				int			want = (int) rnd_range(1, 10);
				Rec		   *recs = NULL;
				int			n = src_fetch(&c, c.read_after, 0, want, &recs);

				int			k = 0;

				while (k < n && !recs[k].gone)
					k++;
				if (k > 0)
				{
					for (i = 0; i < k; i++)
					{
						buf_push(&c, &recs[i]);
						recs[i].hex = NULL;
					}
					c.read_after = recs[k - 1].pos;
					if (do_note(&c, c.read_after))
						sink_tx(&c, c.nbuf);
				}
				if (recs)
					recs_free(recs, n > 0 ? n : 0);
				if (!c.owned || c.nbuf > 0 || !c.has_token)
				{
					c.owned = 0;
					continue;
				}
			}
			break;
		}
		if (stop_flag || now_us() >= cfg.deadline)
			break;
		logev("round", "invoked", "round=%ld cp=%lld gen=%lld applied=%lld token=%s", round,
			 (long long) c.cp, (long long) c.gen, (long long) c.applied, c.token);
		snprintf(msg, sizeof(msg), "R %ld %lld %s %lld\n", round, (long long) c.gen,
				 c.has_token ? c.token : "NULL", (long long) c.applied);
		for (i = 0; i < K; i++)
			if (write(to[i], msg, strlen(msg)) < 0)
				die("contender %d is gone", i);
		if (chance(100))
		{
			/* a claim racing the attempts: they must all be fenced or lose */
			sleep_ms(rnd_range(0, 20));
			c.owned = 0;
			do_claim(&c);
		}
		for (i = 0; i < K; i++)
		{
			char		d[4];

			if (read(from[i], d, 2) != 2)
				die("contender %d died", i);
		}
		logev("round", "ok", "round=%ld", round);
		/* the winner's promotion bumped the generation: claim again */
		c.owned = 0;
	}
	for (i = 0; i < K; i++)
		close(to[i]);
	for (i = 0; i < K; i++)
		waitpid(pids[i], NULL, 0);
	logev("exit", "ok", "rounds=%ld", round - 1);
	return 0;
}

/* ------------------------------------------------------------ monitor */

static int
monitor_main(void)
{
	Db			db;
	int64_t		last_connect = 0;

	memset(&db, 0, sizeof(db));
	db.conninfo = cfg.conninfo;
	while (!stop_flag && now_us() < cfg.deadline)
	{
		int64_t		t0;
		Res			r;
		int			i;

		if (!db_ok(&db) || (cfg.reconnect_ms > 0 && now_us() - last_connect > cfg.reconnect_ms * 1000LL))
		{
			if (!db_connect(&db, cfg.deadline))
				break;
			last_connect = now_us();
		}
		t0 = now_us();
		r = db_exec(&db, "SELECT checkpoint_id, generation, coalesce(applied_position::text, '0'), state,"
					" pg_is_in_recovery(), open_gaps, coalesce(source_cursor::text, '0')"
					" FROM sog.status ORDER BY 1", 0, NULL);
		if (r.st == ST_OK)
		{
			for (i = 0; i < res_ntuples(&r); i++)
			{
				const char *state = res_val(&r, i, 3);
				long		open = atol(res_val(&r, i, 5));

				logev("status", "ok", "t0=%lld cp=%s gen=%s applied=%s state=%s standby=%s open_gaps=%ld cursor=%s",
					  (long long) t0, res_val(&r, i, 0), res_val(&r, i, 1), res_val(&r, i, 2),
					  state, res_val(&r, i, 4), open, res_val(&r, i, 6));
				/* one snapshot: failed_closed exactly when a gap is open */
				if ((strcmp(state, "failed_closed") == 0) != (open > 0))
					logev("anomaly", "ok", "what=state_without_gap cp=%s state=%s open_gaps=%ld",
						  res_val(&r, i, 0), state, open);
				if (atoll(res_val(&r, i, 6)) < atoll(res_val(&r, i, 2)))
					logev("anomaly", "ok", "what=cursor_below_applied cp=%s cursor=%s applied=%s",
						  res_val(&r, i, 0), res_val(&r, i, 6), res_val(&r, i, 2));
			}
		}
		else
		{
			logev("status", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
			note_error("status", &r);
		}
		res_free(&r);
		sleep_ms(cfg.interval_ms);
	}
	logev("exit", "ok", "");
	return 0;
}

/* ------------------------------------------------------------ operator */

static int
operator_main(void)
{
	Db			db;
	int64_t		next_trim = now_us() + 2000000;
	int64_t		next_prune = now_us() + 1500000;

	memset(&db, 0, sizeof(db));
	db.conninfo = cfg.conninfo;
	while (!stop_flag && now_us() < cfg.deadline)
	{
		Res			r;
		int			i;

		if (!db_ok(&db) && !db_connect(&db, cfg.deadline))
			break;
		/* gaps older than a moment (telemetry workers may skip theirs first) */
		r = db_exec(&db,
					"SELECT g.gap_id, CASE WHEN EXISTS (SELECT 1 FROM rel.source s"
					"   WHERE s.part = substr(g.\"partition\", 2)::int AND s.trimmed"
					"   AND (g.from_position IS NULL OR s.pos::sog.position OPERATOR(sog.>) g.from_position)"
					"   AND s.pos::sog.position OPERATOR(sog.<=) g.to_position) THEN 'accepted_loss' ELSE 'replayed' END,"
					" g.checkpoint_id, g.reason"
					" FROM sog.unresolved_gaps g"
					" WHERE g.criticality = 'critical' OR g.age > interval '2 seconds'"
					" ORDER BY g.gap_id", 0, NULL);
		if (r.st != ST_OK)
		{
			logev("unresolved", "failed", "sqlstate=%s msg=%s", r.state, r.msg);
			note_error("unresolved_gaps", &r);
			res_free(&r);
			sleep_ms(200);
			continue;
		}
		for (i = 0; i < res_ntuples(&r) && !stop_flag; i++)
		{
			const char *pp[3];
			Res			r2;

			pp[0] = res_val(&r, i, 0);
			pp[1] = res_val(&r, i, 1);
			pp[2] = strcmp(pp[1], "replayed") == 0
				? "the source still holds these records; the consumer re-reads them"
				: "the source trimmed these records (retention); loss accepted by the harness";
			logev("resolve", "invoked", "gap=%s cp=%s reason=%s resolution=%s", pp[0],
				 res_val(&r, i, 2), res_val(&r, i, 3), pp[1]);
			r2 = db_exec(&db, "SELECT sog.resolve_gap($1::bigint, $2, $3)", 3, pp);
			if (r2.st == ST_OK)
				logev("resolve", "ok", "gap=%s resolution=%s", pp[0], pp[1]);
			else
			{
				logev("resolve", "failed", "gap=%s sqlstate=%s msg=%s", pp[0], r2.state, r2.msg);
				if (strcmp(r2.state, "55000") != 0)
					note_error("resolve_gap", &r2);
			}
			res_free(&r2);
		}
		res_free(&r);
		if (cfg.trim && now_us() > next_prune)
		{
			/*
			 * Drop receipts well below a checkpoint's applied position, the
			 * way a retention policy does.  Not closer than 50: pruning at or
			 * above an open recovery attempt's anchor (a few below applied)
			 * stops that attempt as unverifiable (see README.md, "What it
			 * found").  An attempt a consumer left open (its session was
			 * lost inside the recovery page; it then went on applying with
			 * its token) keeps its old anchor while the applied position
			 * moves on: prune_receipts then refuses (55000, "while recovery
			 * attempt N is open") until a claim or promotion concludes it.
			 * That refusal is logged as "prune refused" with what it cites,
			 * and check.pl verifies it against the final database (the
			 * attempt is of that checkpoint, its anchor at or below the
			 * prune's, and it was not concluded before the prune began);
			 * any other failure is an anomaly as before.
			 */
			char		back[24];
			const char *pp[1];
			Res			r4;
			long long	t_prune = now_us(), rcp, rthrough, rrid;

			snprintf(back, sizeof(back), "%ld", rnd_range(50, 300));
			pp[0] = back;
			logev("prune", "invoked", "back=%s", back);
			r4 = db_exec(&db,
						 "SELECT checkpoint_id, p, sog.prune_receipts(checkpoint_id, p::sog.position)"
						 "  FROM (SELECT checkpoint_id, applied_position::text::bigint - $1::bigint AS p"
						 "          FROM sog.status WHERE applied_position IS NOT NULL"
						 "         ORDER BY random() LIMIT 1) s WHERE p > 0", 1, pp);
			if (r4.st == ST_OK && res_ntuples(&r4) > 0)
				logev("prune", "ok", "cp=%s through=%s dropped=%s", res_val(&r4, 0, 0),
					  res_val(&r4, 0, 1), res_val(&r4, 0, 2));
			else if (r4.st == ST_ERR && strcmp(r4.state, "55000") == 0 &&
					 sscanf(r4.msg, "cannot prune receipts of checkpoint %lld through %lld while recovery attempt %lld is open",
							&rcp, &rthrough, &rrid) == 3)
				logev("prune", "refused", "cp=%lld through=%lld rid=%lld t0=%lld sqlstate=%s msg=%s",
					  rcp, rthrough, rrid, t_prune, r4.state, r4.msg);
			else if (r4.st != ST_OK)
			{
				logev("prune", "failed", "sqlstate=%s msg=%s", r4.state, r4.msg);
				note_error("prune_receipts", &r4);
			}
			res_free(&r4);
			next_prune = now_us() + 1000LL * rnd_range(1000, 3000);
		}
		if (cfg.trim && now_us() > next_trim)
		{
			/* retention: trim a few records just above a critical partition's applied position */
			char		through[24];
			const char *pp[1];
			Res			r3;

			snprintf(through, sizeof(through), "%ld", rnd_range(1, 40));
			pp[0] = through;
			r3 = db_exec(&db,
						 "WITH c AS (SELECT substr(\"partition\", 2)::int AS part,"
						 "   coalesce(applied_position::text, '0')::bigint AS applied"
						 "   FROM sog.status WHERE \"partition\" IN ('p1', 'p2', 'p3') ORDER BY random() LIMIT 1),"
						 " t AS (UPDATE rel.source s SET trimmed = true FROM c"
						 "   WHERE s.part = c.part AND s.pos <= c.applied + $1::bigint AND NOT s.trimmed"
						 "   RETURNING s.part, s.pos)"
						 " SELECT part, count(*), min(pos), max(pos) FROM t GROUP BY part", 1, pp);
			if (r3.st == ST_OK && res_ntuples(&r3) > 0)
				logev("trim", "ok", "part=%s n=%s from=%s to=%s", res_val(&r3, 0, 0),
					 res_val(&r3, 0, 1), res_val(&r3, 0, 2), res_val(&r3, 0, 3));
			else if (r3.st != ST_OK)
				logev("trim", "failed", "sqlstate=%s msg=%s", r3.state, r3.msg);
			res_free(&r3);
			next_trim = now_us() + 1000LL * rnd_range(1500, 4000);
		}
		sleep_ms(cfg.interval_ms);
	}
	logev("exit", "ok", "");
	return 0;
}

/* ------------------------------------------------------------ probe-ro */

static int
probe_ro_main(void)
{
	Db			db;
	Res			r;
	int			bad = 0;
	const char *p[2] = {"1", "probe-ro"};

	memset(&db, 0, sizeof(db));
	db.conninfo = cfg.conninfo;
	if (!db_connect(&db, now_us() + 20000000LL))
		return 1;
	r = db_exec(&db, "SELECT pg_is_in_recovery()", 0, NULL);
	logev("probe", "ok", "what=in_recovery value=%s", r.st == ST_OK ? res_val(&r, 0, 0) : "?");
	res_free(&r);
	r = db_exec(&db, "SELECT * FROM sog.claim($1::bigint, $2)", 2, p);
	if (r.st == ST_ERR && strcmp(r.state, "25006") == 0)
		logev("probe", "ok", "what=claim sqlstate=25006 msg=%s", r.msg);
	else
	{
		logev("probe", "failed", "what=claim sqlstate=%s msg=%s", r.st == ST_OK ? "none" : r.state, r.msg);
		logev("anomaly", "ok", "what=standby_write_not_refused op=claim sqlstate=%s", r.st == ST_OK ? "none" : r.state);
		bad++;
	}
	res_free(&r);
	db_quiet(&db, "BEGIN");
	r = db_exec(&db, "SELECT sog.apply_batch(1, 1, '{1}'::sog.position[], ARRAY[sog.payload_digest('x')])", 0, NULL);
	if (r.st == ST_ERR && strcmp(r.state, "25006") == 0)
		logev("probe", "ok", "what=apply_batch sqlstate=25006 msg=%s", r.msg);
	else
	{
		logev("probe", "failed", "what=apply_batch sqlstate=%s msg=%s", r.st == ST_OK ? "none" : r.state, r.msg);
		logev("anomaly", "ok", "what=standby_write_not_refused op=apply_batch sqlstate=%s", r.st == ST_OK ? "none" : r.state);
		bad++;
	}
	res_free(&r);
	db_close(&db);
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------ hash self-check */

static int
hash_selfcheck(void)
{
	unsigned char h[32], d[32];
	char		hx[65];
	const char *abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	const char *empty = "a4fe37cfaf3470bf574e1544c63855498304af702e8bf65b7a2bc4ec0bff513b";
	const char *three = "f53069add00305033cb5db7db4d9c8c8dfcd08d789aa196e909a40526c104f70";
	int			bad = 0;

	sha256("abc", 3, h);
	hexify(h, 32, hx);
	bad += strcmp(hx, abc) != 0;
	bh_init(h);
	hexify(h, 32, hx);
	bad += strcmp(hx, empty) != 0;
	sha256("a", 1, d);
	bh_step(h, 100, d);
	sha256("b", 1, d);
	bh_step(h, 101, d);
	sha256("c", 1, d);
	bh_step(h, 102, d);
	hexify(h, 32, hx);
	bad += strcmp(hx, three) != 0;
	printf("hashcheck: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------ main */

static void
usage(void)
{
	fprintf(stderr,
			"usage: sogload consumer|race|monitor|operator|drain|probe-ro|hashcheck [options]\n"
			"  --conn CONNINFO --opconn CONNINFO --log FILE --logdir DIR --name NAME\n"
			"  --part N --paged --telemetry --parts 0:p,1,4:t --seconds S --seed N\n"
			"  --batch-max N --lease MIN,MAX --idle MIN,MAX (ms) --tx-sleep MAX,PERMILLE\n"
			"  --recovery PERMILLE --bad-anchor PERMILLE --crash PERMILLE --timeouts\n"
			"  --iit MS --claim-timeout MS --mode normal|ignore-answer|own-cursor|nofence\n"
			"  --oneshot --contenders N --rounds N --interval MS --trim --reconnect MS\n"
			"  --pace MS\n");
	exit(2);
}

static void
pair(const char *s, int *a, int *b)
{
	if (sscanf(s, "%d,%d", a, b) != 2)
		usage();
}

int
main(int argc, char **argv)
{
	static struct option opts[] = {
		{"conn", required_argument, 0, 'c'},
		{"opconn", required_argument, 0, 'O'},
		{"log", required_argument, 0, 'l'},
		{"logdir", required_argument, 0, 'L'},
		{"name", required_argument, 0, 'n'},
		{"part", required_argument, 0, 'p'},
		{"parts", required_argument, 0, 'P'},
		{"paged", no_argument, 0, 'g'},
		{"telemetry", no_argument, 0, 'T'},
		{"seconds", required_argument, 0, 's'},
		{"seed", required_argument, 0, 'S'},
		{"batch-max", required_argument, 0, 'b'},
		{"lease", required_argument, 0, 'e'},
		{"idle", required_argument, 0, 'i'},
		{"tx-sleep", required_argument, 0, 'z'},
		{"recovery", required_argument, 0, 'r'},
		{"bad-anchor", required_argument, 0, 'B'},
		{"crash", required_argument, 0, 'k'},
		{"timeouts", no_argument, 0, 't'},
		{"iit", required_argument, 0, 'I'},
		{"claim-timeout", required_argument, 0, 'C'},
		{"mode", required_argument, 0, 'm'},
		{"oneshot", no_argument, 0, '1'},
		{"contenders", required_argument, 0, 'K'},
		{"rounds", required_argument, 0, 'R'},
		{"interval", required_argument, 0, 'v'},
		{"trim", no_argument, 0, 'x'},
		{"reconnect", required_argument, 0, 'X'},
		{"pace", required_argument, 0, 'a'},
		{0, 0, 0, 0}
	};
	const char *role;
	int			o;
	struct sigaction sa;

	if (argc < 2)
		usage();
	role = argv[1];
	cfg.batch_max = 50;
	cfg.lease_min_ms = 300;
	cfg.lease_max_ms = 3000;
	cfg.idle_min_ms = 100;
	cfg.idle_max_ms = 1500;
	cfg.p_tx_sleep = 0;
	cfg.p_recovery = 20;
	cfg.p_bad_anchor = 30;
	cfg.p_crash = 400;
	cfg.seconds = 10;
	cfg.contenders = 8;
	cfg.rounds = 100;
	cfg.interval_ms = 50;
	cfg.name = role;
	cfg.seed = getpid();
	while ((o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1)
	{
		switch (o)
		{
			case 'c': cfg.conninfo = optarg; break;
			case 'O': cfg.opconninfo = optarg; break;
			case 'l': cfg.logpath = optarg; break;
			case 'L': cfg.logdir = optarg; break;
			case 'n': cfg.name = optarg; break;
			case 'p': cfg.part = atoi(optarg); break;
			case 'P': cfg.parts = optarg; break;
			case 'g': cfg.paged = 1; break;
			case 'T': cfg.telemetry = 1; break;
			case 's': cfg.seconds = atof(optarg); break;
			case 'S': cfg.seed = atol(optarg); break;
			case 'b': cfg.batch_max = atoi(optarg); break;
			case 'e': pair(optarg, &cfg.lease_min_ms, &cfg.lease_max_ms); break;
			case 'i': pair(optarg, &cfg.idle_min_ms, &cfg.idle_max_ms); break;
			case 'z': pair(optarg, &cfg.tx_sleep_max_ms, &cfg.p_tx_sleep); break;
			case 'r': cfg.p_recovery = atoi(optarg); break;
			case 'B': cfg.p_bad_anchor = atoi(optarg); break;
			case 'k': cfg.p_crash = atoi(optarg); break;
			case 't': cfg.timeouts = 1; break;
			case 'I': cfg.iit_ms = atoi(optarg); break;
			case 'C': cfg.claim_timeout_ms = atoi(optarg); break;
			case 'm':
				if (strcmp(optarg, "normal") == 0)
					cfg.mode = MODE_NORMAL;
				else if (strcmp(optarg, "ignore-answer") == 0)
					cfg.mode = MODE_IGNORE;
				else if (strcmp(optarg, "own-cursor") == 0)
					cfg.mode = MODE_OWNCURSOR;
				else if (strcmp(optarg, "nofence") == 0)
					cfg.mode = MODE_NOFENCE;
				else
					usage();
				break;
			case '1': cfg.oneshot = 1; break;
			case 'K': cfg.contenders = atoi(optarg); break;
			case 'R': cfg.rounds = atoi(optarg); break;
			case 'v': cfg.interval_ms = atoi(optarg); break;
			case 'x': cfg.trim = 1; break;
			case 'X': cfg.reconnect_ms = atoi(optarg); break;
			case 'a': cfg.pace_ms = atoi(optarg); break;
			default: usage();
		}
	}
	if (strcmp(role, "hashcheck") == 0)
		return hash_selfcheck();
	if (!cfg.conninfo)
		usage();
	snprintf(proc_name, sizeof(proc_name), "%s", cfg.name);
	if (cfg.logpath)
		open_log(cfg.logpath);
	else if (cfg.logdir)
	{
		char		path[600];

		snprintf(path, sizeof(path), "%s/%s.log", cfg.logdir, cfg.name);
		open_log(path);
	}
	rng_state ^= (uint64_t) cfg.seed * 0x2545F4914F6CDD1DULL;
	rnd();
	cfg.deadline = now_us() + (int64_t) (cfg.seconds * 1e6);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(role, "consumer") == 0)
		return consumer_main();
	if (strcmp(role, "drain") == 0)
	{
		cfg.drain = 1;
		if (cfg.batch_max < 1000)
			cfg.batch_max = 1000;
		return drain_main();
	}
	if (strcmp(role, "race") == 0)
		return race_main();
	if (strcmp(role, "monitor") == 0)
		return monitor_main();
	if (strcmp(role, "operator") == 0)
		return operator_main();
	if (strcmp(role, "probe-ro") == 0)
		return probe_ro_main();
	usage();
	return 2;
}

/*
 * consumer.h: what the files of the JetStream consumer share.
 *
 *   consumer.c   main() and the state machine (its diagram is at the top)
 *   guard.c      every SQL call to stream_offset_guard, and the one place
 *                where SQLSTATEs are turned into actions (sqlstate_action)
 *   sink.c       the sink transactions: with the guard (apply_run, and the
 *                next page's note_read), and offsets only
 *   jetstream.c  NATS JetStream: stream info, ephemeral pull consumers,
 *                fetching pages, "consumer not found"
 *   sha256.c     payload digests and the buffer hash
 *   util.c       the log, backoff, phases, pages, the cursor file
 *   flags.c      the command line
 */
#ifndef CONSUMER_H
#define CONSUMER_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <nats/nats.h>

/* ---- configuration (flags) ---------------------------------------------- */

#define MAX_STOP_AT 8

typedef struct StopAt
{
	const char *phase;			/* e.g. "after_note_read" */
	int			nth;			/* stop at its nth occurrence */
} StopAt;

typedef struct Config
{
	const char *pg;				/* libpq conninfo ("" = the PG* environment) */
	const char *nats_url;
	const char *stream;			/* JetStream stream = one partition */
	const char *partition;		/* checkpoint partition label */
	const char *consumer;		/* checkpoint consumer name */
	char		owner[128];		/* who claims: host:pid unless --owner */
	const char *sink_table;
	const char *offsets_table;
	int			page;			/* records per page (one sink transaction) */
	bool		two_commit;		/* note_read committed alone before each page */
	int			inactive_ms;	/* InactiveThreshold of our pull consumers */
	int			fetch_wait_ms;	/* how long one pull request waits */
	int			claim_timeout_ms;	/* SET sog.claim_timeout */
	uint64_t	until;			/* halt once applied >= until (0: never) */
	int			idle_exit_ms;	/* halt after this long without news (0: never) */
	const char *cursor_file;	/* where we keep our own read cursor */
	bool		offsets_only;	/* no guard: UPDATE an offsets table */
	bool		ignore_apply_answer;	/* checker test: write every row */
	bool		resume_own_cursor;	/* checker test: ignore resume_from */
	bool		trace;			/* log every phase */
	StopAt		stop_at[MAX_STOP_AT];
	int			n_stop_at;
} Config;

/* ---- one page of records, read but not yet applied ---------------------- */

typedef struct Record
{
	uint64_t	seq;			/* stream sequence = the position */
	uint8_t		digest[32];		/* SHA-256 of data */
	int			len;
	char	   *data;
} Record;

typedef struct Page
{
	Record	   *rec;
	int			n;
	int			cap;
} Page;

/* ---- what an error means for the worker (see sqlstate_action) ----------- */

typedef enum Action
{
	ACT_NONE = 0,
	ACT_RETRY,					/* transient: back off, redo the same step */
	ACT_RECONNECT,				/* connection lost: commit outcome unknown */
	ACT_RESYNC,					/* ask owner_check, read the checkpoint back */
	ACT_RECLAIM,				/* claim again for a fresh plan */
	ACT_FENCED,					/* another worker claimed: stop writing */
	ACT_STOP_GAP,				/* an operator must look at a gap */
	ACT_BUG						/* a bad argument: fix the code or config */
} Action;

typedef struct SqlError
{
	char		sqlstate[6];	/* "" for a lost connection */
	char		message[512];
	Action		action;
} SqlError;

/* ---- the worker ---------------------------------------------------------- */

typedef struct Worker
{
	Config		cfg;
	PGconn	   *pg;
	natsConnection *nc;
	jsCtx	   *js;
	natsSubscription *sub;		/* bound to the pull consumer below */
	char		cons[64];		/* our JetStream consumer's name */
	char		subject[256];	/* the stream's subject */
	char		identity[128];	/* stream name @ creation time */

	int64_t		cp;				/* checkpoint id */
	int64_t		gen;			/* our generation */
	uint64_t	applied;		/* durable applied position, 0 = none */
	uint64_t	next;			/* next sequence we expect from the stream */
	char		token[64];		/* provider token the checkpoint holds */
	bool		has_token;

	Page		page;			/* the page to apply next */
	Page		ahead;			/* the page fetched after it (pipelined form) */
	uint64_t	noted;			/* cursor of the read boundary known to be
								 * committed (0: none known) */
	SqlError	err;			/* the last SQL error */
	int			retries;		/* consecutive retries of the current step */
	bool		jump_pending;	/* the stream skipped past w->next */
	uint64_t	jump_to;		/* the sequence it delivered instead */
	double		idle_since;		/* when pulls started coming back empty */
	int			exit_code;

	/* figures printed at exit */
	uint64_t	n_applied;		/* events written by this process */
	uint64_t	n_duplicate;
	double		t_first;		/* first record fetched (s) */
	double		t_last;			/* last page committed (s) */
	int			phase_count[16];
} Worker;

/* util.c */
void		logf_event(Worker *w, const char *event, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
void		phase(Worker *w, const char *name);
double		now_s(void);
void		backoff(Worker *w);
void		page_clear(Page *p);
void		page_add(Page *p, uint64_t seq, const char *data, int len);
uint64_t	page_last(const Page *p);
int			page_hash(const Page *p, uint64_t above, char out[65]);
void		write_cursor_file(Worker *w, uint64_t cursor);
uint64_t	read_cursor_file(Worker *w);

/* flags.c */
void		parse_flags(Config *c, int argc, char **argv);

/* guard.c: each returns true on success; on failure w->err says why */
Action		sqlstate_action(const char *sqlstate);
bool		pg_connect(Worker *w);
bool		pg_reconnect(Worker *w);
bool		guard_register(Worker *w);
typedef struct Plan
{
	char		verdict[32];
	uint64_t	resume_from;	/* 0 = the stream's beginning */
	uint64_t	verify_from;
	uint64_t	verify_to;
	int64_t		expected_count;
	int64_t		gap_id;
} Plan;
bool		guard_claim(Worker *w, Plan *plan);
bool		guard_note_read(Worker *w, const Page *p, uint64_t above);
bool		guard_verify_gap(Worker *w, const char *hash, bool *ok);
bool		guard_report_gap(Worker *w, uint64_t to, const char *detail,
							 int64_t *gap_id);
bool		guard_owner_check(Worker *w, bool *owner);
bool		guard_resync(Worker *w);
bool		guard_halt(Worker *w);
typedef struct Attempt
{
	int64_t		id;
	char		state[16];		/* open or failed */
	char		failure[32];
	int64_t		gap_id;
} Attempt;
bool		guard_begin_recovery(Worker *w, uint64_t anchor, bool inclusive,
								 uint64_t retained_from, Attempt *a);
typedef struct Promotion
{
	bool		promoted;
	int64_t		generation;
	uint64_t	applied;
	char		reason[32];
} Promotion;
bool		guard_promote(Worker *w, int64_t attempt, uint64_t page_last,
						  Promotion *pr);
bool		pg_exec(Worker *w, const char *what, PGresult **res,
					const char *sql, int n, const char *const *params);

/* sink.c */
bool		sink_apply_page(Worker *w, const Page *p, const Page *next);
bool		sink_recovery_page(Worker *w, int64_t attempt, const Page *p,
							   char *stopped, size_t stopped_len);
bool		offsets_load(Worker *w);
bool		offsets_apply_page(Worker *w, const Page *p);

/* jetstream.c */
typedef enum FetchResult
{
	FETCH_OK,					/* records from w->next on, contiguous */
	FETCH_EMPTY,				/* nothing arrived within fetch_wait_ms */
	FETCH_JUMP,					/* the stream skipped past w->next */
	FETCH_ERROR					/* the pull failed (the consumer may be gone) */
} FetchResult;
typedef enum MsgState
{
	MSG_THERE,
	MSG_GONE,					/* JSNoMessageFoundErr (10037) */
	MSG_UNKNOWN
} MsgState;
typedef enum ConsumerState
{
	CONSUMER_ALIVE,
	CONSUMER_NOT_FOUND,			/* JSConsumerNotFoundErr (10014) */
	CONSUMER_UNKNOWN			/* could not ask: retry later */
} ConsumerState;
bool		js_connect(Worker *w);
bool		js_stream_identity(Worker *w);
bool		js_first_seq(Worker *w, uint64_t *first, uint64_t *last);
bool		js_open_consumer(Worker *w, uint64_t start_seq);
void		js_close_consumer(Worker *w, bool delete_it);
FetchResult js_fetch(Worker *w, int max, Page *p);
ConsumerState js_consumer_state(Worker *w);
MsgState	js_msg_state(Worker *w, uint64_t seq);

#endif

/*
 * bench/client.c - the benchmark's real client: what a consumer does per
 * transaction, over libpq in pipeline mode with binary parameters.
 *
 *   client -d CONNINFO -v b|c|g|h|r|w|p|m -B BATCH -c CLIENTS -T SECONDS [-p FIRST_PARTITION]
 *          [-P PARTITIONS_EACH] [-N EVENTS] [-o LOG_PREFIX]
 *
 * Each of CLIENTS processes owns one partition (FIRST_PARTITION + i; with
 * -P n, the n partitions FIRST_PARTITION + i * n ... + n - 1, one transaction
 * each in turn) and, in a loop for SECONDS (with -N, until each of its
 * partitions has had EVENTS events; the last transaction of a partition may
 * be shorter than B), builds B events of 100-byte payloads (positions
 * continuing its partition's), computes what a consumer computes on its own
 * CPU (the SHA-256 digest of each payload, for g and h: one EVP context,
 * the algorithm fetched once, as a consumer hashing in a loop would; the
 * one-shot SHA256() of OpenSSL 3 looks the algorithm up on every call and
 * costs 3x as much per 100-byte payload), and commits them in
 * one transaction, sent as one pipeline (BEGIN, the statements, COMMIT, one
 * sync: one round trip):
 *
 *   b  INSERT INTO sink SELECT ... FROM unnest($pos::int8[], $payload::text[]);
 *      UPDATE offsets SET applied = GREATEST(applied, $last) ...
 *   c  b + INSERT INTO inbox SELECT ... FROM unnest($pos::int8[]) ON CONFLICT DO NOTHING
 *   g  INSERT INTO sink SELECT ... FROM unnest($pos::int8[], $payload::text[],
 *          sog.apply_batch($cp, $gen, $pos::sog.position[], $digests::bytea[])) AS u(p, pl, fresh)
 *      WHERE fresh          (only the rows answered new are inserted)
 *   h  as g, with sog.apply_batch_int8 (positions as bigint[], no cast)
 *   r  WITH a AS (SELECT sog.apply_run($cp, $gen, $first, $digests::bytea) AS skip)
 *      INSERT INTO sink SELECT $first + i - 1, ... FROM a, unnest($payload::text[])
 *          WITH ORDINALITY u(pl, i) WHERE i > a.skip
 *      (a dense run: the digests back to back in one bytea, no positions array)
 *
 * and the whole protocol of the consumer guide, with r as the sink
 * statement and the provider token moved by sog.commit_page in the sink
 * transaction (the client also computes each page's buffer hash: a second
 * SHA-256 per event):
 *
 *   w  two commits per page: sog.note_read(cursor, hash, n) committed on its
 *      own (a sync of its own ends its transaction), then BEGIN, r with
 *      sog.apply_run_page in place of apply_run, moving the token (its
 *      expected_token and successor_token), COMMIT (one pipeline, one round
 *      trip, two commits)
 *   p  pipelined, one commit per page, one call per page: BEGIN, r with
 *      sog.apply_run_page for page k, noting page k+1 (fetched before page
 *      k is sent) and moving the token in the same call, COMMIT; only the
 *      first page's note_read commits alone.  When the time is up (-T), a
 *      page already noted is applied before the client stops, so that it
 *      leaves no read boundary open (as a worker that stops applies what
 *      it noted)
 *   m  p as three calls, the form before apply_run_page: BEGIN, r for page
 *      k, note_read for page k+1, commit_page, COMMIT
 *
 * Output, one line: variant B clients seconds transactions events events/s
 * client_cpu_us backend_cpu_us: the last two are CPU microseconds per
 * transaction, of the client processes (getrusage) and of their server
 * backends (/proc/<pid>/stat, so only for a server on this machine; NA
 * otherwise), over the timed loop: what a miss of a target is made of.
 * With -o, each client process also writes LOG_PREFIX.<its first partition>,
 * a line per transaction: the time it ended (epoch seconds), its latency in
 * microseconds (from sending BEGIN to the COMMIT's result; building the
 * arrays and hashing come before), its events and its partition.
 * With -R, each client process sends no page before its time at that many
 * events per second (bench/soak.sh's hour-long mode: a rate the disk can
 * hold for an hour); the loop sleeps, and latency counts from the send.
 * Any error ends the run with a message and exit status 1.  Needs libpq
 * 14+ (pipeline mode) and OpenSSL 3 (EVP_MD_fetch, EVP_DigestInit_ex2).
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>

#include <libpq-fe.h>
#include <openssl/evp.h>

#define INT4OID 23
#define INT8OID 20
#define INT8ARRAYOID 1016
#define TEXTARRAYOID 1009
#define BYTEAARRAYOID 1001
#define TEXTOID 25
#define BYTEAOID 17

static const char *conninfo = "";
static char variant = 'g';
static int	batch = 100;
static int	clients = 1;
static double seconds = 5;
static double rate = 0;			/* -R: events per second per client process
								 * (0: as fast as it can) */
static int	first_partition = 0;
static int	parts_each = 1;
static int64_t events_each = 0;	/* -N; 0: run for -T seconds */
static const char *log_prefix = NULL;

static double
now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static void
die(PGconn *conn, const char *what)
{
	fprintf(stderr, "client: %s: %s", what, conn ? PQerrorMessage(conn) : "\n");
	exit(1);
}

/* What one client process did: transactions, and CPU seconds used. */
typedef struct Work
{
	long		txns;
	int64_t		events;
	double		client_cpu;
	double		backend_cpu;	/* < 0: not readable */
} Work;

static double
own_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/*
 * utime + stime of process pid in seconds, from /proc; < 0 if unreadable or
 * not a postgres process (a server on another machine: the pid is not its).
 */
static double
process_cpu(long pid)
{
	char		path[64];
	char		line[1024];
	char	   *p;
	FILE	   *f;
	unsigned long long ut;
	unsigned long long st;
	size_t		n;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (pid <= 0 || !(f = fopen(path, "r")))
		return -1;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	if (strncmp(line, "postgres", 8) != 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	/* after "pid (comm) ": state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime */
	if (!(p = strrchr(line, ')')) ||
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double) (ut + st) / sysconf(_SC_CLK_TCK);
}

/* A growing byte buffer for binary parameters. */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

static void
put(Buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap)
	{
		b->cap = (b->len + n) * 2;
		b->data = realloc(b->data, b->cap);
		if (!b->data)
			die(NULL, "out of memory");
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
put32(Buf *b, uint32_t v)
{
	v = htonl(v);
	put(b, &v, 4);
}

static void
put64(Buf *b, uint64_t v)
{
	put32(b, (uint32_t) (v >> 32));
	put32(b, (uint32_t) v);
}

/* Header of a one-dimensional binary array of n elements of type elemtype. */
static void
array_header(Buf *b, uint32_t elemtype, int n)
{
	b->len = 0;
	put32(b, 1);				/* dimensions */
	put32(b, 0);				/* no NULLs */
	put32(b, elemtype);
	put32(b, (uint32_t) n);		/* length */
	put32(b, 1);				/* lower bound */
}

static void
check(PGconn *conn, PGresult *r, ExecStatusType want, const char *what)
{
	if (PQresultStatus(r) != want)
	{
		fprintf(stderr, "client: %s: %s", what, PQresultErrorMessage(r));
		exit(1);
	}
	PQclear(r);
}

/* A partition of a client process: where its positions continue, its checkpoint. */
typedef struct Part
{
	int			partition;
	int64_t		pos;			/* the last position sent */
	int64_t		cp;
	int64_t		gen;
	int64_t		left;			/* events still to send, with -N */
	char		token[32];		/* the provider token now ("": none) */
	bool		noted;			/* p: the next page's read is noted */
} Part;

/* Does the variant use the guard (a checkpoint), the token and the hash? */
#define GUARDED(v)	((v) != 'b' && (v) != 'c')
#define PROTOCOL(v)	((v) == 'w' || (v) == 'p' || (v) == 'm')
/* Does it note page k + 1 in page k's transaction?  Is its sink a page call? */
#define PIPELINED(v)	((v) == 'p' || (v) == 'm')
#define PAGE_CALL(v)	((v) == 'w' || (v) == 'p')

/*
 * Read where partition p->partition continues (and, for the guarded
 * variants, its checkpoint, generation and provider token) into p.
 */
static void
read_start(PGconn *conn, Part *p)
{
	char		sql[256];
	PGresult   *r;

	if (variant == 'b' || variant == 'c')
		snprintf(sql, sizeof(sql),
				 "SELECT applied FROM offsets WHERE consumer = 'bench' AND partition = %d", p->partition);
	else
		snprintf(sql, sizeof(sql),
				 "SELECT coalesce(c.applied_position::numeric, 0)::bigint, b.id, b.gen, "
				 "coalesce(c.provider_token, '') "
				 "FROM bench_cp b JOIN sog.checkpoint c ON c.id = b.id WHERE b.part = %d", p->partition);
	r = PQexec(conn, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		die(conn, "reading the start position");
	p->pos = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	if (GUARDED(variant))
	{
		p->cp = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		p->gen = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		snprintf(p->token, sizeof(p->token), "%s", PQgetvalue(r, 0, 3));
	}
	p->left = events_each;
	PQclear(r);
}

/*
 * The partition of parts[0..n-1] whose turn follows index k: the next one,
 * or with -N the next one with events left; -1 when none has any.
 */
static int
next_part(Part *parts, int n, int k)
{
	int			i;

	for (i = 1; i <= n; i++)
	{
		int			j = (k + i) % n;

		if (events_each == 0 || parts[j].left > 0)
			return j;
	}
	return -1;
}

/* The first partition of parts[0..n-1] with a page noted and not yet applied (p), or -1. */
static int
noted_part(const Part *parts, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		if (parts[i].noted)
			return i;
	return -1;
}

/* One page of events as the client sends it. */
typedef struct Page
{
	int64_t		pos;			/* the position before its first event */
	int			n;				/* its events: pos + 1 .. pos + n */
	Buf			positions;		/* int8[] */
	Buf			payloads;		/* text[] */
	Buf			digests;		/* bytea[] (g, h) */
	Buf			run;			/* the digests back to back (r, w, p) */
	char		hash[65];		/* the page's buffer hash (w, p) */
} Page;

static EVP_MD *sha256;
static EVP_MD_CTX *md;

static void
sha(const void *a, size_t alen, const void *b, size_t blen, unsigned char *out)
{
	unsigned int len;

	if (!EVP_DigestInit_ex2(md, sha256, NULL) || !EVP_DigestUpdate(md, a, alen) ||
		(blen > 0 && !EVP_DigestUpdate(md, b, blen)) ||
		!EVP_DigestFinal_ex(md, out, &len) || len != 32)
		die(NULL, "SHA-256 failed");
}

/*
 * Build the page of events pos + 1 .. pos + n: payloads, and what the
 * variant computes on the client's CPU: the digest of each payload, and for
 * the whole protocol the page's buffer hash (h0 = SHA-256("sog:buffer:v1"),
 * h_i = SHA-256(h_(i-1) || be16(len(P_i)) || P_i || D_i), P_i the position's
 * text).
 */
static void
build_page(Page *pg, int64_t pos, int n)
{
	unsigned char h[32];
	char		payload[101];
	int			i;

	pg->pos = pos;
	pg->n = n;
	array_header(&pg->positions, INT8OID, n);
	array_header(&pg->payloads, TEXTOID, n);
	array_header(&pg->digests, BYTEAOID, n);
	pg->run.len = 0;
	if (PROTOCOL(variant))
		sha("sog:buffer:v1", 13, NULL, 0, h);
	for (i = 1; i <= n; i++)
	{
		int64_t		p = pos + i;
		unsigned char d[32];

		snprintf(payload, sizeof(payload), "%-100" PRId64, p);
		memcpy(payload + 20, " payload 0123456789abcdefghijklmnopqrstuvwxyz", 45);
		put32(&pg->positions, 8);
		put64(&pg->positions, (uint64_t) p);
		put32(&pg->payloads, 100);
		put(&pg->payloads, payload, 100);
		if (!GUARDED(variant))
			continue;
		sha(payload, 100, NULL, 0, d);
		if (variant == 'g' || variant == 'h')
		{
			put32(&pg->digests, sizeof(d));
			put(&pg->digests, d, sizeof(d));
		}
		else
			put(&pg->run, d, sizeof(d));
		if (PROTOCOL(variant))
		{
			unsigned char step[2 + 20 + 32];
			int			plen = snprintf((char *) step + 2, 21, "%" PRId64, p);

			step[0] = (unsigned char) (plen >> 8);
			step[1] = (unsigned char) plen;
			memcpy(step + 2 + plen, d, 32);
			sha(h, 32, step, 2 + plen + 32, h);
		}
	}
	if (PROTOCOL(variant))
		for (i = 0; i < 32; i++)
			snprintf(pg->hash + 2 * i, 3, "%02x", h[i]);
}

/* Queue a prepared statement in the pipeline; count it. */
static void
send_prepared(PGconn *conn, const char *name, int nparams, const char *const *values,
			  const int *lengths, const int *formats, int *nsent)
{
	if (!PQsendQueryPrepared(conn, name, nparams, values, lengths, formats, 1))
		die(conn, name);
	(*nsent)++;
}

static void
send_plain(PGconn *conn, const char *sql, int *nsent)
{
	if (!PQsendQueryParams(conn, sql, 0, NULL, NULL, NULL, NULL, 0))
		die(conn, sql);
	(*nsent)++;
}

/* sog.note_read(cp, gen, cursor, hash, n) for page pg of part */
static void
send_note(PGconn *conn, const Part *part, const Page *pg, int *nsent)
{
	char		cp[24], gen[24], cursor[24], n[24];
	const char *v[5] = {cp, gen, cursor, pg->hash, n};

	snprintf(cp, sizeof(cp), "%" PRId64, part->cp);
	snprintf(gen, sizeof(gen), "%" PRId64, part->gen);
	snprintf(cursor, sizeof(cursor), "%" PRId64, pg->pos + pg->n);
	snprintf(n, sizeof(n), "%d", pg->n);
	send_prepared(conn, "note", 5, v, NULL, NULL, nsent);
}

/* sog.commit_page(cp, gen, the token now, the token after page pg) */
static void
send_commit_page(PGconn *conn, Part *part, const Page *pg, int *nsent)
{
	char		cp[24], gen[24];
	char		next[32];
	const char *v[4] = {cp, gen, part->token[0] ? part->token : NULL, next};

	snprintf(cp, sizeof(cp), "%" PRId64, part->cp);
	snprintf(gen, sizeof(gen), "%" PRId64, part->gen);
	snprintf(next, sizeof(next), "T%" PRId64, pg->pos + pg->n);
	send_prepared(conn, "page", 4, v, NULL, NULL, nsent);
	memcpy(part->token, next, sizeof(next) < sizeof(part->token) ? sizeof(next) : sizeof(part->token));
}

/*
 * The sink statement of page pg (every variant but b and c's extra ones);
 * for a page call (w, p) also the next page's note (nx, NULL for none) and
 * the token's compare-and-swap, in text parameters 7 to 11.
 */
static void
send_sink(PGconn *conn, Part *part, const Page *pg, const Page *nx, int *nsent)
{
	uint32_t	part_be = htonl((uint32_t) part->partition);
	uint64_t	be[3] = {htobe64((uint64_t) part->cp), htobe64((uint64_t) part->gen),
	htobe64((uint64_t) (pg->pos + 1))};
	const char *values[11];
	int			lengths[11];
	int			formats[11] = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
	char		cursor[24], n[24], next_token[32];

	values[0] = (const char *) &part_be;
	lengths[0] = 4;
	if (GUARDED(variant) && variant != 'g' && variant != 'h')
	{
		/* r: partition, first, payloads, cp, gen, digests */
		values[1] = (const char *) &be[2];
		lengths[1] = 8;
		values[5] = pg->run.data;
		lengths[5] = (int) pg->run.len;
	}
	else
	{
		values[1] = pg->positions.data;
		lengths[1] = (int) pg->positions.len;
		values[5] = pg->digests.data;
		lengths[5] = (int) pg->digests.len;
	}
	values[2] = pg->payloads.data;
	lengths[2] = (int) pg->payloads.len;
	values[3] = (const char *) &be[0];
	lengths[3] = 8;
	values[4] = (const char *) &be[1];
	lengths[4] = 8;
	if (variant == 'c')
		send_prepared(conn, "inbox", 2, values, lengths, formats, nsent);
	if (PAGE_CALL(variant))
	{
		snprintf(cursor, sizeof(cursor), "%" PRId64, nx ? nx->pos + nx->n : 0);
		snprintf(n, sizeof(n), "%d", nx ? nx->n : 0);
		snprintf(next_token, sizeof(next_token), "T%" PRId64, pg->pos + pg->n);
		values[6] = nx ? cursor : NULL;
		values[7] = nx ? nx->hash : NULL;
		values[8] = nx ? n : NULL;
		values[9] = part->token[0] ? part->token : NULL;
		values[10] = next_token;
		memset(lengths + 6, 0, sizeof(int) * 5);
		send_prepared(conn, "ins", 11, values, lengths, formats, nsent);
		memcpy(part->token, next_token, sizeof(next_token) < sizeof(part->token) ? sizeof(next_token) : sizeof(part->token));
	}
	else
		send_prepared(conn, "ins", GUARDED(variant) ? 6 : 3, values, lengths, formats, nsent);
	if (!GUARDED(variant))
	{
		uint64_t	last_be = htobe64((uint64_t) (pg->pos + pg->n));
		const char *v2[2] = {values[0], (const char *) &last_be};
		int			l2[2] = {4, 8};

		send_prepared(conn, "off", 2, v2, l2, formats, nsent);
	}
}

/* Prepare the statements of the variant on conn. */
static void
prepare_statements(PGconn *conn)
{
	const char *insert_sql =
		"INSERT INTO sink (partition, pos, payload) "
		"SELECT $1, u.p, u.pl FROM unnest($2::int8[], $3::text[]) AS u(p, pl)";
	Oid			types[11] = {INT4OID, INT8ARRAYOID, TEXTARRAYOID, INT8OID, INT8OID, BYTEAARRAYOID};

	if (variant == 'g')
		insert_sql =
			"INSERT INTO sink (partition, pos, payload) "
			"SELECT $1, u.p, u.pl FROM unnest($2::int8[], $3::text[], "
			"sog.apply_batch($4, $5, $2::int8[]::sog.position[], $6::bytea[])) AS u(p, pl, fresh) "
			"WHERE u.fresh";
	else if (variant == 'h')
		insert_sql =
			"INSERT INTO sink (partition, pos, payload) "
			"SELECT $1, u.p, u.pl FROM unnest($2::int8[], $3::text[], "
			"sog.apply_batch_int8($4, $5, $2::int8[], $6::bytea[])) AS u(p, pl, fresh) "
			"WHERE u.fresh";
	else if (PAGE_CALL(variant))
	{
		insert_sql =
			"WITH a AS (SELECT sog.apply_run_page($4, $5, $2, $6, $7::sog.position, $8, $9::bigint, $10, $11) AS skip) "
			"INSERT INTO sink (partition, pos, payload) "
			"SELECT $1, $2 + u.i - 1, u.pl FROM a, unnest($3::text[]) WITH ORDINALITY AS u(pl, i) "
			"WHERE u.i > a.skip";
		types[1] = INT8OID;
		types[5] = BYTEAOID;
	}
	else if (GUARDED(variant))
	{
		insert_sql =
			"WITH a AS (SELECT sog.apply_run($4, $5, $2, $6) AS skip) "
			"INSERT INTO sink (partition, pos, payload) "
			"SELECT $1, $2 + u.i - 1, u.pl FROM a, unnest($3::text[]) WITH ORDINALITY AS u(pl, i) "
			"WHERE u.i > a.skip";
		types[1] = INT8OID;
		types[5] = BYTEAOID;
	}
	check(conn, PQprepare(conn, "ins", insert_sql, PAGE_CALL(variant) ? 11 : GUARDED(variant) ? 6 : 3, types),
		  PGRES_COMMAND_OK, "prepare insert");
	check(conn, PQprepare(conn, "off",
						  "UPDATE offsets SET applied = GREATEST(applied, $2) "
						  "WHERE consumer = 'bench' AND partition = $1", 2,
						  (Oid[]) {INT4OID, INT8OID}), PGRES_COMMAND_OK, "prepare offsets");
	check(conn, PQprepare(conn, "inbox",
						  "INSERT INTO inbox (partition, pos, key) "
						  "SELECT $1, p, $1::text || '/' || p::text FROM unnest($2::int8[]) AS p "
						  "ON CONFLICT DO NOTHING", 2,
						  (Oid[]) {INT4OID, INT8ARRAYOID}), PGRES_COMMAND_OK, "prepare inbox");
	if (PROTOCOL(variant))
	{
		check(conn, PQprepare(conn, "note", "SELECT sog.note_read($1::bigint, $2::bigint, $3::sog.position, $4, $5::bigint)",
							  5, NULL), PGRES_COMMAND_OK, "prepare note_read");
		check(conn, PQprepare(conn, "page", "SELECT sog.commit_page($1::bigint, $2::bigint, $3, $4)",
							  4, NULL), PGRES_COMMAND_OK, "prepare commit_page");
	}
}

/* Read the results of nsent statements and the pipeline's sync. */
static void
read_results(PGconn *conn, int nsent)
{
	PGresult   *r;
	int			i;

	for (i = 0; i < nsent; i++)
	{
		r = PQgetResult(conn);
		if (r == NULL || (PQresultStatus(r) != PGRES_COMMAND_OK &&
						  PQresultStatus(r) != PGRES_TUPLES_OK))
		{
			fprintf(stderr, "client: statement %d of a transaction: %s", i + 1,
					r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
			exit(1);
		}
		PQclear(r);
		r = PQgetResult(conn);	/* the NULL that ends each result */
		if (r)
			die(conn, "unexpected extra result");
	}
	r = PQgetResult(conn);
	if (PQresultStatus(r) != PGRES_PIPELINE_SYNC)
		die(conn, "pipeline sync");
	PQclear(r);
}

/* The size of part's next page, 0 when it has no events left (-N). */
static int
page_size(const Part *part, int64_t already)
{
	int64_t		left = part->left - already;

	if (events_each == 0)
		return batch;
	return left <= 0 ? 0 : left < batch ? (int) left : batch;
}

/* One connection's work, on partitions first .. first + parts_each - 1. */
static Work
run_client(int first)
{
	Work		w = {0, 0, 0, 0};
	long		backend = 0;
	double		cpu0;
	double		bcpu0;
	PGconn	   *conn = PQconnectdb(conninfo);
	PGresult   *r;
	Part	   *parts = calloc(parts_each, sizeof(Part));
	Page	   *cur = calloc(parts_each, sizeof(Page));
	Page	   *next = calloc(parts_each, sizeof(Page));
	int			k;
	FILE	   *txlog = NULL;
	long		txns = 0;
	double		end;
	double		paced_t0;
	int64_t		paced = 0;		/* -R: events sent so far */

	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md = EVP_MD_CTX_new();
	if (!sha256 || !md)
		die(NULL, "cannot set up SHA-256 (OpenSSL)");
	if (!parts || !cur || !next)
		die(NULL, "out of memory");
	if (PQstatus(conn) != CONNECTION_OK)
		die(conn, "connect");
	for (k = 0; k < parts_each; k++)
	{
		parts[k].partition = first + k;
		read_start(conn, &parts[k]);
	}
	if (log_prefix)
	{
		char		path[1024];

		snprintf(path, sizeof(path), "%s.%d", log_prefix, first);
		if (!(txlog = fopen(path, "w")))
		{
			fprintf(stderr, "client: cannot write %s: %s\n", path, strerror(errno));
			exit(1);
		}
	}
	prepare_statements(conn);
	r = PQexec(conn, "SELECT pg_backend_pid()");
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		backend = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	if (!PQenterPipelineMode(conn))
		die(conn, "pipeline mode");

	cpu0 = own_cpu();
	bcpu0 = process_cpu(backend);
	paced_t0 = now();
	end = paced_t0 + seconds;
	k = next_part(parts, parts_each, parts_each - 1);
	while (k >= 0)
	{
		Part	   *part;
		Page	   *pg;
		int			nalone = 0;
		int			nsent = 0;
		double		t_send;

		/* time is up (-T): apply the pages already noted (p), then stop */
		if (events_each == 0 && now() >= end && (k = noted_part(parts, parts_each)) < 0)
			break;
		part = &parts[k];
		pg = &cur[k];
		/* p, m: the page was built (and noted) in the partition's last turn */
		if (!(PIPELINED(variant) && part->noted))
			build_page(pg, part->pos, page_size(part, 0));
		/* -R: no page before its time (latency is measured from here) */
		if (rate > 0)
		{
			double		ahead = paced_t0 + (double) paced / rate - now();

			if (ahead > 0)
			{
				struct timespec ts;

				ts.tv_sec = (time_t) ahead;
				ts.tv_nsec = (long) ((ahead - (double) ts.tv_sec) * 1e9);
				nanosleep(&ts, NULL);
			}
			paced += pg->n;
		}
		t_send = now();
		if (variant == 'w' || (PIPELINED(variant) && !part->noted))
		{
			/*
			 * The read boundary commits on its own: a sync of its own ends
			 * its implicit transaction before BEGIN (in one pipeline, still
			 * one round trip; without the sync, BEGIN would take it into the
			 * sink transaction).
			 */
			send_note(conn, part, pg, &nalone);
			if (!PQpipelineSync(conn))
				die(conn, "sync");
		}
		send_plain(conn, "BEGIN", &nsent);
		part->noted = false;
		if (variant == 'p')
		{
			/* page k + 1, fetched while page k is sent, noted in its call */
			int			n = page_size(part, pg->n);

			if (n > 0 && (events_each > 0 || now() < end))
			{
				build_page(&next[k], pg->pos + pg->n, n);
				part->noted = true;
			}
		}
		send_sink(conn, part, pg, part->noted ? &next[k] : NULL, &nsent);
		if (variant == 'm')
		{
			/* page k + 1, fetched while page k is applied, noted with it */
			int			n = page_size(part, pg->n);

			if (n > 0 && (events_each > 0 || now() < end))
			{
				build_page(&next[k], pg->pos + pg->n, n);
				send_note(conn, part, &next[k], &nsent);
				part->noted = true;
			}
		}
		if (variant == 'm')
			send_commit_page(conn, part, pg, &nsent);
		send_plain(conn, "COMMIT", &nsent);
		if (!PQpipelineSync(conn))
			die(conn, "sync");
		if (nalone > 0)
			read_results(conn, nalone);
		read_results(conn, nsent);
		if (txlog)
		{
			double		t_end = now();

			fprintf(txlog, "%.6f %.0f %d %d\n", t_end, (t_end - t_send) * 1e6, pg->n, part->partition);
		}
		part->pos += pg->n;
		part->left -= pg->n;
		w.events += pg->n;
		txns++;
		if (part->noted)
		{
			Page		tmp = cur[k];

			cur[k] = next[k];
			next[k] = tmp;
		}
		k = next_part(parts, parts_each, k);
	}
	if (txlog && fclose(txlog) != 0)
		die(NULL, "writing the transaction log");
	w.txns = txns;
	w.client_cpu = own_cpu() - cpu0;
	w.backend_cpu = bcpu0 < 0 ? -1 : process_cpu(backend) - bcpu0;
	if (w.backend_cpu < 0)
		w.backend_cpu = -1;
	PQfinish(conn);
	return w;
}

int
main(int argc, char **argv)
{
	int			opt;
	int			i;
	int			pipes[64][2];
	long		total = 0;
	int64_t		events = 0;
	double		ccpu = 0;
	double		bcpu = 0;
	char		ccpu_txt[32] = "NA";
	char		bcpu_txt[32] = "NA";
	double		t0;
	double		elapsed;

	while ((opt = getopt(argc, argv, "d:v:B:c:T:R:p:P:N:o:")) != -1)
	{
		switch (opt)
		{
			case 'd': conninfo = optarg; break;
			case 'v': variant = optarg[0]; break;
			case 'B': batch = atoi(optarg); break;
			case 'c': clients = atoi(optarg); break;
			case 'T': seconds = atof(optarg); break;
			case 'R': rate = atof(optarg); break;
			case 'p': first_partition = atoi(optarg); break;
			case 'P': parts_each = atoi(optarg); break;
			case 'N': events_each = strtoll(optarg, NULL, 10); break;
			case 'o': log_prefix = optarg; break;
			default:
				fprintf(stderr, "usage: client -d conninfo -v b|c|g|h|r|w|p|m -B batch -c clients -T seconds [-p partition]\n"
						"              [-P partitions_each] [-N events_each] [-R events_per_second] [-o log_prefix]\n");
				return 2;
		}
	}
	if (!strchr("bcghrwpm", variant) || batch < 1 || clients < 1 || clients > 64 ||
		parts_each < 1 || events_each < 0 || rate < 0)
	{
		fprintf(stderr, "client: bad arguments\n");
		return 2;
	}
	t0 = now();
	for (i = 0; i < clients; i++)
	{
		pid_t		pid;

		if (pipe(pipes[i]) != 0)
			die(NULL, "pipe");
		pid = fork();
		if (pid < 0)
			die(NULL, "fork");
		if (pid == 0)
		{
			Work		w = run_client(first_partition + i * parts_each);

			if (write(pipes[i][1], &w, sizeof(w)) != sizeof(w))
				_exit(1);
			_exit(0);
		}
		close(pipes[i][1]);
	}
	for (i = 0; i < clients; i++)
	{
		Work		w = {-1, 0, 0, 0};
		int			status;

		if (read(pipes[i][0], &w, sizeof(w)) != sizeof(w))
			w.txns = -1;
		wait(&status);
		if (w.txns < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		{
			fprintf(stderr, "client: a client failed\n");
			return 1;
		}
		total += w.txns;
		events += w.events;
		ccpu += w.client_cpu;
		if (bcpu >= 0)
			bcpu = w.backend_cpu < 0 ? -1 : bcpu + w.backend_cpu;
	}
	elapsed = now() - t0;
	if (total > 0)
		snprintf(ccpu_txt, sizeof(ccpu_txt), "%.1f", ccpu * 1e6 / total);
	if (bcpu >= 0 && total > 0)
		snprintf(bcpu_txt, sizeof(bcpu_txt), "%.1f", bcpu * 1e6 / total);
	printf("%c %d %d %.2f %ld %" PRId64 " %.0f %s %s\n", variant, batch, clients, elapsed, total,
		   events, events / elapsed, ccpu_txt, bcpu_txt);
	return 0;
}

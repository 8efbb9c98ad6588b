/*
 * bench/client.c - the benchmark's real client: what a consumer does per
 * transaction, over libpq in pipeline mode with binary parameters.
 *
 *   client -d CONNINFO -v b|c|g|h -B BATCH -c CLIENTS -T SECONDS [-p FIRST_PARTITION]
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
 * Any error ends the run with a message and exit status 1.  Needs libpq
 * 14+ (pipeline mode) and OpenSSL 3 (EVP_MD_fetch, EVP_DigestInit_ex2).
 */
#include <errno.h>
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
} Part;

/*
 * Read where partition p->partition continues (and, for g and h, its
 * checkpoint and generation) into p.
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
				 "SELECT coalesce(c.applied_position::numeric, 0)::bigint, b.id, b.gen "
				 "FROM bench_cp b JOIN sog.checkpoint c ON c.id = b.id WHERE b.part = %d", p->partition);
	r = PQexec(conn, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		die(conn, "reading the start position");
	p->pos = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	if (variant == 'g' || variant == 'h')
	{
		p->cp = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
		p->gen = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
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
	int			k;
	FILE	   *txlog = NULL;
	Buf			posbuf = {0};
	Buf			plbuf = {0};
	Buf			dgbuf = {0};
	char		payload[101];
	long		txns = 0;
	double		end;
	const char *insert_sql;
	EVP_MD	   *sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (!sha256 || !md)
		die(NULL, "cannot set up SHA-256 (OpenSSL)");
	if (!parts)
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

	insert_sql =
		"INSERT INTO sink (partition, pos, payload) "
		"SELECT $1, u.p, u.pl FROM unnest($2::int8[], $3::text[]) AS u(p, pl)";
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
	{
		Oid			types[6] = {INT4OID, INT8ARRAYOID, TEXTARRAYOID, INT8OID, INT8OID, BYTEAARRAYOID};

		check(conn, PQprepare(conn, "ins", insert_sql,
							  (variant == 'g' || variant == 'h') ? 6 : 3, types),
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
	}
	r = PQexec(conn, "SELECT pg_backend_pid()");
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		backend = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	if (!PQenterPipelineMode(conn))
		die(conn, "pipeline mode");

	cpu0 = own_cpu();
	bcpu0 = process_cpu(backend);
	end = now() + seconds;
	k = next_part(parts, parts_each, parts_each - 1);
	while (k >= 0 && (events_each > 0 || now() < end))
	{
		Part	   *part = &parts[k];
		int			n = events_each > 0 && part->left < batch ? (int) part->left : batch;
		int64_t		pos = part->pos;
		uint32_t	part_be = htonl((uint32_t) part->partition);
		int64_t		last = pos + n;
		uint64_t	cp_be[2];
		double		t_send;
		const char *values[6];
		int			lengths[6];
		int			formats[6] = {1, 1, 1, 1, 1, 1};
		int			nsent = 0;
		int			i;

		array_header(&posbuf, INT8OID, n);
		array_header(&plbuf, TEXTOID, n);
		array_header(&dgbuf, BYTEAOID, n);
		for (i = 1; i <= n; i++)
		{
			int64_t		p = pos + i;
			unsigned char d[32];
			unsigned int dlen;

			snprintf(payload, sizeof(payload), "%-100" PRId64, p);
			memcpy(payload + 20, " payload 0123456789abcdefghijklmnopqrstuvwxyz", 45);
			put32(&posbuf, 8);
			put64(&posbuf, (uint64_t) p);
			put32(&plbuf, 100);
			put(&plbuf, payload, 100);
			if (variant == 'g' || variant == 'h')
			{
				/* the client's CPU */
				if (!EVP_DigestInit_ex2(md, sha256, NULL) ||
					!EVP_DigestUpdate(md, payload, 100) ||
					!EVP_DigestFinal_ex(md, d, &dlen) || dlen != sizeof(d))
					die(NULL, "SHA-256 failed");
				put32(&dgbuf, sizeof(d));
				put(&dgbuf, d, sizeof(d));
			}
		}
		values[0] = (const char *) &part_be;
		lengths[0] = 4;
		values[1] = posbuf.data;
		lengths[1] = (int) posbuf.len;
		values[2] = plbuf.data;
		lengths[2] = (int) plbuf.len;
		cp_be[0] = htobe64((uint64_t) part->cp);
		cp_be[1] = htobe64((uint64_t) part->gen);
		values[3] = (const char *) &cp_be[0];
		lengths[3] = 8;
		values[4] = (const char *) &cp_be[1];
		lengths[4] = 8;
		values[5] = dgbuf.data;
		lengths[5] = (int) dgbuf.len;

		t_send = now();
		if (!PQsendQueryParams(conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0))
			die(conn, "send BEGIN");
		nsent++;
		if (variant == 'c')
		{
			if (!PQsendQueryPrepared(conn, "inbox", 2, values, lengths, formats, 1))
				die(conn, "send inbox");
			nsent++;
		}
		if (!PQsendQueryPrepared(conn, "ins", (variant == 'g' || variant == 'h') ? 6 : 3,
								 values, lengths, formats, 1))
			die(conn, "send insert");
		nsent++;
		if (variant == 'b' || variant == 'c')
		{
			uint64_t	last_be = htobe64((uint64_t) last);
			const char *v2[2] = {values[0], (const char *) &last_be};
			int			l2[2] = {4, 8};

			if (!PQsendQueryPrepared(conn, "off", 2, v2, l2, formats, 1))
				die(conn, "send offsets");
			nsent++;
		}
		if (!PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0))
			die(conn, "send COMMIT");
		nsent++;
		if (!PQpipelineSync(conn))
			die(conn, "sync");

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
		if (txlog)
		{
			double		t_end = now();

			fprintf(txlog, "%.6f %.0f %d %d\n", t_end, (t_end - t_send) * 1e6, n, part->partition);
		}
		part->pos = last;
		part->left -= n;
		w.events += n;
		txns++;
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

	while ((opt = getopt(argc, argv, "d:v:B:c:T:p:P:N:o:")) != -1)
	{
		switch (opt)
		{
			case 'd': conninfo = optarg; break;
			case 'v': variant = optarg[0]; break;
			case 'B': batch = atoi(optarg); break;
			case 'c': clients = atoi(optarg); break;
			case 'T': seconds = atof(optarg); break;
			case 'p': first_partition = atoi(optarg); break;
			case 'P': parts_each = atoi(optarg); break;
			case 'N': events_each = strtoll(optarg, NULL, 10); break;
			case 'o': log_prefix = optarg; break;
			default:
				fprintf(stderr, "usage: client -d conninfo -v b|c|g|h -B batch -c clients -T seconds [-p partition]\n"
						"              [-P partitions_each] [-N events_each] [-o log_prefix]\n");
				return 2;
		}
	}
	if (!strchr("bcgh", variant) || batch < 1 || clients < 1 || clients > 64 ||
		parts_each < 1 || events_each < 0)
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

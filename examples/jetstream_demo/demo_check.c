/*
 * demo_check.c: the demo's checker.  It shares no code with the consumer
 * and trusts nothing the consumer says: it reads what the publisher logged
 * as acknowledged, what the broker holds, and what the sink and the guard's
 * tables hold, and checks the invariants.
 *
 *   demo_check --pg CONNINFO --nats URL --log PUBLISHER_LOG
 *              --main STREAM[,STREAM...] [--retention STREAM]
 *              [--sink-table T] [--consumer NAME]
 *
 * For each main stream (all its events must be in the sink exactly once):
 *   - the broker holds exactly the events the publisher logged (read back
 *     from the broker with an ephemeral consumer of the checker's own);
 *   - every produced event is in the sink once, with its bytes
 *     (lost = produced with no identical sink row, duplicated = extra rows,
 *     corrupt = sink rows that match no produced event);
 *   - fencing: no sink row written by a generation committed after a claim
 *     of a newer generation (commit timestamps: track_commit_timestamp),
 *     and the claims' generations strictly increase;
 *   - the checkpoint's applied position is the last sequence; no open gap.
 * For the retention stream (the consumer must stop, not skip):
 *   - exactly one open gap, reason 'retention', covering (A, F - 1] where A
 *     is the applied position and F the stream's first sequence now;
 *   - the sink holds 1..A exactly once with their bytes and nothing above;
 *   - the checkpoint is failed_closed.
 *
 * Prints "check ..." lines with the figures (for the report) and one
 * "[ok]"/"[FAILED]" line per invariant; exits 0 only if all hold.
 */
#include <libpq-fe.h>
#include <nats/nats.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PGconn *pg;
static jsCtx *js;
static const char *sink = "sink_events";
static const char *consumer = "demo-sink";
static int	failures;

static void
die(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fprintf(stderr, "demo_check: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void
invariant(bool ok, const char *fmt,...)
{
	va_list		ap;

	printf(ok ? "  [ok] " : "  [FAILED] ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
}

static PGresult *
q(const char *sql, int n, const char *const *params)
{
	PGresult   *r = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
		die("%s\n  in: %s", PQerrorMessage(pg), sql);
	return r;
}

static long long
num(PGresult *r, int col)
{
	return PQgetisnull(r, 0, col) ? -1 : atoll(PQgetvalue(r, 0, col));
}

/* COPY a buffer into a table (text format). */
static void
copy_in(const char *table, const char *data, size_t len)
{
	char		sql[256];
	PGresult   *r;

	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", table);
	r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("%s", PQerrorMessage(pg));
	PQclear(r);
	if (len > 0 && PQputCopyData(pg, data, (int) len) != 1)
		die("%s", PQerrorMessage(pg));
	if (PQputCopyEnd(pg, NULL) != 1)
		die("%s", PQerrorMessage(pg));
	r = PQgetResult(pg);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("COPY %s: %s", table, PQerrorMessage(pg));
	PQclear(r);
}

static void
load_publisher_log(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char	   *buf = NULL;
	size_t		len = 0, cap = 0, n;
	char		chunk[65536];

	if (f == NULL)
		die("cannot open %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
	{
		if (len + n > cap)
			buf = realloc(buf, cap = (len + n) * 2);
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	copy_in("chk_produced", buf, len);
	free(buf);
}

/* Append one "stream TAB seq TAB \\xHEX" line to a growing buffer. */
static void
append_row(char **buf, size_t *len, size_t *cap, const char *stream,
		   uint64_t seq, const unsigned char *d, int n)
{
	static const char hex[] = "0123456789abcdef";
	size_t		need = strlen(stream) + 32 + 2 * (size_t) n + 8;
	int			i;

	if (*len + need > *cap)
		*buf = realloc(*buf, *cap = (*len + need) * 2);
	*len += sprintf(*buf + *len, "%s\t%" PRIu64 "\t\\\\x", stream, seq);
	for (i = 0; i < n; i++)
	{
		(*buf)[(*len)++] = hex[d[i] >> 4];
		(*buf)[(*len)++] = hex[d[i] & 15];
	}
	(*buf)[(*len)++] = '\n';
}

/* Read the whole stream back from the broker into chk_broker. */
static void
load_broker(const char *stream)
{
	jsStreamInfo *si = NULL;
	jsConsumerConfig cc;
	jsSubOptions so;
	jsErrCode	jerr = 0;
	natsSubscription *sub = NULL;
	uint64_t	last, got = 0;
	char	   *buf = NULL;
	size_t		len = 0, cap = 0;
	natsStatus	s;

	if ((s = js_GetStreamInfo(&si, js, stream, NULL, &jerr)) != NATS_OK)
		die("stream info %s: %s", stream, natsStatus_GetText(s));
	last = si->State.LastSeq;
	jsConsumerConfig_Init(&cc);
	cc.DeliverPolicy = js_DeliverAll;
	cc.AckPolicy = js_AckNone;
	cc.InactiveThreshold = 30000000000LL;
	jsSubOptions_Init(&so);
	so.Stream = stream;
	so.Config = cc;
	if ((s = js_PullSubscribe(&sub, js, si->Config->Subjects[0], NULL, NULL, &so, &jerr)) != NATS_OK)
		die("subscribe %s: %s", stream, natsStatus_GetText(s));
	while (got < last)
	{
		natsMsgList list = {0};
		int			i;

		s = natsSubscription_Fetch(&list, sub, 1000, 2000, &jerr);
		if (s != NATS_OK)
			die("fetch %s at %" PRIu64 ": %s", stream, got, natsStatus_GetText(s));
		for (i = 0; i < list.Count; i++)
		{
			jsMsgMetaData *md = NULL;

			if (natsMsg_GetMetaData(&md, list.Msgs[i]) != NATS_OK)
				continue;
			append_row(&buf, &len, &cap, stream, md->Sequence.Stream,
					   (const unsigned char *) natsMsg_GetData(list.Msgs[i]),
					   natsMsg_GetDataLength(list.Msgs[i]));
			got = md->Sequence.Stream;
			jsMsgMetaData_Destroy(md);
		}
		natsMsgList_Destroy(&list);
	}
	natsSubscription_Unsubscribe(sub);
	natsSubscription_Destroy(sub);
	jsStreamInfo_Destroy(si);
	copy_in("chk_broker", buf, len);
	free(buf);
}

/* Claims by verdict, generation order, recoveries; printed for the report. */
static void
check_claims(const char *stream)
{
	const char *p[2] = {stream, consumer};
	PGresult   *r = q("SELECT count(*),"
					  " count(*) FILTER (WHERE generation <= prev),"
					  " count(*) FILTER (WHERE verdict = 'aligned'),"
					  " count(*) FILTER (WHERE verdict = 'gap_replay_required'),"
					  " count(*) FILTER (WHERE verdict = 'fail_closed'),"
					  " count(*) FILTER (WHERE verdict = 'unrecoverable_divergence'),"
					  " (SELECT count(*) FILTER (WHERE r.state = 'promoted')"
					  "    FROM sog.recovery r JOIN sog.checkpoint c ON c.id = r.checkpoint_id"
					  "   WHERE c.stream = $1 AND c.consumer = $2)"
					  " FROM (SELECT m.generation, m.verdict,"
					  "        lag(m.generation) OVER (ORDER BY m.id) AS prev"
					  "   FROM sog.manifest_log m JOIN sog.checkpoint c ON c.id = m.checkpoint_id"
					  "  WHERE c.stream = $1 AND c.consumer = $2 AND m.kind = 'claim') x",
					  2, p);

	printf("check stream=%s claims=%lld claims_aligned=%lld claims_gap_replay_required=%lld "
		   "claims_fail_closed=%lld claims_unrecoverable_divergence=%lld "
		   "recoveries_promoted=%lld\n", stream, num(r, 0), num(r, 2), num(r, 3),
		   num(r, 4), num(r, 5), num(r, 6));
	invariant(num(r, 1) == 0, "%s: each of %lld claims took a newer generation than the one before",
			  stream, num(r, 0));
	PQclear(r);
}

/* No row of a generation committed after a newer generation's claim. */
static void
check_fencing(const char *stream)
{
	char		sql[1024];
	const char *p[2] = {stream, consumer};
	PGresult   *r;

	snprintf(sql, sizeof(sql),
			 "SELECT (SELECT count(*) FROM %s s"
			 "   JOIN sog.checkpoint c ON c.stream = s.stream AND c.consumer = $2"
			 "   JOIN sog.manifest_log m ON m.checkpoint_id = c.id AND m.kind = 'claim'"
			 "  WHERE s.stream = $1 AND s.gen < m.generation"
			 "    AND pg_xact_commit_timestamp(s.xmin) > pg_xact_commit_timestamp(m.xmin)),"
			 " (SELECT count(*) FROM %s s WHERE s.stream = $1"
			 "    AND pg_xact_commit_timestamp(s.xmin) IS NULL)", sink, sink);
	r = q(sql, 2, p);
	printf("check stream=%s fence_violations=%lld\n", stream, num(r, 0));
	invariant(num(r, 0) == 0 && num(r, 1) == 0,
			  "%s: no sink row committed by a generation after a newer one claimed "
			  "(%lld violations, %lld rows without a commit timestamp)",
			  stream, num(r, 0), num(r, 1));
	PQclear(r);
}

static void
check_main(const char *stream)
{
	char		sql[2048];
	const char *p[2] = {stream, consumer};
	PGresult   *r;
	long long	produced, broker, mismatch, in_sink, lost, dup, corrupt;

	snprintf(sql, sizeof(sql),
			 "WITH p AS (SELECT seq, body FROM chk_produced WHERE stream = $1),"
			 " b AS (SELECT seq, body FROM chk_broker WHERE stream = $1),"
			 " s AS (SELECT seq, body FROM %s WHERE stream = $1)"
			 " SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM b),"
			 "  (SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM b) x) +"
			 "  (SELECT count(*) FROM (SELECT * FROM b EXCEPT ALL SELECT * FROM p) y),"
			 "  (SELECT count(*) FROM p WHERE EXISTS (SELECT 1 FROM s WHERE s.seq = p.seq AND s.body = p.body)),"
			 "  (SELECT count(*) FROM p WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.seq = p.seq AND s.body = p.body)),"
			 "  (SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM s GROUP BY seq) d),"
			 "  (SELECT count(*) FROM s WHERE NOT EXISTS (SELECT 1 FROM p WHERE p.seq = s.seq AND p.body = s.body))",
			 sink);
	r = q(sql, 1, p);
	produced = num(r, 0), broker = num(r, 1), mismatch = num(r, 2);
	in_sink = num(r, 3), lost = num(r, 4), dup = num(r, 5), corrupt = num(r, 6);
	PQclear(r);
	printf("check stream=%s produced=%lld broker=%lld in_sink=%lld lost=%lld duplicated=%lld corrupt=%lld\n",
		   stream, produced, broker, in_sink, lost, dup, corrupt);
	invariant(produced > 0 && broker == produced && mismatch == 0,
			  "%s: the broker holds exactly the %lld events the publisher had acknowledged",
			  stream, produced);
	invariant(lost == 0, "%s: %lld lost (produced, not in the sink with their bytes)", stream, lost);
	invariant(dup == 0, "%s: %lld duplicated (extra sink rows)", stream, dup);
	invariant(corrupt == 0, "%s: %lld sink rows match no produced event", stream, corrupt);
	check_claims(stream);
	check_fencing(stream);
	r = q("SELECT coalesce(c.applied_position::text, '0'), c.state,"
		  " (SELECT count(*) FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id),"
		  " (SELECT max(seq) FROM chk_produced WHERE stream = $1)"
		  " FROM sog.checkpoint c WHERE c.stream = $1 AND c.consumer = $2", 2, p);
	invariant(PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 3)) == 0 &&
			  num(r, 2) == 0,
			  "%s: the checkpoint applied through the last sequence (%s of %s), %s, no open gap",
			  stream, PQntuples(r) ? PQgetvalue(r, 0, 0) : "?",
			  PQntuples(r) ? PQgetvalue(r, 0, 3) : "?", PQntuples(r) ? PQgetvalue(r, 0, 1) : "?");
	PQclear(r);
}

static void
check_retention(const char *stream)
{
	char		sql[2048], first_s[24];
	const char *p[3] = {stream, consumer, first_s};
	jsStreamInfo *si = NULL;
	jsErrCode	jerr = 0;
	PGresult   *r;
	long long	applied, first, ngaps, from, to, rows, distinct, matching, above, produced, nret;
	bool		retention_reason, failed_closed;

	if (js_GetStreamInfo(&si, js, stream, NULL, &jerr) != NATS_OK)
		die("stream info %s", stream);
	first = (long long) si->State.FirstSeq;
	jsStreamInfo_Destroy(si);
	snprintf(first_s, sizeof(first_s), "%lld", first);
	snprintf(sql, sizeof(sql),
			 "SELECT coalesce(c.applied_position::numeric, 0), c.state = 'failed_closed',"
			 " (SELECT count(*) FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id),"
			 " (SELECT coalesce(min(g.from_position::numeric), 0) FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id),"
			 " (SELECT max(g.to_position::numeric) FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id),"
			 " (SELECT bool_and(g.reason = 'retention') FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id),"
			 " (SELECT count(*) FROM sog.unresolved_gaps g WHERE g.checkpoint_id = c.id AND g.reason = 'retention'),"
			 " (SELECT count(*) FROM %s s WHERE s.stream = $1),"
			 " (SELECT count(DISTINCT seq) FROM %s s WHERE s.stream = $1),"
			 " (SELECT count(*) FROM %s s JOIN chk_produced p USING (stream, seq, body) WHERE s.stream = $1),"
			 " (SELECT count(*) FROM %s s WHERE s.stream = $1 AND s.seq > coalesce(c.applied_position::numeric, 0)),"
			 " (SELECT count(*) FROM chk_produced WHERE stream = $1), $3::bigint"
			 " FROM sog.checkpoint c WHERE c.stream = $1 AND c.consumer = $2", sink, sink, sink, sink);
	r = q(sql, 3, p);
	if (PQntuples(r) != 1)
		die("no checkpoint for %s", stream);
	applied = num(r, 0), failed_closed = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	ngaps = num(r, 2), from = num(r, 3), to = num(r, 4);
	retention_reason = strcmp(PQgetvalue(r, 0, 5), "t") == 0;
	rows = num(r, 7), distinct = num(r, 8), matching = num(r, 9), above = num(r, 10);
	produced = num(r, 11);
	nret = num(r, 6);
	PQclear(r);
	printf("check stream=%s retention produced=%lld applied=%lld first_seq=%lld "
		   "gap_from=%lld gap_to=%lld proven_lost=%lld in_sink=%lld duplicated=%lld "
		   "retention_gaps=%lld unapplied_retained=%lld\n",
		   stream, produced, applied, first, from, to, first - 1 - applied, matching,
		   rows - distinct, nret, produced - first + 1);
	invariant(ngaps == 1 && retention_reason && from == applied && to == first - 1 && to > applied,
			  "%s: one open 'retention' gap (%lld, %lld], exactly what the first sequence %lld "
			  "proves lost after the applied position %lld", stream, from, to, first, applied);
	invariant(rows == applied && distinct == applied && matching == applied && above == 0,
			  "%s: the sink holds 1..%lld exactly once with their bytes and nothing above "
			  "(the consumer stopped instead of skipping)", stream, applied);
	invariant(failed_closed, "%s: the checkpoint is failed_closed until an operator resolves the gap",
			  stream);
	check_claims(stream);
}

static void
connect_all(const char *conninfo, const char *url)
{
	natsConnection *nc;
	natsStatus	s;

	pg = PQconnectdb(conninfo);
	if (PQstatus(pg) != CONNECTION_OK)
		die("%s", PQerrorMessage(pg));
	if ((s = natsConnection_ConnectTo(&nc, url)) != NATS_OK ||
		(s = natsConnection_JetStream(&js, nc, NULL)) != NATS_OK)
		die("NATS: %s", natsStatus_GetText(s));
	PQclear(q("CREATE TEMP TABLE chk_produced (stream text, seq bigint, body bytea)", 0, NULL));
	PQclear(q("CREATE TEMP TABLE chk_broker (stream text, seq bigint, body bytea)", 0, NULL));
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pg", 1, 0, 'p'}, {"nats", 1, 0, 'n'}, {"log", 1, 0, 'l'},
		{"main", 1, 0, 'm'}, {"retention", 1, 0, 'r'},
		{"sink-table", 1, 0, 't'}, {"consumer", 1, 0, 'c'}, {0, 0, 0, 0}
	};
	const char *conninfo = "", *url = "nats://127.0.0.1:4222", *log = NULL;
	char	   *mains = NULL, *tok;
	const char *streams[16];
	const char *retention = NULL;
	int			ch, n = 0, i;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (ch)
		{
			case 'p': conninfo = optarg; break;
			case 'n': url = optarg; break;
			case 'l': log = optarg; break;
			case 'm': mains = strdup(optarg); break;
			case 'r': retention = optarg[0] ? optarg : NULL; break;
			case 't': sink = optarg; break;
			case 'c': consumer = optarg; break;
			default: return 2;
		}
	}
	if (log == NULL || mains == NULL)
		die("usage: demo_check --pg CONNINFO --nats URL --log FILE --main S[,S] [--retention S]");
	for (tok = strtok(mains, ","); tok && n < 16; tok = strtok(NULL, ","))
		streams[n++] = tok;
	connect_all(conninfo, url);
	load_publisher_log(log);
	for (i = 0; i < n; i++)
		load_broker(streams[i]);
	PQclear(q("ANALYZE chk_produced", 0, NULL));
	PQclear(q("ANALYZE chk_broker", 0, NULL));
	for (i = 0; i < n; i++)
		check_main(streams[i]);
	if (retention)
		check_retention(retention);
	printf("check failures=%d\n", failures);
	PQfinish(pg);
	return failures == 0 ? 0 : 1;
}

/*
 * demo_tool.c: the demo driver's NATS side (not part of the consumer).
 *
 *   demo_tool create-stream --nats URL --stream NAME --subject SUBJ [--max-msgs N]
 *       (re)creates a file-backed stream; with --max-msgs, the oldest
 *       messages are discarded beyond N (the retention case)
 *   demo_tool publish --nats URL --stream NAME --subject SUBJ --count N
 *             --seed S [--first-index I] [--rate EPS] --log FILE
 *       publishes N events and appends, for each one the server
 *       acknowledged, "stream <TAB> sequence <TAB> \\x<hex of the bytes>" to
 *       FILE (the COPY text format the checker loads); exits non-zero if any
 *       publish failed
 *   demo_tool info --nats URL --stream NAME
 *       prints "first_seq=F last_seq=L msgs=M consumers=C"
 *   demo_tool consumer --nats URL --stream NAME --name CONSUMER
 *       exit status 0 if the consumer exists, 1 if the server answers
 *       JSConsumerNotFoundErr (10014), 2 for anything else
 *
 * An event's bytes: its index as 8 bytes big-endian, a JSON text, and a
 * pseudo-random binary tail (NUL bytes included) of 0 to 47 bytes, all
 * derived from (seed, stream, index), so a run is reproducible.
 */
#include <nats/nats.h>

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct Args
{
	const char *cmd, *url, *stream, *subject, *log, *name;
	int64_t		max_msgs, count, first_index, rate;
	uint64_t	seed;
} Args;

static FILE *logf_out;
static int64_t acked, failed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void
die(const char *what, natsStatus s, jsErrCode jerr)
{
	fprintf(stderr, "demo_tool: %s: %s (JetStream error %d)\n", what,
			natsStatus_GetText(s), (int) jerr);
	exit(1);
}

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* The bytes of event `index` of `stream`; returns the length. */
static int
make_event(const Args *a, int64_t index, char *buf, int cap)
{
	uint64_t	h = a->seed * 0x9e3779b97f4a7c15ULL;
	const char *p;
	int			n, i, tail;

	for (p = a->stream; *p; p++)
		h = mix(h ^ (uint8_t) *p);
	h = mix(h ^ (uint64_t) index);
	for (i = 0; i < 8; i++)
		buf[i] = (char) ((uint64_t) index >> (56 - 8 * i));
	n = 8 + snprintf(buf + 8, cap - 8,
					 "{\"stream\":\"%s\",\"i\":%" PRId64 ",\"amount\":%" PRIu64 "}",
					 a->stream, index, h % 100000);
	tail = (int) (mix(h) % 48);
	for (i = 0; i < tail && n < cap; i++)
		buf[n++] = (char) (mix(h + i) & 0xff);
	return n;
}

/* Each acknowledgment: log the sequence the server gave the event. */
static void
on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *d = (const unsigned char *) natsMsg_GetData(msg);
	int			n = natsMsg_GetDataLength(msg), i;

	(void) js;
	(void) closure;
	pthread_mutex_lock(&mu);
	if (pae != NULL || pa == NULL)
		failed++;
	else
	{
		fprintf(logf_out, "%s\t%" PRIu64 "\t\\\\x", pa->Stream, pa->Sequence);
		for (i = 0; i < n; i++)
		{
			fputc(hex[d[i] >> 4], logf_out);
			fputc(hex[d[i] & 15], logf_out);
		}
		fputc('\n', logf_out);
		acked++;
	}
	pthread_mutex_unlock(&mu);
	natsMsg_Destroy(msg);
}

static void
connect_js(const Args *a, natsConnection **nc, jsCtx **js, bool async_acks)
{
	jsOptions	jo;
	natsStatus	s;

	s = natsConnection_ConnectTo(nc, a->url);
	if (s != NATS_OK)
		die("connect", s, 0);
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	if (async_acks)
	{
		jo.PublishAsync.MaxPending = 4000;
		jo.PublishAsync.AckHandler = on_ack;
	}
	s = natsConnection_JetStream(js, *nc, &jo);
	if (s != NATS_OK)
		die("jetstream", s, 0);
}

static void
cmd_create(const Args *a)
{
	natsConnection *nc;
	jsCtx	   *js;
	jsStreamConfig sc;
	jsStreamInfo *si = NULL;
	jsErrCode	jerr = 0;
	const char *subjects[1] = {a->subject};
	natsStatus	s;

	connect_js(a, &nc, &js, false);
	(void) js_DeleteStream(js, a->stream, NULL, NULL);
	jsStreamConfig_Init(&sc);
	sc.Name = a->stream;
	sc.Subjects = subjects;
	sc.SubjectsLen = 1;
	sc.Storage = js_FileStorage;
	if (a->max_msgs > 0)
	{
		sc.MaxMsgs = a->max_msgs;
		sc.Discard = js_DiscardOld;
	}
	s = js_AddStream(&si, js, &sc, NULL, &jerr);
	if (s != NATS_OK)
		die("add stream", s, jerr);
	printf("stream=%s subject=%s max_msgs=%" PRId64 " created=%" PRId64 "\n",
		   a->stream, a->subject, a->max_msgs, si->Created);
	jsStreamInfo_Destroy(si);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void
cmd_publish(const Args *a)
{
	natsConnection *nc;
	jsCtx	   *js;
	jsPubOptions po;
	char		buf[256];
	double		t0 = now_s();
	int64_t		i;
	natsStatus	s;

	if ((logf_out = fopen(a->log, "a")) == NULL)
	{
		perror(a->log);
		exit(1);
	}
	connect_js(a, &nc, &js, true);
	jsPubOptions_Init(&po);
	po.MaxWait = 10000;
	po.ExpectStream = a->stream;
	for (i = 0; i < a->count; i++)
	{
		int			n = make_event(a, a->first_index + i, buf, sizeof(buf));

		if (a->rate > 0)
		{
			/* read the clock once: due - now_s() may turn negative between two reads */
			double		wait = t0 + (double) i / a->rate - now_s();

			if (wait > 0)
				usleep((useconds_t) (wait * 1e6));
		}
		s = js_PublishAsync(js, a->subject, buf, n, &po);
		if (s != NATS_OK)
			die("publish", s, 0);
	}
	s = js_PublishAsyncComplete(js, NULL);
	if (s != NATS_OK)
		die("publish complete", s, 0);
	fclose(logf_out);
	printf("stream=%s published=%" PRId64 " acked=%" PRId64 " failed=%" PRId64
		   " seconds=%.3f\n", a->stream, a->count, acked, failed, now_s() - t0);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	exit(failed == 0 && acked == a->count ? 0 : 1);
}

static void
cmd_info(const Args *a)
{
	natsConnection *nc;
	jsCtx	   *js;
	jsStreamInfo *si = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	connect_js(a, &nc, &js, false);
	s = js_GetStreamInfo(&si, js, a->stream, NULL, &jerr);
	if (s != NATS_OK)
		die("stream info", s, jerr);
	printf("first_seq=%" PRIu64 " last_seq=%" PRIu64 " msgs=%" PRIu64
		   " consumers=%" PRId64 "\n", si->State.FirstSeq, si->State.LastSeq,
		   si->State.Msgs, si->State.Consumers);
	jsStreamInfo_Destroy(si);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

/* Does a consumer exist?  The driver waits for the server to delete one. */
static int
cmd_consumer(const Args *a)
{
	natsConnection *nc;
	jsCtx	   *js;
	jsConsumerInfo *ci = NULL;
	jsErrCode	jerr = 0;
	natsStatus	s;

	connect_js(a, &nc, &js, false);
	s = js_GetConsumerInfo(&ci, js, a->stream, a->name, NULL, &jerr);
	if (s == NATS_OK)
		jsConsumerInfo_Destroy(ci);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return s == NATS_OK ? 0 : jerr == JSConsumerNotFoundErr ? 1 : 2;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"nats", 1, 0, 'n'}, {"stream", 1, 0, 's'}, {"subject", 1, 0, 'j'},
		{"max-msgs", 1, 0, 'm'}, {"count", 1, 0, 'c'}, {"seed", 1, 0, 'S'},
		{"first-index", 1, 0, 'f'}, {"rate", 1, 0, 'r'}, {"log", 1, 0, 'l'}, {"name", 1, 0, 'N'},
		{0, 0, 0, 0}
	};
	Args		a = {.url = "nats://127.0.0.1:4222", .first_index = 1};
	int			ch;

	if (argc < 2)
	{
		fprintf(stderr, "usage: demo_tool create-stream|publish|info|consumer [options]\n");
		return 2;
	}
	a.cmd = argv[1];
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (ch)
		{
			case 'n': a.url = optarg; break;
			case 's': a.stream = optarg; break;
			case 'j': a.subject = optarg; break;
			case 'm': a.max_msgs = atoll(optarg); break;
			case 'c': a.count = atoll(optarg); break;
			case 'S': a.seed = strtoull(optarg, NULL, 10); break;
			case 'f': a.first_index = atoll(optarg); break;
			case 'r': a.rate = atoll(optarg); break;
			case 'l': a.log = optarg; break;
			case 'N': a.name = optarg; break;
			default: return 2;
		}
	}
	if (a.stream == NULL)
		return 2;
	if (strcmp(a.cmd, "create-stream") == 0 && a.subject)
		cmd_create(&a);
	else if (strcmp(a.cmd, "publish") == 0 && a.subject && a.log)
		cmd_publish(&a);
	else if (strcmp(a.cmd, "info") == 0)
		cmd_info(&a);
	else if (strcmp(a.cmd, "consumer") == 0 && a.name)
		return cmd_consumer(&a);
	else
		return 2;
	return 0;
}

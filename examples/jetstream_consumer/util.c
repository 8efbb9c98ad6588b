/*
 * util.c: the consumer's small helpers: time, the log, backoff, the phases
 * a test driver can stop it at, pages of records, its own cursor file.
 */
#include "consumer.h"
#include "sha256.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* One log line: "<unix time> <stream> <EVENT> key=value ...", on stdout. */
void
logf_event(Worker *w, const char *event, const char *fmt,...)
{
	struct timeval tv;
	va_list		ap;

	gettimeofday(&tv, NULL);
	printf("%ld.%03ld %s %s ", (long) tv.tv_sec, (long) tv.tv_usec / 1000,
		   w->cfg.stream, event);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Sleep 50 ms, doubling with each consecutive retry, up to 2 s. */
void
backoff(Worker *w)
{
	int			shift = w->retries < 6 ? w->retries : 6;
	long		ms = 50L << shift;

	if (ms > 2000)
		ms = 2000;
	usleep(ms * 1000);
}

/*
 * A named point of the protocol.  --stop-at PHASE:N makes the process stop
 * itself (SIGSTOP) at the Nth time it passes PHASE, after saying so, so that
 * a test driver can kill it exactly there; SIGCONT resumes it.
 */
void
phase(Worker *w, const char *name)
{
	static const char *names[] = {
		"after_claim", "after_verify", "after_note_read", "in_sink_txn",
		"after_commit", "in_recovery_txn", "before_promote", "after_promote"
	};
	int			i, k = -1;

	for (i = 0; i < (int) (sizeof(names) / sizeof(names[0])); i++)
		if (strcmp(names[i], name) == 0)
			k = i;
	if (k < 0)
		return;
	w->phase_count[k]++;
	if (w->cfg.trace)
		logf_event(w, "PHASE", "name=%s n=%d", name, w->phase_count[k]);
	for (i = 0; i < w->cfg.n_stop_at; i++)
		if (strcmp(w->cfg.stop_at[i].phase, name) == 0 &&
			w->cfg.stop_at[i].nth == w->phase_count[k])
		{
			logf_event(w, "STOP_AT", "phase=%s n=%d pid=%d applied=%llu",
					   name, w->phase_count[k], (int) getpid(),
					   (unsigned long long) w->applied);
			raise(SIGSTOP);
			logf_event(w, "CONTINUED", "phase=%s", name);
		}
}

void
page_clear(Page *p)
{
	int			i;

	for (i = 0; i < p->n; i++)
		free(p->rec[i].data);
	p->n = 0;
}

/* Copy a record into the page and compute its payload digest. */
void
page_add(Page *p, uint64_t seq, const char *data, int len)
{
	Record	   *r;

	if (p->n == p->cap)
	{
		p->cap = p->cap ? p->cap * 2 : 256;
		p->rec = realloc(p->rec, p->cap * sizeof(Record));
		if (p->rec == NULL)
		{
			perror("realloc");
			exit(2);
		}
	}
	r = &p->rec[p->n++];
	r->seq = seq;
	r->len = len;
	r->data = malloc(len > 0 ? len : 1);
	memcpy(r->data, data, len);
	sha256(data, len, r->digest);
}

uint64_t
page_last(const Page *p)
{
	return p->n > 0 ? p->rec[p->n - 1].seq : 0;
}

/* Buffer hash of the records above `above`; returns how many there are. */
int
page_hash(const Page *p, uint64_t above, char out[65])
{
	BufferHash	b;
	int			i, n = 0;

	buffer_hash_init(&b);
	for (i = 0; i < p->n; i++)
	{
		char		pos[24];

		if (p->rec[i].seq <= above)
			continue;
		snprintf(pos, sizeof(pos), "%llu", (unsigned long long) p->rec[i].seq);
		buffer_hash_add(&b, pos, p->rec[i].digest);
		n++;
	}
	buffer_hash_hex(&b, out);
	return n;
}

/* Our own read cursor, kept in a file (only the checker-test flag reads it). */
void
write_cursor_file(Worker *w, uint64_t cursor)
{
	char		tmp[4096];
	FILE	   *f;

	if (w->cfg.cursor_file == NULL)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", w->cfg.cursor_file);
	if ((f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "%llu\n", (unsigned long long) cursor);
	fclose(f);
	rename(tmp, w->cfg.cursor_file);
}

uint64_t
read_cursor_file(Worker *w)
{
	unsigned long long v = 0;
	FILE	   *f;

	if (w->cfg.cursor_file == NULL || (f = fopen(w->cfg.cursor_file, "r")) == NULL)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

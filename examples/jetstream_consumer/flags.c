/*
 * flags.c: the consumer's command line.
 */
#include "consumer.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
usage(void)
{
	fprintf(stderr,
			"usage: sog_jetstream_consumer --stream NAME [options]\n"
			"  --pg CONNINFO          libpq connection string (default: PG* environment)\n"
			"  --nats URL             NATS server (default nats://127.0.0.1:4222)\n"
			"  --consumer NAME        checkpoint consumer name (default jetstream-sink)\n"
			"  --partition LABEL      checkpoint partition label (default 0)\n"
			"  --owner NAME           who claims (default host:pid)\n"
			"  --sink-table T         sink table (default sink_events)\n"
			"  --page N               records per page / sink transaction (default 500)\n"
			"  --two-commit           note_read committed alone before every page\n"
			"                         (default: noted in the previous page's transaction)\n"
			"  --inactive-ms N        InactiveThreshold of the pull consumers (default 5000)\n"
			"  --fetch-wait-ms N      how long one pull waits (default 250)\n"
			"  --claim-timeout-ms N   sog.claim_timeout (default 10000)\n"
			"  --until SEQ            halt and exit once SEQ is applied\n"
			"  --idle-exit-ms N       halt and exit after N ms without new records\n"
			"  --stop-at PHASE:N      SIGSTOP itself at the Nth PHASE (repeatable)\n"
			"  --trace                log every phase\n"
			"  --offsets-only         baseline: UPDATE --offsets-table, no guard\n"
			"  --offsets-table T      (default consumer_offsets)\n"
			"  --cursor-file F        keep our own read cursor in F\n"
			"  --ignore-apply-answer  checker test: write every row (duplicates)\n"
			"  --resume-own-cursor    checker test: note nothing, start at F's cursor (losses)\n");
	exit(2);
}

void
parse_flags(Config *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{"pg", 1, 0, 'p'}, {"nats", 1, 0, 'n'}, {"stream", 1, 0, 's'},
		{"partition", 1, 0, 'P'}, {"consumer", 1, 0, 'c'}, {"owner", 1, 0, 'o'},
		{"sink-table", 1, 0, 't'}, {"offsets-table", 1, 0, 'T'},
		{"page", 1, 0, 'b'}, {"two-commit", 0, 0, '2'}, {"inactive-ms", 1, 0, 'i'},
		{"fetch-wait-ms", 1, 0, 'f'}, {"claim-timeout-ms", 1, 0, 'C'},
		{"until", 1, 0, 'u'}, {"idle-exit-ms", 1, 0, 'I'},
		{"stop-at", 1, 0, 'S'}, {"trace", 0, 0, 'x'},
		{"offsets-only", 0, 0, 'O'}, {"cursor-file", 1, 0, 'F'},
		{"ignore-apply-answer", 0, 0, 'A'}, {"resume-own-cursor", 0, 0, 'R'},
		{0, 0, 0, 0}
	};
	char		host[64] = "localhost";
	int			ch;

	gethostname(host, sizeof(host) - 1);
	*c = (Config) {
		.pg = "", .nats_url = "nats://127.0.0.1:4222", .partition = "0",
		.consumer = "jetstream-sink", .sink_table = "sink_events",
		.offsets_table = "consumer_offsets", .page = 500,
		.inactive_ms = 5000, .fetch_wait_ms = 250, .claim_timeout_ms = 10000
	};
	snprintf(c->owner, sizeof(c->owner), "%s:%d", host, (int) getpid());
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (ch)
		{
			case 'p': c->pg = optarg; break;
			case 'n': c->nats_url = optarg; break;
			case 's': c->stream = optarg; break;
			case 'P': c->partition = optarg; break;
			case 'c': c->consumer = optarg; break;
			case 'o': snprintf(c->owner, sizeof(c->owner), "%s", optarg); break;
			case 't': c->sink_table = optarg; break;
			case 'T': c->offsets_table = optarg; break;
			case 'b': c->page = atoi(optarg); break;
			case '2': c->two_commit = true; break;
			case 'i': c->inactive_ms = atoi(optarg); break;
			case 'f': c->fetch_wait_ms = atoi(optarg); break;
			case 'C': c->claim_timeout_ms = atoi(optarg); break;
			case 'u': c->until = strtoull(optarg, NULL, 10); break;
			case 'I': c->idle_exit_ms = atoi(optarg); break;
			case 'x': c->trace = true; break;
			case 'O': c->offsets_only = true; break;
			case 'F': c->cursor_file = optarg; break;
			case 'A': c->ignore_apply_answer = true; break;
			case 'R': c->resume_own_cursor = true; break;
			case 'S':
				{
					char	   *colon = strchr(optarg, ':');

					if (colon == NULL || c->n_stop_at == MAX_STOP_AT)
						usage();
					*colon = '\0';
					c->stop_at[c->n_stop_at].phase = optarg;
					c->stop_at[c->n_stop_at++].nth = atoi(colon + 1);
					break;
				}
			default: usage();
		}
	}
	if (c->stream == NULL || c->page < 1 || c->fetch_wait_ms >= c->inactive_ms)
		usage();
}


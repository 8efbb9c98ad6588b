# stream_offset_guard/Makefile
#
# PGXS build.  Only "installcheck" works under PGXS: install the extension
# into a running server first.  "make test" does all of it on a throwaway
# cluster (see test/run-tests.sh); flags such as -Werror and assertions are
# passed in through PG_CFLAGS by that script, never hard-wired here.

MODULE_big = stream_offset_guard
OBJS = \
	src/module.o \
	src/type/position_codec.o \
	src/type/position.o \
	src/type/hash.o \
	src/type/halt.o \
	src/type/util.o \
	src/store/tables.o \
	src/store/citus.o \
	src/store/writer.o \
	src/store/access.o \
	src/store/holder.o \
	src/store/receipt.o \
	src/store/gap.o \
	src/checkpoint/checkpoint.o \
	src/checkpoint/boundary.o \
	src/functions/apply.o \
	src/functions/claim.o \
	src/functions/gap.o \
	src/functions/receipt.o \
	src/functions/reconfigure.o \
	src/functions/recovery.o \
	src/functions/promote.o \
	$(WIN32RES)
PGFILEDESC = "stream_offset_guard - exactly-once stream consumption guard"
# src/ by concern, each folder a layer or two (docs/development.md, "The
# layers of src/"): the module and the base headers at the top, type/ (the
# position type, hashes, the halt evaluation), store/ (the extension's
# tables, writes, Citus, grants, receipts and gaps), checkpoint/ (the
# checkpoint row and its read boundary), functions/ (what SQL calls).
# Project headers are named from src/: #include "store/gap.h".
PG_CPPFLAGS += -I$(srcdir)/src

EXTENSION = stream_offset_guard
DATA = $(wildcard sql/$(EXTENSION)--*.sql)

# Every file of test/sql and test/specs, found by wildcard: a new test is
# a new file (docs/development.md, "Where a new test goes").  setup runs
# first (it creates the extension the others use); the rest in name order.
REGRESS = setup $(sort $(filter-out setup,$(patsubst test/sql/%.sql,%,$(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test --outputdir=test --load-extension=$(EXTENSION)
ISOLATION = $(sort $(patsubst test/specs/%.spec,%,$(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --outputdir=test/output_iso
TAP_TESTS = 1

EXTRA_CLEAN = test/results test/regression.diffs test/regression.out test/output_iso \
	tmp_check log \
	test/fuzz/position_fuzz

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# hash.c calls OpenSSL's EVP interface directly where PostgreSQL itself is
# built with OpenSSL (pg_config.h's USE_OPENSSL); link libcrypto then.
ifeq ($(with_ssl),openssl)
SHLIB_LINK += -lcrypto
endif

.PHONY: test fuzz demo tour bench bench-versions model portable test-portable reliability test-citus test-versions sanitize valgrind sqlsmith

# The whole suite on a fresh machine: dependencies, build, throwaway cluster,
# pg_regress, isolation, TAP, fuzzing.
test:
	bash test/run-tests.sh

# Fuzz the position parser (libFuzzer, ASan, UBSan) for FUZZ_SECONDS.
fuzz:
	bash test/fuzz.sh

# The main job end to end on a real broker: a throwaway PostgreSQL and
# nats-server on loopback, the C consumer of examples/jetstream_consumer
# under SIGKILLs, a zombie, expired consumers, a server crash and a
# retention loss, then a checker and the report (examples/jetstream_demo).
demo:
	bash examples/jetstream_demo/demo.sh

# A guided walk through the verdicts with one psql session per worker.
tour:
	bash examples/demo.sh

# The benchmark: baselines and the extension side by side in one run
# (bench/README.md; the reports by bench/report.pl).
bench:
	bash bench/run.sh

# A hundred million events with retention pruning from pg_cron and
# autovacuum on: throughput, latency and receipts on disk over the run
# (docs/soak.md); `bash bench/soak.sh --short` does it all in about a minute.
.PHONY: bench-soak bench-soak-hour
bench-soak:
	bash bench/soak.sh

# The same three runs, an hour each (run C a quarter) at 60,000 events/s:
# receipts on disk, WAL and the applier's rate under retention over time
# (docs/receipt-rotation.md).
bench-soak-hour:
	bash bench/soak.sh --hour

# Memory checkers and random SQL against the extension, each in a private
# PostgreSQL copy; each proves first that it can fail (test/sanitize/README.md).
sanitize:
	bash test/sanitize/sanitize.sh --selftest
	bash test/sanitize/sanitize.sh --selftest-ubsan
	bash test/sanitize/sanitize.sh

valgrind:
	bash test/sanitize/valgrind.sh --selftest
	bash test/sanitize/valgrind.sh

sqlsmith:
	bash test/sanitize/sqlsmith.sh --selftest
	bash test/sanitize/sqlsmith.sh

# The portable edition (docs/portable.md): build/portable/install.sql and
# build/portable/pg_tle.sql from sql/ and portable/.  Until every C function
# has its PL/pgSQL counterpart it fails and names each one left;
# test-portable runs test/portable/run.sh (make test's suite portable).
portable:
	perl portable/build.pl --out build/portable

test-portable: install
	bash test/portable/run.sh

# The protocol, model-checked with spin (model/README.md).
model:
	bash model/run.sh && bash model/run.sh --bug && bash model/run.sh --mutants

# Reliability under faults: the workload, the fault loops, the checker
# (test/reliability/README.md); make test runs the short version.
reliability:
	bash test/reliability/run.sh

# The guard on Citus: a coordinator and two workers, faults across nodes
# (test/citus/README.md).
test-citus:
	bash test/citus/run.sh

# Every PostgreSQL major users run, each in a Debian root of its suite
# (15 bookworm, 17 trixie, 18 sid; 19 from experimental, reported only):
# the tree built there, the server suites run, 15 -> 17 and 15 -> 18 by
# dump/restore and pg_upgrade, Citus on 17 (test/versions/run.sh; root).
# VERSIONS_MAJORS="17 18" runs those only (15 is still built for t/010).
test-versions:
	bash test/versions/run.sh $(VERSIONS_MAJORS)

# The real client's cells of the benchmark (B=100 and 1000, 1 and 4 clients)
# on 15, 17 and 18, in the same roots, side by side, with issue 22's targets
# per major (docs/versions-bench.md).
bench-versions:
	bash test/versions/bench.sh

# src/ in PostgreSQL's style: PostgreSQL's own pgindent (from Debian's
# source package of the major PG_CONFIG names), with src/typedefs.list
# (tools/pgindent.sh).  pgindent-check changes nothing and fails if a file
# would change.
.PHONY: pgindent pgindent-check
pgindent:
	bash tools/pgindent.sh
pgindent-check:
	bash tools/pgindent.sh --check

# Source tarball (PGXN) and Debian package targets.
include packaging.mk

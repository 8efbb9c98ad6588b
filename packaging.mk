# packaging.mk: make dist (the PGXN source distribution), make deb (the
# Debian package) and make test-package, included by the Makefile.  The work
# is done by the scripts in test/package/; nothing here runs at parse time
# (the Debian build runs this Makefile in a tree without .git).
#
#   make dist          build/dist/stream_offset_guard-<version>.tar.gz, one
#                      top-level directory stream_offset_guard-<version>/,
#                      made with `git archive` from DIST_REF (default HEAD;
#                      DIST_REF=worktree: the working tree as it would be
#                      committed, for testing only).  <version> is META.json's,
#                      which must be the control file's default_version as
#                      SemVer; the archive's META.json is then checked
#                      against the PGXN Meta Spec 1.0.0 and the files it
#                      ships (test/package/check-meta.pl).  debian/ is left
#                      out of the archive: it is the Debian packaging, not
#                      part of an upstream release.
#
#   make deb           build/deb/: postgresql-<v>-stream-offset-guard_*.deb
#                      for each supported PostgreSQL version (15 on Debian
#                      12), the source package and the build log.  Installs
#                      the missing build dependencies with apt (debhelper,
#                      dpkg-dev, fakeroot, postgresql-server-dev-all and
#                      postgresql-all, pinned to the installed
#                      postgresql-common), makes the distribution from
#                      PKG_REF (default worktree, like make test; or a git
#                      ref), unpacks it with debian/ in a temp dir and runs
#                      dpkg-buildpackage -us -uc there.  pg_buildext runs the
#                      regression suite during the build against the
#                      packaged files (DEB_BUILD_OPTIONS=nocheck skips it).
#
#   make test-package  make deb, lintian (if installed), then each .deb
#                      extracted into a private copy of PostgreSQL: a
#                      throwaway cluster, CREATE EXTENSION, the version,
#                      function calls, ALTER EXTENSION UPDATE from every
#                      packaged install version, the regression suite with
#                      the copy's pg_regress.  Ends with
#                      "make test-package: passed (...)" or the failures.
#
# Why test-package extracts the .deb (dpkg-deb -x) over a private copy of
# PostgreSQL instead of installing it with dpkg -i: the system's PostgreSQL
# is shared.  `make test` installs the working tree's build into the same
# files the package owns (/usr/lib/postgresql/15/lib/stream_offset_guard.so,
# /usr/share/postgresql/15/extension/stream_offset_guard*), so dpkg -i would
# overwrite a concurrent test run's extension under it, the next make
# install would overwrite the package's files behind dpkg's back, and
# removing the package would delete what make test installed; it would also
# need root and leave state in dpkg's database.  dpkg-deb -x writes exactly
# the files dpkg -i would, at the same paths relative to the root, so a
# copy of /usr/lib/postgresql/<v> and /usr/share/postgresql/<v> (which
# PostgreSQL finds relative to its binaries) with the package extracted
# over it, and every other stream_offset_guard file removed from it first,
# loads the package's files and nothing else; the test checks that the
# backend mapped the copy's library.  What extraction does not exercise,
# the test checks otherwise: the package has no maintainer scripts (it
# fails if one appears), and `apt-get -s install` resolves its Depends
# against the installed packages without changing anything.

DIST_REF ?= HEAD
PKG_REF ?= worktree

sog_pkg_dir := $(dir $(lastword $(MAKEFILE_LIST)))
# --worktree or --ref REF for the scripts.
sog_pkg_src = $(if $(filter worktree,$(1)),--worktree,--ref $(1))

.PHONY: dist deb test-package

dist:
	bash $(sog_pkg_dir)test/package/dist.sh $(call sog_pkg_src,$(DIST_REF)) --out $(sog_pkg_dir)build/dist

deb:
	bash $(sog_pkg_dir)test/package/build-deb.sh $(call sog_pkg_src,$(PKG_REF)) --out $(sog_pkg_dir)build/deb

test-package:
	bash $(sog_pkg_dir)test/package/test-package.sh $(call sog_pkg_src,$(PKG_REF)) --out $(sog_pkg_dir)build/deb

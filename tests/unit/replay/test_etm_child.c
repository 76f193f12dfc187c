// SPDX-License-Identifier: BSD-2-Clause
/* test_etm_child.c - the CoreSight decoder's child process
 * (replay/etm_child.c): records arrive whole and in order across batches;
 * a child that crashes, fails, stops early or sends a malformed stream
 * ends the stream with a reason and the records before it kept; a parent
 * that stops reading kills the child; no child or descriptor is left
 * behind. Then, over a real ETE snapshot, a decoder child crashing with
 * SIGSEGV (hwt_etm_test_crash_at) gives the same history up to a last gap
 * item that says so; and OpenCSD's own crash on the damaged ETE snapshots
 * of tests/fuzz/regress/fuzz_snapshot/ is such a gap too.
 */
#include <dirent.h>
#include <stdio.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "etm_child.h"
#include "check.h"

#define SIZE 1000000u            /* the pretend trace's size */

struct got {
	struct hwt_etm_rec v[64];
	size_t n;                /* records taken */
	uint64_t total;
	bool in_order;           /* st counted up from 0 */
	int fail_with;           /* take returns this at the first record */
};

static int take(void *ctx, const struct hwt_etm_rec *r, struct hwt_err *err)
{
	struct got *g = ctx;

	if (g->fail_with)
		return hwt_err_set(err, -g->fail_with, "take failed");
	if (r->type == 99)
		return -EPROTO;
	if (r->st != g->total)
		g->in_order = false;
	if (g->n < sizeof(g->v) / sizeof(g->v[0]))
		g->v[g->n++] = *r;
	g->total++;
	return 0;
}

static void put_n(struct hwt_etm_out *o, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		struct hwt_etm_rec r = { .type = HWT_ETM_REC_FEED,
					 .at = i % SIZE, .st = i };

		hwt_etm_out_put(o, &r);
	}
}

static int many(void *arg, struct hwt_etm_out *o)
{
	put_n(o, *(uint64_t *)arg);
	return 0;
}

static int crash_after(void *arg, struct hwt_etm_out *o)
{
	/* A real fault, as in OpenCSD, at an address that is not NULL so
	 * that UBSan (the sanitizer build) leaves it to the signal. */
	volatile uintptr_t bad = 16;

	put_n(o, *(uint64_t *)arg);
	*(volatile int *)bad = 1;
	return 0;
}

static int fail_after(void *arg, struct hwt_etm_out *o)
{
	put_n(o, *(uint64_t *)arg);
	return -1;
}

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer build: a real AddressSanitizer report in the child. */
static int report_after(void *arg, struct hwt_etm_out *o)
{
	char *volatile p = malloc(8);
	int null = open("/dev/null", O_WRONLY);

	put_n(o, *(uint64_t *)arg);
	/* The report is expected: keep it out of the test's output. */
	if (null >= 0)
		dup2(null, 2);
	return p[8];             /* heap-buffer-overflow */
}
#endif

/* Raw bytes straight into the pipe, then an exit without END: what a
 * child gone wrong could send. */
static int raw(void *arg, struct hwt_etm_out *o)
{
	const struct { const void *d; size_t n; } *w = arg;

	if (write(o->fd, w->d, w->n) != (ssize_t)w->n)
		_exit(3);
	_exit(0);
}

static int run(hwt_etm_child_fn fn, void *arg, struct got *g, char *why,
	       struct hwt_err *err)
{
	g->n = 0;
	g->total = 0;
	g->in_order = true;
	return hwt_etm_child_run(fn, arg, SIZE, take, g, why, 256, err);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void plumbing(void)
{
	struct got g = { 0 };
	struct hwt_err err = { 0 };
	char why[256];
	uint64_t n;
	int rc, fds = count_fds();

	/* Several batches: 200000 records are about 120 writes. */
	n = 200000;
	rc = run(many, &n, &g, why, &err);
	CHECK("etm child: every record, in order, across batches",
	      rc == 0 && !why[0] && g.total == n && g.in_order,
	      "rc %d why '%s' got %llu of %llu, in order %d", rc, why,
	      (unsigned long long)g.total, (unsigned long long)n, g.in_order);

	n = 1000;
	rc = run(crash_after, &n, &g, why, &err);
	CHECK("etm child: a crash keeps the records before it",
	      rc == 0 && g.total == n && g.in_order,
	      "rc %d got %llu of %llu", rc, (unsigned long long)g.total,
	      (unsigned long long)n);
	CHECK("etm child: a crash is named with its offset",
	      strstr(why, "CoreSight decoder (OpenCSD) crashed with SIGSEGV "
		     "at trace offset 999;") &&
	      strstr(why, "history after that point is lost"), "why '%s'", why);

	n = 5;
	rc = run(fail_after, &n, &g, why, &err);
	CHECK("etm child: a nonzero exit is a failure",
	      rc == 0 && g.total == n &&
	      strstr(why, "failed with exit status 1 at trace offset 4;"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

#if defined(__SANITIZE_ADDRESS__)
	n = 7;
	rc = run(report_after, &n, &g, why, &err);
	CHECK("etm child: a sanitizer report keeps the records before it",
	      rc == 0 && g.total == n &&
	      strstr(why, "failed with exit status 1 at trace offset 6;"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);
#endif

	/* The parent gives up at the first record while the child still
	 * has megabytes to write: it must be killed, not left blocked. */
	n = 1000000;
	g.fail_with = -ENOMEM;
	rc = run(many, &n, &g, why, &err);
	g.fail_with = 0;
	CHECK("etm child: a failing reader kills the child and says why",
	      rc == -ENOMEM && !strcmp(err.msg, "take failed"), "rc %d '%s'",
	      rc, err.msg);

	CHECK("etm child: no child left unreaped",
	      waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD,
	      "a child is still there");
	CHECK("etm child: no descriptor leaked", count_fds() == fds,
	      "%d descriptors before, %d after", fds, count_fds());
}

/* A debugger runs decodes from several threads: each child then also
 * holds the other's pipe for a while, which must delay, not break, them. */
struct thread_run {
	pthread_t t;
	uint64_t n;
	struct got g;
	char why[256];
	int rc;
};

static void *thread_main(void *arg)
{
	struct thread_run *tr = arg;
	struct hwt_err err = { 0 };

	tr->rc = run(many, &tr->n, &tr->g, tr->why, &err);
	return NULL;
}

static void threads(void)
{
	static struct thread_run tr[2];
	bool ok = true;

	for (int i = 0; i < 2; i++) {
		tr[i].n = 100000 + (uint64_t)i;
		ok &= pthread_create(&tr[i].t, NULL, thread_main, &tr[i]) == 0;
	}
	for (int i = 0; i < 2 && ok; i++)
		pthread_join(tr[i].t, NULL);
	for (int i = 0; i < 2 && ok; i++)
		ok &= tr[i].rc == 0 && !tr[i].why[0] &&
			tr[i].g.total == tr[i].n && tr[i].g.in_order;
	CHECK("etm child: two threads decode at once", ok,
	      "rc %d/%d, %llu/%llu records, '%s' '%s'", tr[0].rc, tr[1].rc,
	      (unsigned long long)tr[0].g.total,
	      (unsigned long long)tr[1].g.total, tr[0].why, tr[1].why);
}

static void malformed(void)
{
	struct hwt_etm_rec recs[4] = {
		{ .type = HWT_ETM_REC_FEED, .at = 10, .st = 0 },
		{ .type = HWT_ETM_REC_FEED, .at = 20, .st = 1 },
	};
	struct { const void *d; size_t n; } w;
	struct got g = { 0 };
	struct hwt_err err = { 0 };
	char why[256];
	int rc;

	/* Two whole records and half of a third. */
	w.d = recs;
	w.n = 2 * sizeof(recs[0]) + sizeof(recs[0]) / 2;
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: a truncated record ends the stream, earlier kept",
	      rc == 0 && g.total == 2 &&
	      strstr(why, "sent a truncated record at trace offset 20;"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

	recs[2] = (struct hwt_etm_rec){ .type = HWT_ETM_REC_FEED,
					.at = SIZE + 1, .st = 2 };
	w.n = 3 * sizeof(recs[0]);
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: an offset past the trace is rejected",
	      rc == 0 && g.total == 2 && strstr(why, "an offset past the trace"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

	recs[2] = (struct hwt_etm_rec){ .type = 99, .at = 30, .st = 2 };
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: a record the decoder rejects ends the stream",
	      rc == 0 && g.total == 2 &&
	      strstr(why, "a record the decoder does not know"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

	recs[2] = (struct hwt_etm_rec){ .type = HWT_ETM_REC_END, .at = SIZE };
	recs[3] = (struct hwt_etm_rec){ .type = HWT_ETM_REC_FEED, .st = 2 };
	w.n = 4 * sizeof(recs[0]);
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: a record after the end is rejected",
	      rc == 0 && g.total == 2 && strstr(why, "a record after the end"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

	w.n = 2 * sizeof(recs[0]);
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: a stream without its end is a failure",
	      rc == 0 && g.total == 2 && strstr(why, "stopped without finishing"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);

	w.n = 0;
	rc = run(raw, &w, &g, why, &err);
	CHECK("etm child: an empty stream is a failure",
	      rc == 0 && g.total == 0 && strstr(why, "stopped without finishing"),
	      "rc %d got %llu why '%s'", rc, (unsigned long long)g.total, why);
}

struct runs {
	struct hwt_run v[4096];
	size_t n;
};

static int keep_run(void *arg, const struct hwt_run *r)
{
	struct runs *rs = arg;

	if (rs->n < sizeof(rs->v) / sizeof(rs->v[0]))
		rs->v[rs->n++] = *r;
	return 0;
}

/* All runs of thread 0 of the snapshot, and the last gap's reason. */
static int snapshot_runs(const struct hwt_bundle *b, struct hwt_image *img,
			 struct runs *rs, char *last_gap, size_t len)
{
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct hwt_item it;
	uint64_t n;
	int rc = hwt_history_open(b, 0, img, &h, &err);

	rs->n = 0;
	last_gap[0] = '\0';
	if (rc) {
		printf("open: %s\n", err.msg);
		return rc;
	}
	rc = hwt_history_runs(h, 1, keep_run, rs, &err);
	n = hwt_history_count(h);
	if (!rc && n && hwt_history_get(h, n, &it, &err) == 0 &&
	    it.kind == HWT_ITEM_GAP)
		snprintf(last_gap, len, "%s", it.gap_reason);
	hwt_history_free(h);
	return rc;
}

/* ../shared/corpus beside the repository. */
static bool snapshot_dir(char *out, size_t len)
{
	char root[PATH_MAX];

	if (!check_repo_dir(root, sizeof(root)))
		return false;
	snprintf(out, len, "%s/../shared/corpus/opencsd/snapshots/"
		 "trace_file_cid_vmid", root);
	return access(out, R_OK) == 0;
}

static void decoder_crash(void)
{
	static struct runs full, cut;
	struct hwt_bundle *b = NULL;
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	char dir[PATH_MAX + 64], gap[512], gap_full[512];
	size_t same = 0;
	int rc;

	if (!snapshot_dir(dir, sizeof(dir))) {
		printf("SKIP etm child: decoder crash over a snapshot: no "
		       "../shared/corpus/opencsd/snapshots/trace_file_cid_vmid\n");
		return;
	}
	if (hwt_bundle_read(dir, &b, &err) || hwt_image_new(&img, &err) ||
	    hwt_image_add_bundle(img, b, &err)) {
		CHECK("etm child: snapshot opens", false, "%s", err.msg);
		goto out;
	}
	rc = snapshot_runs(b, img, &full, gap_full, sizeof(gap_full));
	CHECK("etm child: snapshot decodes whole", rc == 0 && full.n > 100 &&
	      !strstr(gap_full, "CoreSight decoder"), "rc %d, %zu runs, '%s'",
	      rc, full.n, gap_full);

	hwt_etm_test_crash_at = 200;
	rc = snapshot_runs(b, img, &cut, gap, sizeof(gap));
	hwt_etm_test_crash_at = 0;
	while (same + 1 < cut.n && same < full.n &&
	       cut.v[same].begin == full.v[same].begin &&
	       cut.v[same].end == full.v[same].end &&
	       cut.v[same].count == full.v[same].count &&
	       cut.v[same].gap == full.v[same].gap)
		same++;
	CHECK("etm child: decoder crash keeps the history before it",
	      rc == 0 && cut.n > 50 && cut.n < full.n && same == cut.n - 1,
	      "rc %d, %zu runs of %zu, %zu the same", rc, cut.n, full.n, same);
	CHECK("etm child: decoder crash ends the history with a gap saying so",
	      cut.n && cut.v[cut.n - 1].gap &&
	      strstr(gap, "CoreSight decoder (OpenCSD) crashed with SIGSEGV "
		     "at trace offset ") &&
	      strstr(gap, "; history after that point is lost"),
	      "last gap '%s'", gap);
out:
	hwt_image_free(img);
	hwt_bundle_free(b);
}

#define MARK "#@file "

/* The next marker line at or after p (at the start of a line), or end. */
static const char *next_mark(const char *p, const char *end)
{
	while (p < end) {
		if ((size_t)(end - p) >= strlen(MARK) &&
		    !memcmp(p, MARK, strlen(MARK)))
			return p;
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			return end;
		p++;
	}
	return end;
}

/* One file of the input; the first of a name wins, as in the fuzzer. */
static bool put(const char *dir, const char *name, size_t nlen,
		const char *d, size_t n)
{
	char path[PATH_MAX + 80];
	int fd;
	bool ok;

	if (!nlen || nlen > 64 || name[0] == '.' || memchr(name, '/', nlen))
		return true;
	snprintf(path, sizeof(path), "%s/%.*s", dir, (int)nlen, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return errno == EEXIST;
	ok = write(fd, d, n) == (ssize_t)n;
	close(fd);
	return ok;
}

/* Write a fuzz_snapshot input out as a directory the way the fuzzer does
 * (tests/fuzz/fuzz_snapshot.c): snapshot.ini up to the first line
 * "#@file NAME", then each further file. */
static bool unpack(const char *input, const char *dir)
{
	static char d[65536];
	FILE *f = fopen(input, "rb");
	size_t n = f ? fread(d, 1, sizeof(d), f) : 0;
	const char *end = d + n, *p = next_mark(d, end);
	bool ok;

	if (f)
		fclose(f);
	ok = n > 0 && put(dir, "snapshot.ini", strlen("snapshot.ini"), d,
			  (size_t)(p - d));
	while (ok && p < end) {
		const char *name = p + strlen(MARK);
		const char *nl = memchr(name, '\n', (size_t)(end - name));
		const char *body = nl ? nl + 1 : end;
		const char *next = next_mark(body, end);
		/* The newline before a marker belongs to the marker. */
		const char *stop = next < end && next > body ? next - 1 : next;

		ok = put(dir, name, (size_t)((nl ? nl : end) - name), body,
			 (size_t)(stop - body));
		p = next;
	}
	return ok;
}

static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
}

static void opencsd_crash(void)
{
	static const char *const inputs[] = {
		"ete-mispredict-atom", "fuzzer-found-mispredict-atom",
	};
	char root[PATH_MAX], in[PATH_MAX + 80], dir[] = "/tmp/hwt-etm-XXXXXX";

	if (!check_repo_dir(root, sizeof(root)) || !mkdtemp(dir)) {
		CHECK("etm child: OpenCSD crash inputs", false, "no directory");
		return;
	}
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		static struct runs rs;
		struct hwt_bundle *b = NULL;
		struct hwt_image *img = NULL;
		struct hwt_err err = { 0 };
		char gap[512] = "", name[128];
		int rc = -1;

		snprintf(in, sizeof(in), "%s/tests/fuzz/regress/fuzz_snapshot/%s",
			 root, inputs[i]);
		if (unpack(in, dir) && hwt_bundle_read(dir, &b, &err) == 0 &&
		    hwt_image_new(&img, &err) == 0)
			rc = snapshot_runs(b, img, &rs, gap, sizeof(gap));
		snprintf(name, sizeof(name), "etm child: OpenCSD's crash on %s "
			 "is a gap", inputs[i]);
		CHECK(name, rc == 0 && strstr(gap, "CoreSight decoder (OpenCSD) "
					      "crashed with SIGSEGV"),
		      "rc %d '%s', last gap '%s'", rc, err.msg, gap);
		hwt_image_free(img);
		hwt_bundle_free(b);
		empty_dir(dir);
	}
	rmdir(dir);
}

int main(void)
{
	RUN(plumbing);
	RUN(threads);
	RUN(malformed);
	RUN(decoder_crash);
	RUN(opencsd_crash);
	return check_exit();
}

// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_snapshot.c - the OpenCSD snapshot reader (common/snapshot.c).
 *
 * Input: the files of one snapshot directory in one buffer. Up to the
 * first marker line it is snapshot.ini; each line "#@file NAME" starts
 * the file NAME (device and trace ini files, trace buffers, memory dumps).
 * NAME is 1 to 64 of [A-Za-z0-9_.-], not starting with '.', so every file
 * stays in the fuzzer's own temporary directory; at most 16 files. They
 * are written there and hwt_bundle_read reads the directory; a snapshot
 * that reads is opened source by source (at most 4) over an image without
 * memory, so the trace unit registers reach the CoreSight decoder. OpenCSD
 * runs in a child process per source (replay/etm_child.c): an input that
 * crashes it gives a history ending in a gap, not a finding.
 *
 * Seeds (HWT_FUZZ_SEEDS=DIR): every snapshot under HWT_FUZZ_SNAPSHOTS
 * (test_fuzz.py points it at ../shared/corpus/opencsd/snapshots), its ini
 * files whole and its other files cut so that a seed stays under 16 KiB.
 */
#include <dirent.h>
#include <unistd.h>

#include "fuzz-common.h"

#define MARK "#@file "
#define MAX_FILES 16
#define MAX_NAME 64
#define SEED_MAX 16000u

static char dir[4096];
static char names[MAX_FILES][MAX_NAME + 1];
static int nnames;

static void clear_dir(void)
{
	char path[4200];

	for (int i = 0; i < nnames; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	nnames = 0;
}

static void remove_dir(void)
{
	clear_dir();
	rmdir(dir);
}

static bool good_name(const char *s, size_t n)
{
	if (n == 0 || n > MAX_NAME || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* The next marker line from p (at the start of a line), or end. */
static const uint8_t *next_mark(const uint8_t *p, const uint8_t *end)
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

static void put(const char *name, size_t nlen, const uint8_t *d, size_t n)
{
	char path[4200];
	FILE *f;

	if (nnames >= MAX_FILES)
		return;
	for (int i = 0; i < nnames; i++)
		if (strlen(names[i]) == nlen && !memcmp(names[i], name, nlen))
			return;
	memcpy(names[nnames], name, nlen);
	names[nnames][nlen] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, names[nnames++]);
	f = fopen(path, "wb");
	if (!f)
		return;
	if (n && fwrite(d, 1, n, f) != n)
		fprintf(stderr, "fuzz: cannot write %s\n", path);
	fclose(f);
}

/* One seed from snapshot directory sdir: snapshot.ini, then the other
 * ini files, then the rest, within SEED_MAX. */
static void seed_one(const char *out, const char *sdir, int k)
{
	static uint8_t buf[SEED_MAX];
	struct dirent **ents = NULL;
	size_t len = 0, size;
	char path[4200], name[32];
	uint8_t *d;
	int n = scandir(sdir, &ents, NULL, alphasort);

	snprintf(path, sizeof(path), "%s/snapshot.ini", sdir);
	d = fuzz_read(path, SEED_MAX, &size);
	if (!d || n < 0) {
		free(d);
		for (int i = 0; i < n; i++)
			free(ents[i]);
		free(ents);
		return;
	}
	memcpy(buf, d, size);
	len = size;
	free(d);
	/* Pass 0: ini files whole; pass 1: the others, cut to fit. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			const char *e = ents[i]->d_name;
			size_t el = strlen(e);
			bool ini = el > 4 && !strcmp(e + el - 4, ".ini");
			size_t hdr;

			if ((ents[i]->d_type != DT_REG &&
			     ents[i]->d_type != DT_UNKNOWN) ||
			    !good_name(e, el) || !strcmp(e, "snapshot.ini") ||
			    ini != (pass == 0))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sdir, e);
			hdr = strlen(MARK) + el + 2;
			if (len + hdr >= SEED_MAX)
				continue;
			d = fuzz_read(path, SEED_MAX - len - hdr, &size);
			if (!d)
				continue;
			if (!ini || len + hdr + size <= SEED_MAX) {
				len += (size_t)snprintf((char *)buf + len,
							SEED_MAX - len,
							"\n" MARK "%s\n", e);
				memcpy(buf + len, d, size);
				len += size;
			}
			free(d);
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	snprintf(name, sizeof(name), "seed-snapshot-%d", k);
	fuzz_write_seed(out, name, buf, len, NULL, 0);
}

static void make_seeds(const char *out)
{
	const char *root = getenv("HWT_FUZZ_SNAPSHOTS");
	struct dirent **ents = NULL;
	int n = root ? scandir(root, &ents, NULL, alphasort) : -1, k = 0;

	for (int i = 0; i < n; i++) {
		char sdir[4200];

		snprintf(sdir, sizeof(sdir), "%s/%s", root, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && hwt_snapshot_is(sdir))
			seed_one(out, sdir, k++);
		free(ents[i]);
	}
	free(ents);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char tmpl[] = "/tmp/hwt-fuzz-snapshot-XXXXXX";

	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		make_seeds(getenv("HWT_FUZZ_SEEDS"));
		exit(0);
	}
	if (!mkdtemp(tmpl))
		abort();
	snprintf(dir, sizeof(dir), "%s", tmpl);
	atexit(remove_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *p = next_mark(data, end);

	clear_dir();
	put("snapshot.ini", strlen("snapshot.ini"), data, (size_t)(p - data));
	while (p < end) {
		const uint8_t *name = p + strlen(MARK);
		const uint8_t *nl = memchr(name, '\n', (size_t)(end - name));
		const uint8_t *body = nl ? nl + 1 : end;
		const uint8_t *next = next_mark(body, end);
		/* The newline before a marker belongs to the marker. */
		const uint8_t *stop = next < end && next > body ? next - 1 : next;

		if (good_name((const char *)name, (size_t)((nl ? nl : end) - name)))
			put((const char *)name, (size_t)((nl ? nl : end) - name),
			    body, (size_t)(stop - body));
		p = next;
	}
	fuzz_read_bundle(dir);
	return 0;
}

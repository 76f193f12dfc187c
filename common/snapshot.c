// SPDX-License-Identifier: BSD-2-Clause
/* snapshot.c - read an OpenCSD snapshot directory as a "coresight" bundle.
 *
 * It lives in common/ because it is a bundle reader: hwt_bundle_read hands
 * a directory holding snapshot.ini to it, and everything downstream (the
 * CLI, the image, the history) sees an ordinary struct hwt_bundle. It keeps
 * register values raw, so common/ does not depend on OpenCSD.
 *
 * The ini dialect is small and parsed strictly: "[section]", "key=value",
 * blank lines and ';' / '#' comments. Every other line, an over-long line,
 * too many sections or a missing required key is an error naming the file
 * and the line, because a snapshot is untrusted input and a silently
 * skipped line would decode the trace with the wrong configuration.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "hwt-common.h"
#include "util.h"

struct ini_kv {
	char *key, *val;
	unsigned line;
};

struct ini_sec {
	char *name;
	unsigned line;
	struct ini_kv *kv;
	size_t nkv;
};

struct ini {
	char *path;              /* for messages */
	struct ini_sec *sec;
	size_t nsec;
};

static void ini_free(struct ini *ini)
{
	for (size_t i = 0; i < ini->nsec; i++) {
		for (size_t j = 0; j < ini->sec[i].nkv; j++) {
			free(ini->sec[i].kv[j].key);
			free(ini->sec[i].kv[j].val);
		}
		free(ini->sec[i].kv);
		free(ini->sec[i].name);
	}
	free(ini->sec);
	free(ini->path);
	memset(ini, 0, sizeof(*ini));
}

static char *trim(char *s, char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

static int ini_parse(struct ini *ini, char *text, size_t len,
		     struct hwt_err *err)
{
	unsigned line = 0;
	char *p = text, *end = text + len;

	if (memchr(text, '\0', len))
		return hwt_err_set(err, EINVAL, "%s: contains a NUL byte; an "
				   "ini file is text", ini->path);
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *le = nl ? nl : end, *s, *eq;

		line++;
		if ((size_t)(le - p) > HWT_SNAPSHOT_MAX_LINE)
			return hwt_err_set(err, EINVAL, "%s:%u: line longer than "
					   "%u characters", ini->path, line,
					   HWT_SNAPSHOT_MAX_LINE);
		s = trim(p, le);
		p = nl ? nl + 1 : end;
		if (!*s || *s == ';' || *s == '#')
			continue;
		if (*s == '[') {
			size_t n = strlen(s);
			struct ini_sec *v;

			if (n < 3 || s[n - 1] != ']' || memchr(s + 1, ']', n - 2) ||
			    memchr(s + 1, '[', n - 2))
				return hwt_err_set(err, EINVAL, "%s:%u: malformed "
						   "section header '%s'",
						   ini->path, line, s);
			if (ini->nsec == HWT_SNAPSHOT_MAX_SECTIONS)
				return hwt_err_set(err, EINVAL, "%s:%u: more than "
						   "%u sections", ini->path, line,
						   HWT_SNAPSHOT_MAX_SECTIONS);
			s[n - 1] = '\0';
			v = realloc(ini->sec, (ini->nsec + 1) * sizeof(*v));
			if (!v)
				return hwt_err_set(err, ENOMEM, "out of memory");
			ini->sec = v;
			v[ini->nsec] = (struct ini_sec){ .line = line };
			if (!(v[ini->nsec].name = strdup(trim(s + 1, s + n - 1))))
				return hwt_err_set(err, ENOMEM, "out of memory");
			ini->nsec++;
			continue;
		}
		eq = strchr(s, '=');
		if (!eq || eq == s)
			return hwt_err_set(err, EINVAL, "%s:%u: expected "
					   "'[section]' or 'key=value', got '%s'",
					   ini->path, line, s);
		if (!ini->nsec)
			return hwt_err_set(err, EINVAL, "%s:%u: 'key=value' "
					   "before any [section]", ini->path,
					   line);
		{
			struct ini_sec *sec = &ini->sec[ini->nsec - 1];
			struct ini_kv *kv = realloc(sec->kv, (sec->nkv + 1) *
						    sizeof(*kv));

			if (!kv)
				return hwt_err_set(err, ENOMEM, "out of memory");
			sec->kv = kv;
			*eq = '\0';
			kv[sec->nkv] = (struct ini_kv){
				.key = strdup(trim(s, eq)),
				.val = strdup(trim(eq + 1, eq + 1 + strlen(eq + 1))),
				.line = line,
			};
			sec->nkv++;
			if (!kv[sec->nkv - 1].key || !kv[sec->nkv - 1].val)
				return hwt_err_set(err, ENOMEM, "out of memory");
			if (!kv[sec->nkv - 1].key[0])
				return hwt_err_set(err, EINVAL, "%s:%u: empty key",
						   ini->path, line);
		}
	}
	return 0;
}

/* Path of a snapshot member; it must stay inside the directory. */
static int member_path(const char *dir, const char *from, unsigned line,
		       const char *rel, char **out, struct hwt_err *err)
{
	size_t n = strlen(rel);

	*out = NULL;
	if (!n || rel[0] == '/' || !strcmp(rel, "..") || !strncmp(rel, "../", 3) ||
	    strstr(rel, "/../") || (n >= 3 && !strcmp(rel + n - 3, "/..")) ||
	    n >= PATH_MAX)
		return hwt_err_set(err, EINVAL, "%s:%u: '%s' must be a path "
				   "inside the snapshot directory", from, line,
				   rel);
	if (asprintf(out, "%s/%s", dir, rel) < 0) {
		*out = NULL;
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int ini_load(const char *dir, const char *rel, const char *from,
		    unsigned from_line, struct ini *ini, struct hwt_err *err)
{
	uint8_t *text = NULL;
	size_t len = 0;
	int rc;

	memset(ini, 0, sizeof(*ini));
	if ((rc = member_path(dir, from, from_line, rel, &ini->path, err)))
		return rc;
	rc = hwt_read_file(ini->path, HWT_SNAPSHOT_MAX_INI, &text, &len, err);
	if (rc)
		return rc;
	rc = ini_parse(ini, (char *)text, len, err);
	free(text);
	return rc;
}

static struct ini_sec *ini_section(struct ini *ini, const char *name)
{
	for (size_t i = 0; i < ini->nsec; i++)
		if (!strcasecmp(ini->sec[i].name, name))
			return &ini->sec[i];
	return NULL;
}

/* Register keys come as "NAME", "NAME(0x010)" or "NAME(id:0x10)". */
static bool key_is(const char *key, const char *name)
{
	size_t n = strlen(name);

	return !strncasecmp(key, name, n) && (key[n] == '\0' || key[n] == '(');
}

static struct ini_kv *ini_get(struct ini_sec *sec, const char *key)
{
	for (size_t i = 0; sec && i < sec->nkv; i++)
		if (key_is(sec->kv[i].key, key))
			return &sec->kv[i];
	return NULL;
}

static int need(struct ini *ini, struct ini_sec *sec, const char *secname,
		const char *key, struct ini_kv **out, struct hwt_err *err)
{
	*out = ini_get(sec, key);
	if (*out)
		return 0;
	if (!sec)
		return hwt_err_set(err, EINVAL, "%s: section [%s] is missing",
				   ini->path, secname);
	return hwt_err_set(err, EINVAL, "%s:%u: section [%s] has no '%s' key",
			   ini->path, sec->line, secname, key);
}

static int kv_u64(struct ini *ini, const struct ini_kv *kv, uint64_t max,
		  uint64_t *v, struct hwt_err *err)
{
	if (hwt_parse_u64(kv->val, v) || *v > max)
		return hwt_err_set(err, EINVAL, "%s:%u: '%s' is not a number "
				   "up to 0x%llx", ini->path, kv->line, kv->val,
				   (unsigned long long)max);
	return 0;
}

/* ---- devices ----------------------------------------------------------- */

struct dev {
	struct ini ini;
	const char *name, *class, *type;
};

static const struct { const char *name; enum hwt_cs_reg reg; } reg_names[] = {
	{ "TRCIDR0", HWT_CS_TRCIDR0 }, { "TRCIDR1", HWT_CS_TRCIDR1 },
	{ "TRCIDR2", HWT_CS_TRCIDR2 }, { "TRCIDR8", HWT_CS_TRCIDR8 },
	{ "TRCIDR9", HWT_CS_TRCIDR9 }, { "TRCIDR10", HWT_CS_TRCIDR10 },
	{ "TRCIDR11", HWT_CS_TRCIDR11 }, { "TRCIDR12", HWT_CS_TRCIDR12 },
	{ "TRCIDR13", HWT_CS_TRCIDR13 }, { "TRCCONFIGR", HWT_CS_TRCCONFIGR },
	{ "TRCTRACEIDR", HWT_CS_TRCTRACEIDR }, { "TRCDEVARCH", HWT_CS_TRCDEVARCH },
	{ "ETMCR", HWT_CS_ETMCR }, { "ETMIDR", HWT_CS_ETMIDR },
	{ "ETMCCER", HWT_CS_ETMCCER }, { "ETMTRACEIDR", HWT_CS_ETMTRACEIDR },
};

static enum hwt_cs_protocol protocol_of(const char *type)
{
	if (!strncasecmp(type, "ETM4", 4) || !strncasecmp(type, "ETMv4", 5))
		return HWT_CS_ETMV4;
	if (!strncasecmp(type, "ETM3", 4) || !strncasecmp(type, "ETMv3", 5))
		return HWT_CS_ETMV3;
	if (!strncasecmp(type, "PTM", 3) || !strncasecmp(type, "PFT", 3))
		return HWT_CS_PTM;
	if (!strcasecmp(type, "ETE"))
		return HWT_CS_ETE;
	if (!strncasecmp(type, "STM", 3))
		return HWT_CS_STM;
	if (!strncasecmp(type, "ITM", 3))
		return HWT_CS_ITM;
	return HWT_CS_UNKNOWN;
}

/* Architecture and profile of a core type, as OpenCSD's snapshot reader
 * maps them; unknown names fall back on what the trace protocol implies. */
static void arch_of(const char *core, enum hwt_cs_protocol p,
		    enum hwt_cs_arch *arch, char *profile)
{
	*profile = 'A';
	*arch = p == HWT_CS_ETE ? HWT_CS_ARCH_AA64 :
		p == HWT_CS_ETMV4 ? HWT_CS_ARCH_V8 : HWT_CS_ARCH_V7;
	if (!core)
		return;
	if (!strncasecmp(core, "Cortex-", 7) && strlen(core) >= 9) {
		int n = atoi(core + 8);

		*profile = (char)(core[7] & ~0x20);
		if (*profile == 'A')
			*arch = n >= 32 && n < 100 ? HWT_CS_ARCH_V8 :
				HWT_CS_ARCH_V7;
		else
			*arch = HWT_CS_ARCH_V7;
	} else if (!strcasecmp(core, "ARM-AA64") || !strncasecmp(core, "ARMv8", 5) ||
		   !strncasecmp(core, "ARMAA64", 7)) {
		*arch = !strncasecmp(core, "ARMv8", 5) ? HWT_CS_ARCH_V8 :
			HWT_CS_ARCH_AA64;
	} else if (!strncasecmp(core, "ARMv7", 5)) {
		*arch = HWT_CS_ARCH_V7;
	}
}

static int dev_regs(struct dev *d, struct hwt_bundle_cs_source *src,
		    struct hwt_err *err)
{
	struct ini_sec *regs = ini_section(&d->ini, "regs");
	uint64_t v;
	int rc;

	for (size_t i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++) {
		struct ini_kv *kv = ini_get(regs, reg_names[i].name);

		if (!kv)
			continue;
		if ((rc = kv_u64(&d->ini, kv, UINT32_MAX, &v, err)))
			return rc;
		src->regs[reg_names[i].reg] = (uint32_t)v;
	}
	return 0;
}

/* ---- the snapshot ------------------------------------------------------ */

struct snap {
	const char *dir;
	struct dev *devs;
	size_t ndevs;
	struct ini trace;
	struct hwt_bundle *b;
	struct hwt_err *err;
};

static struct dev *dev_named(struct snap *s, const char *name)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].name && !strcmp(s->devs[i].name, name))
			return &s->devs[i];
	return NULL;
}

static int read_devices(struct snap *s)
{
	struct ini top;
	struct ini_sec *list;
	int rc;

	if ((rc = ini_load(s->dir, "snapshot.ini", s->dir, 0, &top, s->err)))
		goto out;
	list = ini_section(&top, "device_list");
	if (!list || !list->nkv) {
		rc = hwt_err_set(s->err, EINVAL, "%s: no [device_list] with "
				 "devices", top.path);
		goto out;
	}
	if (list->nkv > HWT_SNAPSHOT_MAX_DEVICES) {
		rc = hwt_err_set(s->err, EINVAL, "%s: more than %u devices",
				 top.path, HWT_SNAPSHOT_MAX_DEVICES);
		goto out;
	}
	s->devs = calloc(list->nkv, sizeof(*s->devs));
	if (!s->devs) {
		rc = hwt_err_set(s->err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < list->nkv; i++) {
		struct dev *d = &s->devs[s->ndevs++];
		struct ini_sec *dev;
		struct ini_kv *kv;

		if ((rc = ini_load(s->dir, list->kv[i].val, top.path,
				   list->kv[i].line, &d->ini, s->err)))
			goto out;
		dev = ini_section(&d->ini, "device");
		if ((rc = need(&d->ini, dev, "device", "name", &kv, s->err)))
			goto out;
		d->name = kv->val;
		if ((rc = need(&d->ini, dev, "device", "class", &kv, s->err)))
			goto out;
		d->class = kv->val;
		if ((rc = need(&d->ini, dev, "device", "type", &kv, s->err)))
			goto out;
		d->type = kv->val;
	}
	{
		struct ini_sec *tr = ini_section(&top, "trace");
		struct ini_kv *kv;

		if ((rc = need(&top, tr, "trace", "metadata", &kv, s->err)))
			goto out;
		rc = ini_load(s->dir, kv->val, top.path, kv->line, &s->trace,
			      s->err);
	}
out:
	ini_free(&top);
	return rc;
}

static int add_region(struct snap *s, struct dev *d, struct ini_sec *sec,
		      enum hwt_isa isa)
{
	struct hwt_bundle *b = s->b;
	struct hwt_bundle_region *r;
	struct ini_kv *kv;
	uint64_t v, fsize;
	struct stat st;
	char *path;
	int rc;

	if (b->nregions == HWT_SNAPSHOT_MAX_REGIONS)
		return hwt_err_set(s->err, EINVAL, "%s:%u: more than %u memory "
				   "dumps", d->ini.path, sec->line,
				   HWT_SNAPSHOT_MAX_REGIONS);
	r = realloc(b->regions, (b->nregions + 1) * sizeof(*r));
	if (!r)
		return hwt_err_set(s->err, ENOMEM, "out of memory");
	b->regions = r;
	r = &b->regions[b->nregions];
	memset(r, 0, sizeof(*r));
	r->isa = isa;
	if ((rc = need(&d->ini, sec, sec->name, "file", &kv, s->err)) ||
	    (rc = member_path(s->dir, d->ini.path, kv->line, kv->val, &path,
			      s->err)))
		return rc;
	r->file = strdup(kv->val);
	b->nregions++;
	if (!r->file) {
		free(path);
		return hwt_err_set(s->err, ENOMEM, "out of memory");
	}
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		r->missing = true;
		fsize = 0;
	} else {
		fsize = (uint64_t)st.st_size;
	}
	free(path);
	if ((rc = need(&d->ini, sec, sec->name, "address", &kv, s->err)) ||
	    (rc = kv_u64(&d->ini, kv, UINT64_MAX, &r->address, s->err)))
		return rc;
	if ((kv = ini_get(sec, "offset")) &&
	    (rc = kv_u64(&d->ini, kv, UINT64_MAX, &r->offset, s->err)))
		return rc;
	r->size = fsize > r->offset ? fsize - r->offset : 0;
	if ((kv = ini_get(sec, "length"))) {
		if ((rc = kv_u64(&d->ini, kv, UINT64_MAX, &v, s->err)))
			return rc;
		/* A dump shorter than its length maps what is there. */
		if (v < r->size)
			r->size = v;
	}
	if (r->size && r->address + r->size - 1 < r->address)
		return hwt_err_set(s->err, EINVAL, "%s:%u: memory dump at "
				   "0x%llx wraps around the address space",
				   d->ini.path, sec->line,
				   (unsigned long long)r->address);
	return 0;
}

static int read_regions(struct snap *s)
{
	for (size_t i = 0; i < s->ndevs; i++) {
		struct dev *d = &s->devs[i];
		const char *core = d->type;
		enum hwt_cs_arch arch;
		char prof;

		/* A core's memory reads as its native instruction set; the
		 * trace says where Thumb code runs. */
		arch_of(core, HWT_CS_ETMV4, &arch, &prof);
		for (size_t j = 0; j < d->ini.nsec; j++) {
			struct ini_sec *sec = &d->ini.sec[j];
			int rc;

			if (strncasecmp(sec->name, "dump", 4))
				continue;
			rc = add_region(s, d, sec, arch == HWT_CS_ARCH_V7 ?
					HWT_ISA_A32 : HWT_ISA_A64);
			if (rc)
				return rc;
		}
	}
	return 0;
}

struct buf {
	const char *name, *file;
	bool formatted;
	unsigned line;
};

static int find_buffer(struct snap *s, const char *name, struct buf *out)
{
	struct ini *t = &s->trace;
	struct ini_sec *list = ini_section(t, "trace_buffers");
	struct ini_kv *kv;
	int rc;

	if ((rc = need(t, list, "trace_buffers", "buffers", &kv, s->err)))
		return rc;
	for (size_t i = 0; i < t->nsec; i++) {
		struct ini_sec *sec = &t->sec[i];
		struct ini_kv *n, *f, *fmt;

		if (strncasecmp(sec->name, "buffer", 6) || !(n = ini_get(sec, "name")) ||
		    strcmp(n->val, name))
			continue;
		if ((rc = need(t, sec, sec->name, "file", &f, s->err)) ||
		    (rc = need(t, sec, sec->name, "format", &fmt, s->err)))
			return rc;
		if (strcmp(fmt->val, "coresight") && strcmp(fmt->val, "source_data"))
			return hwt_err_set(s->err, ENOTSUP, "%s:%u: buffer "
					   "format '%s' is not supported "
					   "(coresight, source_data)", t->path,
					   fmt->line, fmt->val);
		*out = (struct buf){ .name = n->val, .file = f->val,
				     .formatted = !strcmp(fmt->val, "coresight"),
				     .line = f->line };
		return 0;
	}
	return hwt_err_set(s->err, EINVAL, "%s: no [bufferN] section named "
			   "'%s'", t->path, name);
}

/* The core a source traces, from [core_trace_sources] core=source. */
static const char *core_type_of(struct snap *s, const char *src)
{
	struct ini_sec *sec = ini_section(&s->trace, "core_trace_sources");

	for (size_t i = 0; sec && i < sec->nkv; i++) {
		struct dev *d;

		if (!strcmp(sec->kv[i].val, src) &&
		    (d = dev_named(s, sec->kv[i].key)))
			return d->type;
	}
	return NULL;
}

/* Why a source of device type `type` (protocol p) is not decoded, as a
 * new string; NULL for a protocol hwtrace decodes, or when out of
 * memory (*oom then). */
static char *skip_reason(enum hwt_cs_protocol p, const char *type, bool *oom)
{
	char *why = NULL;
	int n = 0;

	*oom = false;
	switch (p) {
	case HWT_CS_STM:
		n = asprintf(&why, "%s is a system trace source: software "
			     "messages, no instruction trace", type);
		break;
	case HWT_CS_ITM:
		n = asprintf(&why, "%s is an instrumentation trace source: "
			     "software messages, no instruction trace", type);
		break;
	case HWT_CS_UNKNOWN:
		n = asprintf(&why, "trace source type '%s' is not one hwtrace "
			     "decodes (ETM3.x, ETM4.x, PTM/PFT, ETE)", type);
		break;
	default:
		return NULL;
	}
	if (n < 0) {
		*oom = true;
		return NULL;
	}
	return why;
}

/* The source device kv names (kv->key, its buffer kv->val), appended to
 * *list. A source hwtrace decodes becomes a thread of the bundle and
 * must be sound; any other is kept with the reason it is skipped, and
 * nothing more of it is read. */
static int add_source(struct snap *s, const struct ini_kv *kv,
		      struct hwt_bundle_cs_source **list, size_t *n)
{
	struct hwt_bundle_cs_source *src, *v;
	struct dev *d = dev_named(s, kv->key);
	struct buf buf = { 0 };
	char *path;
	struct stat st;
	const char *core;
	uint32_t id;
	bool oom;
	int rc;

	if (!d)
		return hwt_err_set(s->err, EINVAL, "%s:%u: source '%s' is no "
				   "device of snapshot.ini", s->trace.path,
				   kv->line, kv->key);
	v = realloc(*list, (*n + 1) * sizeof(*v));
	if (!v)
		return hwt_err_set(s->err, ENOMEM, "out of memory");
	*list = v;
	src = &v[(*n)++];
	memset(src, 0, sizeof(*src));
	core = core_type_of(s, d->name);
	src->name = strdup(d->name);
	src->core = core ? strdup(core) : NULL;
	if (!src->name || (core && !src->core))
		return hwt_err_set(s->err, ENOMEM, "out of memory");
	src->protocol = protocol_of(d->type);
	src->skipped = skip_reason(src->protocol, d->type, &oom);
	if (oom)
		return hwt_err_set(s->err, ENOMEM, "out of memory");
	if (src->skipped)
		return 0;
	{
		struct hwt_err *outer = s->err, local = { 0 };

		s->err = &local;
		rc = find_buffer(s, kv->val, &buf);
		s->err = outer;
		/* a buffer this reader cannot take: the source is skipped */
		if (rc == -ENOTSUP && !(src->skipped = strdup(local.msg)))
			return hwt_err_set(s->err, ENOMEM, "out of memory");
		if (rc == -ENOTSUP)
			return 0;
		if (rc)
			return hwt_err_set(s->err, -rc, "%s", local.msg);
	}
	src->formatted = buf.formatted;
	arch_of(core, src->protocol, &src->arch, &src->profile);
	if ((rc = dev_regs(d, src, s->err)))
		return rc;
	id = src->protocol == HWT_CS_ETMV4 || src->protocol == HWT_CS_ETE ?
		src->regs[HWT_CS_TRCTRACEIDR] : src->regs[HWT_CS_ETMTRACEIDR];
	src->trace_id = (uint8_t)(id & 0x7f);
	if (src->trace_id == 0 || src->trace_id >= 0x70)
		return hwt_err_set(s->err, EINVAL, "%s: trace ID 0x%x is not "
				   "a valid CoreSight ID (1 to 0x6f)",
				   d->ini.path, id);
	if ((rc = member_path(s->dir, s->trace.path, buf.line, buf.file, &path,
			      s->err)))
		return rc;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = hwt_err_set(s->err, ENOENT, "%s:%u: trace buffer %s is "
				 "missing or not a file", s->trace.path,
				 buf.line, path);
		free(path);
		return rc;
	}
	free(path);
	/* Threads carry the buffer; the source is found by index. */
	{
		struct hwt_bundle *b = s->b;
		struct hwt_bundle_thread *t = realloc(b->threads,
						      (b->nthreads + 1) * sizeof(*t));

		if (!t)
			return hwt_err_set(s->err, ENOMEM, "out of memory");
		b->threads = t;
		for (size_t i = 0; i < b->nthreads; i++)
			if (t[i].tid == src->trace_id)
				return hwt_err_set(s->err, EINVAL, "%s: trace ID "
						   "0x%x is used by two sources",
						   s->trace.path, src->trace_id);
		t = &t[b->nthreads];
		memset(t, 0, sizeof(*t));
		t->tid = src->trace_id;
		t->trace_size = (uint64_t)st.st_size;
		if (!(t->trace_file = strdup(buf.file)))
			return hwt_err_set(s->err, ENOMEM, "out of memory");
		b->nthreads++;
	}
	return 0;
}

static int read_sources(struct snap *s)
{
	struct ini_sec *sec = ini_section(&s->trace, "source_buffers");
	struct hwt_bundle_cs_source *insn = NULL, *other = NULL;
	size_t ninsn = 0, nother = 0;
	int rc = 0;

	if (!sec)
		return hwt_err_set(s->err, EINVAL, "%s: section "
				   "[source_buffers] is missing",
				   s->trace.path);
	for (size_t i = 0; i < sec->nkv && !rc; i++) {
		size_t before = s->b->nthreads;

		/* Sort as the model wants: instruction sources first. */
		rc = add_source(s, &sec->kv[i], &insn, &ninsn);
		if (!rc && s->b->nthreads == before && ninsn) {
			struct hwt_bundle_cs_source *v =
				realloc(other, (nother + 1) * sizeof(*v));

			if (!v) {
				rc = hwt_err_set(s->err, ENOMEM, "out of memory");
				break;
			}
			other = v;
			other[nother++] = insn[--ninsn];
		}
	}
	if (!rc) {
		struct hwt_bundle_cs_source *all =
			realloc(insn, (ninsn + nother + 1) * sizeof(*all));

		if (all) {
			insn = all;
			if (nother)
				memcpy(insn + ninsn, other, nother * sizeof(*other));
			ninsn += nother;
			nother = 0;
		} else {
			rc = hwt_err_set(s->err, ENOMEM, "out of memory");
		}
	}
	s->b->sources = insn;
	s->b->nsources = ninsn;
	for (size_t i = 0; i < nother; i++) {
		free(other[i].name);
		free(other[i].core);
		free(other[i].skipped);
	}
	free(other);
	return rc;
}

bool hwt_snapshot_is(const char *dir)
{
	char *p;
	struct stat st;
	bool yes;

	if (asprintf(&p, "%s/snapshot.ini", dir) < 0)
		return false;
	yes = stat(p, &st) == 0 && S_ISREG(st.st_mode);
	free(p);
	return yes;
}

int hwt_snapshot_read(const char *dir, struct hwt_bundle **out,
		      struct hwt_err *err)
{
	struct snap s = { .dir = dir, .err = err };
	int rc;

	*out = NULL;
	s.b = calloc(1, sizeof(*s.b));
	if (!s.b || !(s.b->dir = strdup(dir)) ||
	    !(s.b->type = strdup(HWT_BUNDLE_TYPE_CORESIGHT))) {
		hwt_bundle_free(s.b);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	rc = read_devices(&s);
	if (!rc)
		rc = read_regions(&s);
	if (!rc)
		rc = read_sources(&s);
	for (size_t i = 0; i < s.ndevs; i++)
		ini_free(&s.devs[i].ini);
	free(s.devs);
	ini_free(&s.trace);
	if (rc) {
		hwt_err_prefix(err, "reading snapshot %s: ", dir);
		hwt_bundle_free(s.b);
		return rc;
	}
	*out = s.b;
	return 0;
}


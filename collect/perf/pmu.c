// SPDX-License-Identifier: BSD-2-Clause
/* pmu.c - what a perf PMU offers, from sysfs: its type number, the bit
 * positions of its config fields (format/) and its capabilities (caps/).
 * Bit positions differ between PMUs and kernels, so they are always read,
 * never assumed. The root directory is a parameter so tests can use a
 * fake tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* sysfs attribute files are one short line; anything longer is not one. */
#define ATTR_MAX 256

/* Read a small sysfs file into buf; -ENOENT when it does not exist. */
static int read_attr(const char *path, char *buf, size_t size,
		     struct hwt_err *err)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return hwt_err_set(err, errno, "cannot read %s: %s", path,
				   strerror(errno));
	n = fread(buf, 1, size - 1, f);
	if (ferror(f)) {
		fclose(f);
		return hwt_err_set(err, EIO, "cannot read %s", path);
	}
	fclose(f);
	buf[n] = '\0';
	if (n == size - 1)
		return hwt_err_set(err, EFBIG, "%s is longer than %zu bytes; "
				   "it is not a PMU attribute", path, size - 1);
	return 0;
}

static bool parse_uint(const char **p, unsigned *v)
{
	char *end;
	unsigned long x;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	x = strtoul(*p, &end, 10);
	if (errno || x > 63)
		return false;
	*v = (unsigned)x;
	*p = end;
	return true;
}

int hwt_pmu_format_parse(const char *text, struct hwt_pmu_field *f,
			 struct hwt_err *err)
{
	const char *p = text;

	memset(f, 0, sizeof(*f));
	if (strncmp(p, "config", 6) != 0)
		goto bad;
	p += 6;
	if (*p == '1' || *p == '2')
		f->word = *p++ - '0';
	if (*p++ != ':')
		goto bad;
	for (;;) {
		unsigned lo, hi;
		uint64_t bits;

		if (!parse_uint(&p, &lo))
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (!parse_uint(&p, &hi) || hi < lo)
				goto bad;
		}
		bits = (hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1) &
		       ~((1ull << lo) - 1);
		if (f->mask & bits)
			goto bad;   /* overlapping ranges */
		f->mask |= bits;
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '\n')
		p++;
	if (*p == '\0')
		return 0;
bad:
	return hwt_err_set(err, EBADMSG,
			   "PMU format \"%.64s\" is not of the form "
			   "config[12]:LO[-HI][,...] with bits 0 to 63",
			   text);
}

int hwt_pmu_open(const char *root, const char *name, const char *what,
		 struct hwt_pmu *pmu, struct hwt_err *err)
{
	char path[600], buf[ATTR_MAX], *end;
	unsigned long type;
	int rc;

	if (!root)
		root = HWT_PMU_SYSFS_ROOT;
	memset(pmu, 0, sizeof(*pmu));
	if ((size_t)snprintf(pmu->name, sizeof(pmu->name), "%s", name) >=
	    sizeof(pmu->name) ||
	    (size_t)snprintf(pmu->dir, sizeof(pmu->dir), "%s/%s", root, name) >=
	    sizeof(pmu->dir))
		return hwt_err_set(err, ENAMETOOLONG, "PMU path %s/%s is too "
				   "long", root, name);
	snprintf(path, sizeof(path), "%s/type", pmu->dir);
	rc = read_attr(path, buf, sizeof(buf), NULL);
	if (rc == -ENOENT)
		return hwt_err_set(err, ENODEV, "no %s on this CPU (no %s PMU "
				   "in %s)", what, name, root);
	if (rc < 0)
		return hwt_err_set(err, -rc, "%s PMU: cannot read %s: %s",
				   name, path, strerror(-rc));
	errno = 0;
	type = strtoul(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || type > UINT32_MAX)
		return hwt_err_set(err, EBADMSG, "%s PMU: %s holds \"%.32s\", "
				   "not a perf type number", name, path, buf);
	pmu->type = (uint32_t)type;
	return 0;
}

int hwt_pmu_format(const struct hwt_pmu *pmu, const char *field,
		   struct hwt_pmu_field *f, struct hwt_err *err)
{
	char path[700], buf[ATTR_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/format/%s", pmu->dir, field);
	rc = read_attr(path, buf, sizeof(buf), NULL);
	if (rc == -ENOENT)
		return hwt_err_set(err, ENOENT, "the %s PMU has no '%s' field "
				   "(no %s); this kernel or cpu cannot do it",
				   pmu->name, field, path);
	if (rc < 0)
		return hwt_err_set(err, -rc, "cannot read %s", path);
	if ((rc = hwt_pmu_format_parse(buf, f, err)) < 0)
		return hwt_err_prefix(err, "%s: ", path);
	return 0;
}

int hwt_pmu_cap(const struct hwt_pmu *pmu, const char *cap, uint64_t *value,
		struct hwt_err *err)
{
	char path[700], buf[ATTR_MAX], *end;
	int rc;

	snprintf(path, sizeof(path), "%s/caps/%s", pmu->dir, cap);
	rc = read_attr(path, buf, sizeof(buf), NULL);
	if (rc == -ENOENT)
		return hwt_err_set(err, ENOENT, "the %s PMU does not report "
				   "capability '%s' (no %s)", pmu->name, cap,
				   path);
	if (rc < 0)
		return hwt_err_set(err, -rc, "cannot read %s", path);
	errno = 0;
	*value = strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return hwt_err_set(err, EBADMSG, "%s holds \"%.32s\", not a "
				   "number", path, buf);
	return 0;
}

int hwt_pmu_field_set(const struct hwt_pmu_field *f, const char *field,
		      uint64_t value, uint64_t config[3], struct hwt_err *err)
{
	uint64_t v = value, bits = 0;

	if (f->word < 0 || f->word > 2 || f->mask == 0)
		return hwt_err_set(err, EINVAL, "PMU field '%s' has no bits",
				   field);
	/* The value's bits go to the field's bits in ascending order. */
	for (unsigned i = 0; i < 64; i++) {
		if (!(f->mask & (1ull << i)))
			continue;
		if (v & 1)
			bits |= 1ull << i;
		v >>= 1;
	}
	if (v)
		return hwt_err_set(err, ERANGE, "value %llu does not fit PMU "
				   "field '%s' (%d bits)",
				   (unsigned long long)value, field,
				   __builtin_popcountll(f->mask));
	config[f->word] = (config[f->word] & ~f->mask) | bits;
	return 0;
}

int hwt_pmu_config(const struct hwt_pmu *pmu, const char *field,
		   uint64_t value, uint64_t config[3], struct hwt_err *err)
{
	struct hwt_pmu_field f;
	int rc;

	if ((rc = hwt_pmu_format(pmu, field, &f, err)) < 0)
		return rc;
	return hwt_pmu_field_set(&f, field, value, config, err);
}

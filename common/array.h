/* SPDX-License-Identifier: BSD-2-Clause */
/* array.h - growing arrays and byte buffers, the one way the libraries
 * grow memory. Internal to the libraries (no public header includes it).
 *
 *     if (HWT_ARRAY_RESERVE(v, cap, n + 1, 64))
 *             return -ENOMEM;
 *     v[n++] = x;
 */
#ifndef HWT_ARRAY_H
#define HWT_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Make room for want elements of size bytes in the array *arrp (any
 * T **), whose capacity is *cap: doubling from min, realloc'ed, *cap
 * updated. 0, or -ENOMEM (also when the size would overflow) with the
 * array and *cap as they were. The pointer is read and written with
 * memcpy: T * and void * are never accessed through each other. */
static inline int hwt_array_reserve(void *arrp, size_t *cap, size_t want,
				    size_t size, size_t min)
{
	size_t c = *cap ? *cap : min;
	void *old, *p;

	if (want <= *cap)
		return 0;
	while (c < want) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / size)
		return -ENOMEM;
	memcpy(&old, arrp, sizeof(old));
	p = realloc(old, c * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = c;
	return 0;
}

#define HWT_ARRAY_RESERVE(arr, cap, want, min)                            \
	hwt_array_reserve(&(arr), &(cap), (want), sizeof(*(arr)), (min))

/* Ask the kernel to back the 2 MiB pages inside a large buffer just
 * allocated, and not yet written, with huge pages: a file of a gigabyte
 * decoded into it then takes a fault per 2 MiB, not per 4 KiB (half the
 * time of reading a long data history on a virtual machine). malloc's
 * own buffer, freed with free(); nothing happens if the kernel says
 * no. */
static inline void hwt_advise_huge(void *p, size_t len)
{
	uintptr_t step = (uintptr_t)2 << 20;
	uintptr_t lo = ((uintptr_t)p + step - 1) & ~(step - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(step - 1);

	if (p && hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* size bytes (rounded up to 2 MiB) on 2 MiB boundaries, asked to be
 * huge pages: for buffers of megabytes that are filled anew again and
 * again (decoded frames, table blocks). Freed with free(); NULL when
 * memory ran out. */
static inline void *hwt_huge_alloc(size_t size)
{
	size_t step = (size_t)2 << 20;
	void *p;

	if (size > SIZE_MAX - step)
		return NULL;
	size = (size + step - 1) / step * step;
	p = aligned_alloc(step, size);
	hwt_advise_huge(p, size);
	return p;
}

/* The same for arrays that grow to many megabytes in one go (a
 * recording's whole history taken apart): mapped memory the kernel may
 * back with huge pages (a fault and a TLB entry per 2 MiB, not per 4
 * KiB), grown in place where it can (mremap, never copied by hand).
 * Freed with hwt_bulk_free, never free(). */
#define HWT_BULK_STEP ((size_t)2 << 20)

static inline int hwt_bulk_reserve(void *arrp, size_t *cap, size_t want,
				   size_t size)
{
	size_t bytes = *cap * size, need;
	void *old, *p;

	if (want <= *cap)
		return 0;
	if (want > SIZE_MAX / 2 / size)
		return -ENOMEM;
	need = want * size;
	if (need < 2 * bytes)
		need = 2 * bytes;
	need = (need + HWT_BULK_STEP - 1) / HWT_BULK_STEP * HWT_BULK_STEP;
	memcpy(&old, arrp, sizeof(old));
	p = old ? mremap(old, bytes, need, MREMAP_MAYMOVE)
		: mmap(NULL, need, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	/* Only a hint: without huge pages it is the same memory. */
	madvise(p, need, MADV_HUGEPAGE);
	memcpy(arrp, &p, sizeof(p));
	*cap = need / size;
	return 0;
}

#define HWT_BULK_RESERVE(arr, cap, want)                                   \
	hwt_bulk_reserve(&(arr), &(cap), (want), sizeof(*(arr)))

static inline void hwt_bulk_free(void *p, size_t cap, size_t size)
{
	if (p)
		munmap(p, cap * size);
}

/* qsort's and bsearch's order of uint64_t values. */
static inline int hwt_cmp_u64(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

/* A byte buffer that grows. */
struct hwt_bytes {
	uint8_t *p;
	size_t n, cap;
};

/* Append len bytes (zeros when data is NULL); 0 or -ENOMEM. */
static inline int hwt_bytes_put(struct hwt_bytes *b, const void *data,
				size_t len)
{
	if (len > SIZE_MAX - b->n ||
	    HWT_ARRAY_RESERVE(b->p, b->cap, b->n + len, 4096))
		return -ENOMEM;
	if (data)
		memcpy(b->p + b->n, data, len);
	else
		memset(b->p + b->n, 0, len);
	b->n += len;
	return 0;
}

static inline void hwt_bytes_free(struct hwt_bytes *b)
{
	free(b->p);
	*b = (struct hwt_bytes){ 0 };
}

#endif

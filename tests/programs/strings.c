/* strings.c - libc's string and memory functions on inputs of many
 * lengths and alignments, so that the vector loops and their tails run.
 *
 * glibc picks an implementation of each at start-up from the CPU (SSE2,
 * AVX2 or EVEX/AVX-512); GLIBC_TUNABLES=glibc.cpu.hwcaps=... picks
 * another on one machine. Built with -z now so that no lazy binding
 * runs from main, and with -fno-builtin so that every call is a call.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wchar.h>

static char src[512], dst[512];
static wchar_t wide[80];

/* Sizes either side of 16, 32 and 64 bytes, and one several vectors long. */
static const size_t lens[] = { 0, 1, 7, 15, 16, 31, 33, 63, 64, 65, 200 };

int main(void)
{
	unsigned long acc = 0;
	long page = sysconf(_SC_PAGESIZE);
	char *two, *edge;

	for (size_t i = 0; i < sizeof(src) - 1; i++)
		src[i] = (char)('a' + i % 23);
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]) - 1; i++)
		wide[i] = L'A' + (wchar_t)(i % 26);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t n = lens[k], off = k % 5;
		char saved = src[off + n];

		src[off + n] = '\0';
		acc += strlen(src + off);
		acc += strnlen(src + off, n / 2 + 1);
		acc += (unsigned long)(strchr(src + off, 'q') != NULL);
		acc += (unsigned long)(strrchr(src + off, 'c') != NULL);
		acc += (unsigned long)(memchr(src + off, 'w', n) != NULL);
		acc += (unsigned long)(memrchr(src + off, 'b', n) != NULL);
		acc += (unsigned long)(rawmemchr(src + off, '\0') != NULL);
		strcpy(dst + (k % 3), src + off);
		acc += (unsigned long)strcmp(dst + (k % 3), src + off);
		acc += (unsigned long)(strncmp(dst + (k % 3), src + off, n) + 2);
		acc += (unsigned long)(memcmp(dst + (k % 3), src + off, n) + 2);
		acc += (unsigned long)(stpcpy(dst, src + off) - dst);
		strcat(dst, "xyz");
		memcpy(dst + 1, src + off, n);
		memmove(dst + 3, dst + 1, n);
		memset(dst + off, 'm', n);
		src[off + n] = saved;
	}
	acc += wcslen(wide);
	/* The last bytes before an unmapped page: the page-cross paths. */
	two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two != MAP_FAILED && !munmap(two + page, page)) {
		edge = two + page - 24;
		memset(two, 'z', page);
		edge[23] = '\0';
		acc += strlen(edge);
		acc += (unsigned long)(strchr(edge, 'y') == NULL);
		acc += (unsigned long)strcmp(edge, edge);
	}
	printf("%lu\n", acc);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause

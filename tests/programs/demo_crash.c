/* demo_crash.c - the `make demo` example: a tiny config parser that
 * crashes two calls deep.  main -> parse_config -> lookup, and lookup
 * walks off the end of the list (NULL dereference) when a key is missing.
 * Built with -O0 -g so every function and variable is easy to see. */
#include <stdio.h>
#include <string.h>

struct setting {
	const char *key;
	int value;
	struct setting *next;
};

static struct setting s_mode = { "mode", 2, NULL };
static struct setting s_size = { "size", 64, &s_mode };
static struct setting s_name = { "name", 7, &s_size };

/* Bug: no check for the end of the list. */
static int lookup(struct setting *list, const char *key)
{
	struct setting *s = list;
	while (strcmp(s->key, key) != 0)
		s = s->next;
	return s->value;
}

static int parse_config(const char *const *keys, int count)
{
	int total = 0;
	for (int i = 0; i < count; i++)
		total += lookup(&s_name, keys[i]);
	return total;
}

int main(void)
{
	static const char *const keys[] = { "name", "size", "verbose" };
	int total = parse_config(keys, 3);
	printf("config total %d\n", total);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause

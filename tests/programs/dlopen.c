/* dlopen.c - dlopen()s libhwtdemo.so (found through this executable's
 * RUNPATH $ORIGIN), calls hwt_demo_sum through dlsym, then dlclose()s it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argv;
	void *h = dlopen("libhwtdemo.so", RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		printf("dlopen: failed\n");
		return 2;
	}
	int (*sum)(int) = (int (*)(int))dlsym(h, "hwt_demo_sum");
	if (!sum) {
		printf("dlopen: no symbol\n");
		dlclose(h);
		return 3;
	}
	int r = sum(3 + argc);
	dlclose(h);
	printf("dlopen: sum=%d\n", r);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause

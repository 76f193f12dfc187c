// SPDX-License-Identifier: BSD-2-Clause
/* cpuinfo.c - identity of the cpu a trace was recorded on. Decoders of
 * hardware formats key errata and packet details off it. */
#include <string.h>

#include "hwt-collect.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

struct hwt_cpu_info hwt_collect_cpu_info(void)
{
	struct hwt_cpu_info info;
	unsigned int eax, ebx, ecx, edx, base_family, base_model;

	memset(&info, 0, sizeof(info));
	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return info;
	/* The vendor string is spread over ebx, edx, ecx in that order. */
	memcpy(info.vendor, &ebx, 4);
	memcpy(info.vendor + 4, &edx, 4);
	memcpy(info.vendor + 8, &ecx, 4);
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return info;
	base_family = (eax >> 8) & 0xf;
	base_model = (eax >> 4) & 0xf;
	info.stepping = (int)(eax & 0xf);
	info.family = (int)base_family;
	info.model = (int)base_model;
	/* Extended fields count only for these base families (Intel SDM
	 * vol. 2 CPUID leaf 1; AMD uses the same rule for family 0xf). */
	if (base_family == 0xf)
		info.family += (int)((eax >> 20) & 0xff);
	if (base_family == 0x6 || base_family == 0xf)
		info.model += (int)(((eax >> 16) & 0xf) << 4);
	return info;
}
#else
struct hwt_cpu_info hwt_collect_cpu_info(void)
{
	struct hwt_cpu_info info;

	memset(&info, 0, sizeof(info));
	return info;
}
#endif

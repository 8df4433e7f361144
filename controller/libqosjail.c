// SPDX-License-Identifier: LGPL-2.1-or-later
#include "qosjail.h"

__attribute__((visibility("default"))) const char *qj_version(void)
{
	return QJ_VERSION;
}

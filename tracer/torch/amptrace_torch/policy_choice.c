/* Which autocast policy table the bridge judges torch's ops by.
 *
 * The right table is the running torch version's (1.13 lists differ from
 * the newest: conv_transpose, per-thread cache, ...).  libamp has only the
 * newest table so far; when per-version tables land, this file is the one
 * place to switch (pick the table from `torch_version`). */
#include "events.h"

#include "amp_internal.h"

#include <stdio.h>

const struct amp_policy_row *events_policy_lookup(enum amp_device_type device,
						  const char *op,
						  const char *overload)
{
	return amp_policy_lookup(device, op, overload);
}

const char *events_policy_table(const char *torch_version)
{
	static char text[128];

	snprintf(text, sizeof text, "newest, none for torch %s yet",
		 torch_version);
	return text;
}

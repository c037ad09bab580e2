/* Which autocast policy table the bridge judges torch's ops by: the
 * running torch version's (lib/amp_policy.h picks the nearest table at or
 * below the release, newest for releases newer than every table).  The
 * Python layer names the version once, before any op is recorded. */
#include "events.h"

#include "amp_policy.h"

#include <stdio.h>

static enum amp_torch_version table_version = AMP_TORCH_NEWEST;

const struct amp_policy_row *events_policy_lookup(enum amp_device_type device,
						  const char *op,
						  const char *overload)
{
	return amp_policy_lookup(table_version, device, op, overload);
}

enum amp_torch_version events_policy_version(void)
{
	return table_version;
}

const char *events_policy_table(const char *torch_version)
{
	static char text[160];
	bool exact = false;
	enum amp_torch_version version;

	if (amp_torch_version_from_string(torch_version, &version, &exact) !=
	    AMP_OK) {
		/* Older than every table, or not a version: the newest
		 * lists, and the trace says so. */
		table_version = AMP_TORCH_NEWEST;
		snprintf(text, sizeof text, "newest, none for torch %s",
			 torch_version);
		return text;
	}
	table_version = version;
	const char *name = amp_torch_table(version)->name;
	if (exact)
		snprintf(text, sizeof text, "%s", name);
	else
		snprintf(text, sizeof text, "%s, none for torch %s", name,
			 torch_version);
	return text;
}

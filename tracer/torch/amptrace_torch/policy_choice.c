/* Which autocast policy table the bridge judges torch's ops by: the
 * running torch version's (lib/amp_policy.h picks the nearest table at or
 * below the release, newest for releases newer than every table), and the
 * version's cast-cache rule.  The Python layer names the version once,
 * before any op is recorded. */
#include "events.h"

#include "amp_policy.h"

#include <stdio.h>

static enum amp_torch_version table_version = AMP_TORCH_NEWEST;
static bool cache_keeps_grad = true;

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

bool events_cache_keeps_grad(void)
{
	return cache_keeps_grad;
}

/* torch 2.11 (pytorch/pytorch#165068, for issue #158232; merged on main
 * the day release/2.10 was cut) makes a cast it is about to cache with
 * grad mode on, so a cast cached under no_grad carries its grad_fn when it
 * is reused with grad on; before, it did not (pytorch#112583).  Versions
 * that do not parse are taken as newest, as the table is. */
static bool keeps_grad_from(const char *torch_version)
{
	int major, minor;

	if (sscanf(torch_version, "%d.%d", &major, &minor) != 2)
		return true;
	return major > 2 || (major == 2 && minor >= 11);
}

const char *events_policy_table(const char *torch_version)
{
	static char text[160];
	bool exact = false;
	enum amp_torch_version version;

	cache_keeps_grad = keeps_grad_from(torch_version);

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

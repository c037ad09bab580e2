/* Value-dependent diagnostics (fp16-overflow, cast-underflow). */
#include "amp_internal.h"

atomic_bool amp_value_checks_on;

void amp_set_value_checks(bool enabled)
{
	atomic_store(&amp_value_checks_on, enabled);
}

bool amp_value_checks_enabled(void)
{
	return atomic_load(&amp_value_checks_on);
}

void amp_diag_check_outputs(const struct amp_call *call)
{
	(void)call;
}

void amp_diag_check_cast(const struct amp_call *call,
			 const struct amp_tensor *source,
			 const struct amp_tensor *cast)
{
	(void)call;
	(void)source;
	(void)cast;
}

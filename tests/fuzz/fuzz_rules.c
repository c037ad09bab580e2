/* A rules file through the rules parser and amptrace check against a
 * real trace (every rule kind evaluated), with a JUnit report (to
 * /dev/null).  The input is parsed in memory; the trace and its analysis
 * are made once. */
#include "fuzz_common.h"

#include "analyze.h"
#include "commands.h"
#include "rules.h"

static struct analysis *good_analysis(void)
{
	static struct analysis a;
	static bool done;

	if (!done && analysis_run(fuzz_good_trace(), &a) != 0)
		abort();
	done = true;
	return &a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	struct rules rules;
	struct trace_error err;

	if (rules_parse("fuzz.rules", text, size, &rules, &err) == 0) {
		check_rules(fuzz_good_trace(), good_analysis(), &rules,
			    "/dev/null");
		rules_free(&rules);
	}
	free(text);
	return 0;
}

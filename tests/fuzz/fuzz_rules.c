/* A rules file through the rules parser and amptrace check against a
 * real trace (every rule kind evaluated), with a JUnit report. */
#include "fuzz_common.h"

#include "commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char rules[PATH_MAX], junit[PATH_MAX];

	fuzz_write(fuzz_path(rules, sizeof rules, "fuzz.rules"), data, size);
	fuzz_path(junit, sizeof junit, "junit.xml");
	char *argv[] = { "check", FUZZ_GOOD_TRACE, rules, "--junit", junit,
			 NULL };
	amptrace_check(5, argv);
	return 0;
}

/* Two traces through amptrace merge.  The input is split at the first
 * line "--8<--" (FUZZ_SPLIT); without one, the input is merged with a
 * real trace. */
#include "fuzz_common.h"

#include "commands.h"


#define FUZZ_SPLIT "\n--8<--\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char first[PATH_MAX], second[PATH_MAX], out[PATH_MAX];
	const uint8_t *cut = memmem(data, size, FUZZ_SPLIT, strlen(FUZZ_SPLIT));

	fuzz_path(first, sizeof first, "rank0.json");
	fuzz_path(second, sizeof second, "rank1.json");
	fuzz_path(out, sizeof out, "all.json");
	if (cut) {
		size_t head = (size_t)(cut - data);
		fuzz_write(first, data, head);
		fuzz_write(second, cut + strlen(FUZZ_SPLIT),
			   size - head - strlen(FUZZ_SPLIT));
	} else {
		fuzz_write(first, data, size);
		snprintf(second, sizeof second, "%s", FUZZ_GOOD_TRACE);
	}
	char *argv[] = { "merge", first, second, "-o", out, NULL };
	amptrace_merge(5, argv);
	return 0;
}

/* Two traces through amptrace merge, in memory, the merged trace to
 * /dev/null.  The input is split at the first line "--8<--" (FUZZ_SPLIT);
 * without one, the input is merged with a real trace. */
#include "fuzz_common.h"

#include "commands.h"


#define FUZZ_SPLIT "\n--8<--\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[2] = { "rank0.json", "rank1.json" };
	const char *texts[2] = { (const char *)data, NULL };
	size_t lens[2] = { size, 0 };
	const uint8_t *cut = memmem(data, size, FUZZ_SPLIT, strlen(FUZZ_SPLIT));

	if (cut) {
		lens[0] = (size_t)(cut - data);
		texts[1] = (const char *)cut + strlen(FUZZ_SPLIT);
		lens[1] = size - lens[0] - strlen(FUZZ_SPLIT);
	} else {
		texts[1] = fuzz_good_text(&lens[1]);
		paths[1] = FUZZ_GOOD_TRACE;
	}
	merge_texts(2, paths, texts, lens, "-");
	return 0;
}

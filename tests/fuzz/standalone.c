/* A main() for the harnesses outside libFuzzer (gcc builds): runs each
 * file named on the command line through LLVMFuzzerTestOneInput once, so
 * `./run test` replays the regression inputs through the same code. */
#include "fuzz_common.h"

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 2;
		}
		uint8_t *data = NULL;
		size_t size = 0, cap = 0, got;
		do {
			if (size == cap) {
				cap = cap ? cap * 2 : 65536;
				data = realloc(data, cap);
				if (!data)
					abort();
			}
			got = fread(data + size, 1, cap - size, f);
			size += got;
		} while (got);
		fclose(f);
		LLVMFuzzerTestOneInput(data, size);
		free(data);
	}
	fprintf(stderr, "replayed %d input%s\n", argc - 1, argc == 2 ? "" : "s");
	return 0;
}

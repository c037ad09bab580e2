/* Shared by the libFuzzer harnesses (tests/fuzz/README.md): each input
 * goes into a file of a private scratch directory, and the harness calls
 * the same entry points the commands do (amptrace summary/check/diff/
 * merge, ampview, amptrace run's converter).  Standard output goes to
 * /dev/null: the commands print their tables there. */
#ifndef AMPTRACE_FUZZ_COMMON_H
#define AMPTRACE_FUZZ_COMMON_H

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* LLVMFuzzerInitialize is the same for every harness (fuzz_common.c:
 * fuzz_setup()); each harness defines LLVMFuzzerTestOneInput. */
/* LLVMFuzzerInitialize is the same for every harness (fuzz_common.c:
 * fuzz_setup()); each harness defines LLVMFuzzerTestOneInput. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_dir/name (the process's scratch directory), the path in buf. */
const char *fuzz_path(char *buf, size_t size, const char *name);
/* Removes path and everything below it. */
void fuzz_remove_tree(const char *path);
/* Writes data to path; aborts on failure. */
void fuzz_write(const char *path, const uint8_t *data, size_t size);

#endif /* AMPTRACE_FUZZ_COMMON_H */

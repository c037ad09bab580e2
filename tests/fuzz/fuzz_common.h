/* Shared by the libFuzzer harnesses (tests/fuzz/README.md): each input
 * goes through the same code the commands run (amptrace summary/check/
 * diff/merge, ampview, amptrace run's converter), in memory: no process
 * and no file per input (the raw harness's thread file excepted: the
 * converter maps files, so it gets one in memory, on tmpfs).  The real
 * trace the inputs are compared with is loaded once.  What the commands
 * print goes nowhere. */
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

struct trace;

/* LLVMFuzzerInitialize is the same for every harness (fuzz_common.c:
 * fuzz_setup()); each harness defines LLVMFuzzerTestOneInput. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_dir/name (the process's scratch directory, on tmpfs where there
 * is one), the path in buf. */
const char *fuzz_path(char *buf, size_t size, const char *name);
/* Removes path and everything below it. */
void fuzz_remove_tree(const char *path);
/* Writes data to path; aborts on failure. */
void fuzz_write(const char *path, const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (the readers' contract); free()
 * it. */
char *fuzz_text(const uint8_t *data, size_t size);
/* FUZZ_GOOD_TRACE, read once: its text, and loaded (never changed by
 * the commands that read it). */
const char *fuzz_good_text(size_t *len);
const struct trace *fuzz_good_trace(void);

#endif /* AMPTRACE_FUZZ_COMMON_H */

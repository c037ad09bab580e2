/* Where amptrace finds what it runs with: the recorder it preloads into
 * libamp programs and the PyTorch bridge's injector (data_dir.c). */
#ifndef AMPTRACE_DATA_DIR_H
#define AMPTRACE_DATA_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Writes into buf the first directory that holds `file`, of:
 *   EXE/build_subdir                  the build tree (EXE: the directory
 *                                     of the running amptrace)
 *   EXE/DATA_RELDIR/install_subdir    installed by meson (bin/ ->
 *                                     lib/amptrace) or pip (bin/ ->
 *                                     site-packages/amptrace_torch/_run)
 *   INSTALL_DIR/install_subdir        meson install's absolute directory
 * DATA_RELDIR and INSTALL_DIR are the build's (tracer/meson.build).
 * false when none holds it (buf then names the last place tried). */
bool data_dir_find(const char *build_subdir, const char *install_subdir,
		   const char *file, char *buf, size_t size);

#endif /* AMPTRACE_DATA_DIR_H */

/* Removing a test's or a benchmark's directory tree: depth first, links
 * not followed.  An entry already gone counts as removed: a killed
 * amptrace's guard may be removing its raw files at the same time. */
#ifndef AMP_TEST_DIRS_H
#define AMP_TEST_DIRS_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int remove_tree_entry(const char *path, const struct stat *st,
			     int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* 0 when the tree is gone. */
static inline int remove_tree(const char *path)
{
	return nftw(path, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif

/* `amptrace run` on a program with ranks (torchrun, mpirun, accelerate
 * launch: processes with RANK set): each rank's events go to a file of
 * its own (trace.rankN.json) while the program runs, and the -o file is
 * their merge once it has ended, so that `amptrace summary trace.json`
 * answers for the whole job.  The merge is `amptrace merge` itself, run
 * as a child: one implementation, and its messages as the user would see
 * them. */
#include "run_ranks.h"

#include "shell_word.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The order of the ranks, for the arguments and the note. */
static void sort_by_rank(char **paths, int *ranks, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
			int r = ranks[j];
			char *p = paths[j];
			ranks[j] = ranks[j - 1];
			paths[j] = paths[j - 1];
			ranks[j - 1] = r;
			paths[j - 1] = p;
		}
}

static int run_merge(const char *out, char **paths, size_t n)
{
	char **argv = calloc(n + 5, sizeof *argv);

	if (!argv)
		return 1;
	argv[0] = "amptrace";
	argv[1] = "merge";
	for (size_t i = 0; i < n; i++)
		argv[2 + i] = paths[i];
	argv[2 + n] = "-o";
	argv[3 + n] = (char *)out;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		fprintf(stderr, "amptrace run: cannot run amptrace merge: %s\n",
			strerror(errno));
		_exit(127);
	}
	free(argv);
	if (pid < 0) {
		fprintf(stderr, "amptrace run: fork: %s\n", strerror(errno));
		return 1;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void run_ranks_say_apart(const char *out, char *const *paths,
			 const int *ranks, size_t n)
{
	char **sorted_paths = malloc(n * sizeof *sorted_paths);
	int *sorted_ranks = malloc(n * sizeof *sorted_ranks);

	if (sorted_paths && sorted_ranks) {
		memcpy(sorted_paths, paths, n * sizeof *sorted_paths);
		memcpy(sorted_ranks, ranks, n * sizeof *sorted_ranks);
		sort_by_rank(sorted_paths, sorted_ranks, n);
		fprintf(stderr, "amptrace run: %s holds the processes without a "
			"rank; the ranks' traces stay apart (amptrace merge",
			out);
		for (size_t i = 0; i < n; i++) {
			char word[2 * PATH_MAX];
			shell_word(word, sizeof word, sorted_paths[i]);
			fprintf(stderr, " %s", word);
		}
		fputs(" -o ranks.json merges them)\n", stderr);
	}
	free(sorted_paths);
	free(sorted_ranks);
}

int run_ranks_merge(const char *out, char *const *paths, const int *ranks,
		    size_t n, bool quiet)
{
	char **sorted_paths = malloc(n * sizeof *sorted_paths);
	int *sorted_ranks = malloc(n * sizeof *sorted_ranks);
	int status = 1;

	if (!sorted_paths || !sorted_ranks)
		goto done;
	memcpy(sorted_paths, paths, n * sizeof *sorted_paths);
	memcpy(sorted_ranks, ranks, n * sizeof *sorted_ranks);
	sort_by_rank(sorted_paths, sorted_ranks, n);
	status = run_merge(out, sorted_paths, n);
	if (status != 0) {
		fprintf(stderr, "amptrace run: the ranks' traces were not "
			"merged; each is its own file\n");
		goto done;
	}
	if (quiet)
		goto done;
	fprintf(stderr, "amptrace run: rank%s ", n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%d", i ? ", " : "", sorted_ranks[i]);
	fprintf(stderr, " merged into %s (one process per rank; each rank "
		"alone: ", out);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", sorted_paths[i]);
	fputs(")\n", stderr);
done:
	free(sorted_paths);
	free(sorted_ranks);
	return status;
}

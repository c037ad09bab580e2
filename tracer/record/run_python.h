/* `amptrace run` on a Python program (run_python.c): arms the PyTorch
 * bridge through PYTHONPATH. */
#ifndef AMPTRACE_RUN_PYTHON_H
#define AMPTRACE_RUN_PYTHON_H

#include <stdbool.h>
#include <stddef.h>

/* Whether `path` names a Python interpreter: python, python3, python3.11
 * (any directory). */
bool run_is_python(const char *path);

/* Whether PROG runs Python: an interpreter, or a script whose shebang
 * starts one (found on PATH as execvp would: torchrun, accelerate,
 * lightning and any other console script of a Python environment). */
bool run_python_program(const char *prog);

/* In the child, before exec: when `command` runs Python (an interpreter
 * or a Python script, run_python_program),
 * puts the bridge's sitecustomize.py first on PYTHONPATH, or says on
 * stderr why the program cannot be recorded (-E/-I/-S, bridge not
 * built).  Does nothing for other programs. */
void run_python_prepare(char **command);

/* The one wording of the empty-trace failure of `amptrace run` and
 * `amptrace check`, written into buf.  `framework` is the producer's of
 * a process that was recorded (process.json's, the trace header's), NULL
 * when none was: then "no ops recorded: is PROG importing torch?" when
 * PROG is a Python interpreter, "... linked to libamp (dynamically)?" for
 * another program, and both questions when `prog` is NULL (not known);
 * else that PROG was recorded but ran no op (a program killed before its
 * first). */
const char *run_no_ops_message(const char *prog, const char *framework,
			       char *buf, size_t size);

/* `amptrace run`'s own, which knows the command and what its processes
 * said (`framework`, as above): for a Python interpreter that recorded
 * no process, which of its script missing, -E, -I or -S keeping the
 * bridge out, an interpreter without torch, a program that never
 * imported it; else run_no_ops_message's. */
const char *run_no_ops_why(char **command, const char *framework, char *buf,
			   size_t size);

#endif /* AMPTRACE_RUN_PYTHON_H */

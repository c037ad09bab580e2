/* `amptrace run` on a Python program (run_python.c): arms the PyTorch
 * bridge through PYTHONPATH. */
#ifndef AMPTRACE_RUN_PYTHON_H
#define AMPTRACE_RUN_PYTHON_H

/* In the child, before exec: when `command` runs a Python interpreter,
 * puts the bridge's sitecustomize.py first on PYTHONPATH, or says on
 * stderr why the program cannot be recorded (-E/-I/-S, bridge not
 * built).  Does nothing for other programs. */
void run_python_prepare(char **command);

#endif /* AMPTRACE_RUN_PYTHON_H */

/* The recorder: subscribes to libamp's hook API and streams every event
 * into the raw directory (raw.h), one MAP_SHARED file per thread, with no
 * lock and no system call on the hot path.  Built as
 * libamptrace-recorder.so, which `amptrace run` preloads into the program
 * (LD_PRELOAD) with AMPTRACE_RAW_DIR set: its constructor attaches.  The
 * same source is linked into the recorder benchmark, which attaches by
 * calling recorder_attach() itself. */
#ifndef AMPTRACE_RECORDER_H
#define AMPTRACE_RECORDER_H

/* Starts recording this process into `raw_dir`.  Returns 0, or -1 when
 * libamp is not loaded or the directory cannot be written (a message went
 * to stderr). */
int recorder_attach(const char *raw_dir);
/* Stops recording (events after this are not recorded). */
void recorder_detach(void);

/* recorder_exit.c: the recorder's _exit marks the exit of each producer
 * of the process that added its mark here (producer.c does, through
 * dlsym, so a producer without the recorder needs none). */
void amptrace_exit_mark_add(void (*mark)(void));

#endif /* AMPTRACE_RECORDER_H */

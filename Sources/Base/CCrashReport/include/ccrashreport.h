/* A last word from a process that crashes: which signal, in which thread, written to stderr (a sandbox
 * process's log) before the default action ends the process. In C because a signal handler may call only
 * async-signal-safe functions. */
#ifndef LINKCOND_CCRASHREPORT_H
#define LINKCOND_CCRASHREPORT_H

/* Installs handlers for SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE and SIGSEGV that write
 * "<prefix>crashed: signal SIGILL (a trap: an arithmetic overflow or a failed check) in thread lc-uplink, pid 812"
 * to descriptor 2, then let the signal take its default action (the process ends, a core may be dumped).
 * `prefix` is copied (at most 63 bytes). Returns 0, or -1 with errno set. */
int lc_install_crash_report(const char *prefix);

#endif

#define _GNU_SOURCE
#include "ccrashreport.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static char report_prefix[64];

static size_t append(char *buffer, size_t used, size_t size, const char *text) {
    while (*text && used + 1 < size) buffer[used++] = *text++;
    return used;
}

static size_t append_number(char *buffer, size_t used, size_t size, long value) {
    char digits[24];
    int count = 0;
    if (value < 0) value = -value;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0 && count < 23);
    while (count > 0 && used + 1 < size) buffer[used++] = digits[--count];
    return used;
}

static const char *describe(int signal_number) {
    switch (signal_number) {
    case SIGILL: return "SIGILL (a trap: an arithmetic overflow or a failed check)";
    case SIGTRAP: return "SIGTRAP (a trap: a failed check)";
    case SIGABRT: return "SIGABRT (aborted: a fatal error)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGFPE: return "SIGFPE (an arithmetic error)";
    case SIGSEGV: return "SIGSEGV (a bad memory access)";
    default: return "?";
    }
}

static void report(int signal_number) {
    char line[256];
    char thread[17] = { 0 };
    size_t used = 0;
    used = append(line, used, sizeof(line), report_prefix);
    used = append(line, used, sizeof(line), "crashed: signal ");
    used = append(line, used, sizeof(line), describe(signal_number));
    if (prctl(PR_GET_NAME, (unsigned long)thread, 0, 0, 0) == 0) {
        used = append(line, used, sizeof(line), " in thread ");
        used = append(line, used, sizeof(line), thread);
    }
    used = append(line, used, sizeof(line), ", pid ");
    used = append_number(line, used, sizeof(line), (long)getpid());
    line[used++] = '\n';
    ssize_t ignored = write(2, line, used);
    (void)ignored;
    /* The default action, now: the process ends as it would have. */
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

int lc_install_crash_report(const char *prefix) {
    size_t length = strlen(prefix);
    if (length >= sizeof(report_prefix)) length = sizeof(report_prefix) - 1;
    memcpy(report_prefix, prefix, length);
    report_prefix[length] = 0;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = report;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    const int signals[] = { SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV };
    for (size_t index = 0; index < sizeof(signals) / sizeof(signals[0]); index++) {
        if (sigaction(signals[index], &action, NULL) != 0) return -1;
    }
    return 0;
}

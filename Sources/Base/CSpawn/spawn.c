#define _GNU_SOURCE
#include "cspawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct lc_report {
    int32_t step;
    int32_t error;
};

static void fail(int pipe_fd, int step) {
    struct lc_report report = { step, errno };
    ssize_t ignored = write(pipe_fd, &report, sizeof(report));
    (void)ignored;
    _exit(127);
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Marks every descriptor from 3 up close-on-exec (the report pipe is close-on-exec already). close_range(2)
 * does it in one call on Linux 5.11 and later; older kernels get a loop over the descriptor limit. */
static int cloexec_from_3(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return 0;
#endif
    struct rlimit limit;
    long top = 4096;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && (long)limit.rlim_cur < 1L << 20)
        top = (long)limit.rlim_cur;
    for (long fd = 3; fd < top; fd++) {
        int flags = fcntl((int)fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC) && fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC) < 0) return -1;
    }
    return 0;
}

/* Where a supervising process passes the signals it gets: the namespace's pid 1 from outside, every
 * process of the namespace (kill(-1)) from its pid 1. */
static volatile pid_t forward_to = 0;

static void forward_signal(int signal_number) {
    if (forward_to != 0) kill(forward_to, signal_number);
}

static void forward_signals(pid_t target) {
    forward_to = target;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = forward_signal;
    sigemptyset(&action.sa_mask);
    const int signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
    for (size_t index = 0; index < sizeof(signals) / sizeof(signals[0]); index++) sigaction(signals[index], &action, NULL);
}

/* Waits for `pid` and exits as it did (128 + the signal for a signal). Children other than `pid` are
 * reaped on the way (pid 1 of a namespace inherits the namespace's orphans). */
static void exit_with(pid_t pid) {
    for (;;) {
        int status;
        pid_t ended = waitpid(-1, &status, 0);
        if (ended < 0) {
            if (errno == EINTR) continue;
            _exit(127);
        }
        if (ended != pid) continue;
        if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
        if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
    }
}

/* After unshare(CLONE_NEWPID): the calling process stays outside and supervises; its first child is pid 1
 * of the new namespace and supervises the program, which it runs as pid 2. Returns only in pid 2, which
 * then execs. Every step here is async-signal-safe (fork, sigaction, waitpid, kill, prctl, _exit). */
static void supervise(const struct lc_spawn_request *r, int report_fd) {
    pid_t init = fork();
    if (init < 0) fail(report_fd, LC_SPAWN_FORK);
    if (init > 0) {
        /* Outside: pass signals to pid 1, exit as it does. The report pipe stays with the program. */
        close(report_fd);
        forward_signals(init);
        exit_with(init);
    }
    /* pid 1: dies when the supervisor outside dies, however it dies, and the kernel then kills the rest.
     * (Its parent is outside the namespace, so getppid() reads 0 here and cannot tell whether the
     * supervisor died before this line; it is killed only by a signal, which it forwards, or by SIGKILL
     * from whoever ends the run — in the moment between fork and prctl, that leaves pid 1 running until
     * the program ends.) */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pid_t program = fork();
    if (program < 0) fail(report_fd, LC_SPAWN_FORK);
    if (program > 0) {
        close(report_fd);
        forward_signals(-1);
        exit_with(program);
    }
    /* pid 2: the program. Default signal dispositions again (the supervisors' handlers do not survive
     * execve anyway, but a failing exec must not forward). */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
}

static void child(const struct lc_spawn_request *r, int report_fd) {
    /* The parent may ignore SIGINT/SIGPIPE while it waits; ignored signals survive execve. */
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (r->new_session && setsid() < 0) fail(report_fd, LC_SPAWN_SETSID);
    if (!r->new_session && r->new_process_group && setpgid(0, 0) < 0) fail(report_fd, LC_SPAWN_PROCESS_GROUP);
    if (r->stdin_fd >= 0 && dup2(r->stdin_fd, 0) < 0) fail(report_fd, LC_SPAWN_STDIO);
    if (r->stdout_fd >= 0 && dup2(r->stdout_fd, 1) < 0) fail(report_fd, LC_SPAWN_STDIO);
    if (r->stderr_fd >= 0 && dup2(r->stderr_fd, 2) < 0) fail(report_fd, LC_SPAWN_STDIO);
    if (cloexec_from_3() < 0) fail(report_fd, LC_SPAWN_CLOSE_FDS);

    if (r->netns_path) {
        int fd = open(r->netns_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail(report_fd, LC_SPAWN_OPEN_NETNS);
        if (setns(fd, CLONE_NEWNET) < 0) fail(report_fd, LC_SPAWN_SETNS);
        close(fd);
    }
    if (r->sysfs_name || r->bind_count > 0) {
        /* A private mount namespace, so the binds below are seen by this process tree only. */
        if (unshare(CLONE_NEWNS) < 0) fail(report_fd, LC_SPAWN_UNSHARE_MOUNTS);
        if (mount("", "/", "none", MS_SLAVE | MS_REC, NULL) < 0) fail(report_fd, LC_SPAWN_MAKE_SLAVE);
        if (r->sysfs_name) {
            /* /sys must show this namespace's devices; best effort, as in `ip netns exec`. */
            if (umount2("/sys", MNT_DETACH) == 0) {
                if (mount(r->sysfs_name, "/sys", "sysfs", 0, NULL) < 0) {
                    /* keep going without a private /sys */
                }
            }
        }
        for (int i = 0; i < r->bind_count; i++) {
            if (mount(r->bind_sources[i], r->bind_targets[i], "none", MS_BIND, NULL) < 0)
                fail(report_fd, LC_SPAWN_BIND_ETC);
        }
    }
    if (r->working_directory && chdir(r->working_directory) < 0) fail(report_fd, LC_SPAWN_CHDIR);
    if (r->own_pid_namespace) {
        if (unshare(CLONE_NEWPID) < 0) fail(report_fd, LC_SPAWN_PID_NAMESPACE);
        supervise(r, report_fd);
    }
    execve(r->executable, r->argv, r->envp);
    fail(report_fd, LC_SPAWN_EXEC);
}

int lc_spawn(const struct lc_spawn_request *request, pid_t *pid, int *failed_step) {
    int pipe_fds[2];
    *failed_step = LC_SPAWN_OK;
    if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
        *failed_step = LC_SPAWN_FORK;
        return errno;
    }
    pid_t child_pid = fork();
    if (child_pid < 0) {
        int saved = errno;
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        *failed_step = LC_SPAWN_FORK;
        return saved;
    }
    if (child_pid == 0) {
        close(pipe_fds[0]);
        child(request, pipe_fds[1]);
        _exit(127);
    }
    /* Also from the parent, so the group exists before anyone signals it (the child may not have run yet). */
    if (request->new_process_group && !request->new_session) setpgid(child_pid, child_pid);
    close(pipe_fds[1]);
    struct lc_report report;
    ssize_t got;
    do {
        got = read(pipe_fds[0], &report, sizeof(report));
    } while (got < 0 && errno == EINTR);
    close(pipe_fds[0]);
    if (got == (ssize_t)sizeof(report)) {
        /* The child failed before execve: reap it and report where. */
        int status;
        while (waitpid(child_pid, &status, 0) < 0 && errno == EINTR) {}
        *failed_step = report.step;
        return report.error;
    }
    /* EOF: the close-on-exec pipe closed, so execve succeeded. */
    *pid = child_pid;
    return 0;
}

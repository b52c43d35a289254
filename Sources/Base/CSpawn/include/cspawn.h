/* Starting a process inside a named network namespace, the way `ip netns exec` does.
 *
 * This lives in C because everything between fork() and execve() must be async-signal-safe: the child of
 * a multithreaded process may call only plain system calls, never the Swift runtime or malloc. */
#ifndef LINKCOND_CSPAWN_H
#define LINKCOND_CSPAWN_H

#include <sys/types.h>

/* Where the child failed, reported back to the parent together with errno. */
enum lc_spawn_step {
    LC_SPAWN_OK = 0,
    LC_SPAWN_FORK = 1,
    LC_SPAWN_OPEN_NETNS = 2,
    LC_SPAWN_SETNS = 3,
    LC_SPAWN_UNSHARE_MOUNTS = 4,
    LC_SPAWN_MAKE_SLAVE = 5,
    LC_SPAWN_BIND_ETC = 6,
    LC_SPAWN_STDIO = 7,
    LC_SPAWN_SETSID = 8,
    LC_SPAWN_CHDIR = 9,
    LC_SPAWN_EXEC = 10,
    LC_SPAWN_PROCESS_GROUP = 11,
    LC_SPAWN_CLOSE_FDS = 12,
    LC_SPAWN_PID_NAMESPACE = 13,
};

struct lc_spawn_request {
    const char *netns_path;          /* /run/netns/NAME, or NULL to stay in the caller's namespace */
    const char *sysfs_name;          /* source name for the private /sys mount, or NULL to keep /sys */
    const char *const *bind_sources; /* /etc/netns/NAME/resolv.conf ... */
    const char *const *bind_targets; /* /etc/resolv.conf ... */
    int bind_count;
    const char *executable;          /* absolute path */
    char *const *argv;               /* NULL-terminated */
    char *const *envp;               /* NULL-terminated */
    int stdin_fd, stdout_fd, stderr_fd; /* -1: inherit */
    int new_session;                 /* setsid() in the child (detach from the terminal) */
    int new_process_group;           /* setpgid(0, 0) in the child, so the caller can end the whole group */
    const char *working_directory;   /* NULL: inherit */
    int own_pid_namespace;           /* run the program in a PID namespace of its own (see lc_spawn) */
};

/* Forks and execs. The child keeps only descriptors 0, 1 and 2: every other one is marked close-on-exec
 * before execve, whoever opened it and however, so a spawned process never holds the caller's sockets. On
 * success returns 0 and stores the child's pid. On failure returns the errno and stores the step that
 * failed in *failed_step; the child (if any) has been reaped.
 *
 * With own_pid_namespace the returned child stays in the caller's PID namespace and starts a new one
 * whose first process (pid 1, a small reaper of this file's) runs the program as pid 2. Whatever the
 * program starts — in the background, with setsid, daemonized — lives in that namespace and ends with it:
 * when the program ends, when the returned child is signalled (SIGTERM, SIGINT, SIGHUP, SIGQUIT are passed
 * on to every process in the namespace), or when the returned child is killed (the namespace's pid 1 dies
 * with it, and the kernel kills every process left in the namespace). The returned child exits with the
 * program's status (128 + the signal when a signal ended it). */
int lc_spawn(const struct lc_spawn_request *request, pid_t *pid, int *failed_step);

#endif
